// libFuzzer target: any bytes as a safetensors file image (the header parser, every tensor
// read, what was read written again and re-read).
#include <cstddef>
#include <cstdint>

#include "fuzz_gpt2.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (!attn::fuzz::exercise_safetensors(data, size)) __builtin_trap();
    return 0;
}
