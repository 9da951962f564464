#pragma once
// What the GPT-2 fuzz targets run on one input, shared with the core test that replays
// tests/fuzz/regressions/{safetensors,bpe}/. Each returns false when the code under test
// contradicts itself (the fuzz targets trap on it); nothing may crash or trip a sanitizer.
#include <cstddef>
#include <cstdint>
#include <algorithm>
#include <cstring>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "tokenizer/bpe.hpp"
#include "tokenizer/text.hpp"  // piece_description
#include "tensor/safetensors.hpp"
#include "io/messages.hpp"   // valid_utf8

namespace attn::fuzz {

// Any bytes as a safetensors file: the header checks, then every tensor read. A tensor of
// F32, F16 or BF16 must read; any other must be refused with a message; what was read is
// written again as F32 and must read back bit for bit.
inline bool exercise_safetensors(const std::uint8_t* data, std::size_t size) {
    std::vector<std::string> errors;
    const auto file = safetensors::SafetensorsFile::from_memory(data, size, "fuzz.safetensors", errors);
    if (!file) return !errors.empty();
    const std::vector<std::string> names = file->names();
    // A file that opens has tensors that tile its data section: sorted by offset, each
    // begins where the one before ended, none shares a byte, and the last ends at the end.
    std::vector<std::pair<std::uint64_t, std::uint64_t>> ranges;
    for (const auto& name : names)
        if (const safetensors::TensorInfo* info = file->info(name); info && info->end > info->begin) ranges.emplace_back(info->begin, info->end);
    std::sort(ranges.begin(), ranges.end());
    std::uint64_t covered = 0;
    for (const auto& [begin, end] : ranges) {
        if (begin != covered) return false;
        covered = end;
    }
    if (covered != size - file->data_start()) return false;
    std::vector<std::vector<float>> values(names.size());   // sized once: the tensors below point into them
    std::vector<safetensors::NamedTensor> tensors;
    std::uint64_t total = 0;
    for (std::size_t i = 0; i < names.size(); ++i) {
        const safetensors::TensorInfo* info = file->info(names[i]);
        if (!info) return false;
        errors.clear();
        const bool read = file->read(names[i], values[i], errors);
        if (read != info->floating.has_value() || (!read && errors.empty())) return false;
        if (read && values[i].size() != info->element_count) return false;
        total += info->element_count;
        if (read && total <= (1u << 20)) tensors.push_back({names[i], info->shape, values[i].data()});
    }
    std::string error;
    const auto bytes = safetensors::safetensors_bytes(tensors, file->metadata(), safetensors::Dtype::F32, &error);
    if (bytes.empty()) return !error.empty();   // e.g. a name that is not UTF-8
    const auto again = safetensors::SafetensorsFile::from_memory(bytes.data(), bytes.size(), "again.safetensors", errors);
    if (!again) return false;
    std::vector<float> back;
    for (const auto& t : tensors) {
        if (!again->read(t.name, back, errors)) return false;
        if (back.size() != again->info(t.name)->element_count) return false;
        for (std::size_t i = 0; i < back.size(); ++i)
            if (std::memcmp(&back[i], &t.values[i], 4) != 0) return false;
    }
    return true;
}

// GPT-2's bpe() from encoder.py, line for line, on strings: the reference the tokenizer's
// heap must agree with.
inline std::vector<std::string> reference_bpe(std::vector<std::string> word,
                                              const std::map<std::pair<std::string, std::string>, int>& ranks) {
    while (word.size() > 1) {
        int best = -1;
        std::pair<std::string, std::string> bigram;
        for (std::size_t i = 0; i + 1 < word.size(); ++i) {
            const auto it = ranks.find({word[i], word[i + 1]});
            if (it != ranks.end() && (best < 0 || it->second < best)) {
                best = it->second;
                bigram = it->first;
            }
        }
        if (best < 0) break;
        std::vector<std::string> merged;
        std::size_t i = 0;
        while (i < word.size()) {
            std::size_t j = i;
            while (j < word.size() && word[j] != bigram.first) ++j;
            merged.insert(merged.end(), word.begin() + static_cast<std::ptrdiff_t>(i), word.begin() + static_cast<std::ptrdiff_t>(j));
            if (j == word.size()) break;
            i = j;
            if (i + 1 < word.size() && word[i + 1] == bigram.second) {
                merged.push_back(bigram.first + bigram.second);
                i += 2;
            } else {
                merged.push_back(word[i]);
                i += 1;
            }
        }
        word = merged;
    }
    return word;
}

// The input is vocab.json, merges.txt and a text, separated by the byte 0x1E. The files are
// loaded (most inputs are refused, with messages); a tokenizer that loads must give back the
// text it encodes. Then the merges' lines alone make a tokenizer over the 256 byte symbols,
// whose every word must split as GPT-2's bpe() splits it.
inline bool exercise_bpe(const std::uint8_t* data, std::size_t size) {
    const std::string input(reinterpret_cast<const char*>(data), size);
    std::vector<std::string> parts(3);
    std::size_t part = 0;
    for (const char c : input) {
        if (c == '\x1E' && part < 2) ++part;
        else parts[part] += c;
    }
    const std::string& text = parts[2];
    std::vector<std::string> errors;
    const auto loaded = tok::ByteLevelBpe::from_text(parts[0], parts[1], "vocab.json", "merges.txt", errors, 100000);
    if (!loaded && errors.empty()) return false;
    if (loaded) {
        const std::vector<int> ids = loaded->encode(text);
        if (loaded->decode(ids) != valid_utf8(text)) return false;
        std::string before;  // the text before each token (its last 64 bytes: enough for a word)
        for (const int id : ids) {
            const std::string piece = loaded->decode({id});
            (void)tok::piece_description(piece, before);
            before = (before + piece).substr(before.size() + piece.size() > 64 ? before.size() + piece.size() - 64 : 0);
        }
        (void)tok::ByteLevelBpe::from_text(loaded->vocab_json(), loaded->merges_text(), "v", "m", errors);
    }

    std::vector<std::pair<std::string, std::string>> merges;
    std::map<std::pair<std::string, std::string>, int> ranks;
    std::size_t start = 0;
    while (start < parts[1].size() && merges.size() < 64) {
        std::size_t end = parts[1].find('\n', start);
        if (end == std::string::npos) end = parts[1].size();
        const std::string line = parts[1].substr(start, end - start);
        start = end + 1;
        const std::size_t space = line.find(' ');
        if (space == std::string::npos || space == 0 || space + 1 == line.size()) continue;
        std::pair<std::string, std::string> merge{line.substr(0, space), line.substr(space + 1)};
        if (merge.second.find_first_of(" \r") != std::string::npos || ranks.count(merge)) continue;
        ranks.emplace(merge, static_cast<int>(merges.size()));
        merges.push_back(std::move(merge));
    }
    const auto small = tok::ByteLevelBpe::from_merges(merges, errors);
    if (!small) return true;   // a piece that is not UTF-8: refused, with a message
    const auto& symbols = tok::bytes_to_unicode();
    for (const std::string& word : tok::split_words(text.substr(0, 4096))) {
        if (word.size() > 64) continue;
        std::vector<std::string> start_symbols;
        for (const unsigned char c : word) start_symbols.push_back(symbols[c]);
        std::vector<std::string> pieces;
        for (const int id : small->encode(word)) pieces.push_back(small->token(id));
        if (pieces != reference_bpe(start_symbols, ranks)) return false;
    }
    return true;
}

}  // namespace attn::fuzz
