// libFuzzer target: vocab.json, merges.txt and a text, separated by the byte 0x1E, through
// the tokenizer's loaders and its encoder (checked against GPT-2's bpe()).
#include <cstddef>
#include <cstdint>

#include "fuzz_gpt2.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (!attn::fuzz::exercise_bpe(data, size)) __builtin_trap();
    return 0;
}
