// libFuzzer target: a tokenizer.json and a text, separated by the byte 0x1E, through the
// loader, the encoder and the pieces (tests/fuzz/fuzz_tokenizer.hpp).
#include <cstddef>
#include <cstdint>

#include "fuzz_tokenizer.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (!attn::fuzz::exercise_tokenizer(data, size)) __builtin_trap();
    return 0;
}
