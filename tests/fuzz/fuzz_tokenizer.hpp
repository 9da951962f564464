#pragma once
// What the tokenizer.json fuzz target does with one input, shared with the regression replay
// in tests/test_tokenizer_json.cpp: a tokenizer.json and a text, separated by the byte 0x1E,
// through the loader and, when it loads, the encoder and every id's piece. A text that starts
// with the byte 0x1F is repeated to 16 KiB first: the normalizers, the pre-tokenizers' patterns
// and WordPiece on long texts, where a match limit, a growing Replace or a quadratic search
// shows. (16 KiB is 8 times the longest text taken as it is, and short enough that a pattern
// slow at every position stays inside the fuzzer's 10 s an input.)
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tokenizer/text.hpp"
#include "tokenizer/tokenizer_json.hpp"

namespace attn::fuzz {

// False when an invariant breaks: a refused file without a message, or an id no token has.
inline bool exercise_tokenizer(const std::uint8_t* data, std::size_t size) {
    const std::string input(reinterpret_cast<const char*>(data), size);
    const std::size_t separator = input.find('\x1E');
    const std::string file = input.substr(0, separator);
    std::string text = separator == std::string::npos ? std::string("Hello world, I'm caf\xC3\xA9 12345 <s>") : input.substr(separator + 1);
    if (text.size() > 2048) return true;   // keeps one input's work small
    if (!text.empty() && text[0] == '\x1F') {
        const std::string unit = text.substr(1).empty() ? std::string("a") : text.substr(1);
        text.clear();
        while (text.size() < (16u << 10)) text += unit;
    }
    std::vector<std::string> errors;
    const auto tokenizer = attn::tok::TokenizerJson::from_text(file, "tokenizer.json", errors);
    if (!tokenizer) return !errors.empty();
    try {
        for (const bool special : {true, false}) {
            const std::vector<int> ids = special ? tokenizer->encode(text) : tokenizer->encode_without_special_tokens(text);
            for (const int id : ids) {
                if (id < 0 || id >= tokenizer->size()) return false;
                (void)tokenizer->piece(id);
            }
        }
        (void)tokenizer->words(text);
        (void)tokenizer->normalized(text);
    } catch (const attn::tok::EncodeError& e) {   // a text refused is fine, said
        return std::string(e.what()).size() > 0;
    }
    return true;
}

}  // namespace attn::fuzz
