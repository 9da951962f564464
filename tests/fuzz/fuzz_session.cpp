// libFuzzer target: any bytes through the session reader, and the models a session
// references restored as the window restores them (fuzz_session.hpp).
#include "fuzz_session.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (!attn::fuzz::exercise_session(data, size)) __builtin_trap();
    return 0;
}
