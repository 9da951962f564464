// libFuzzer target: any bytes through the model-file reader (fuzz_model.hpp).
#include "fuzz_model.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (!attn::fuzz::exercise_model_file(data, size)) __builtin_trap();
    return 0;
}
