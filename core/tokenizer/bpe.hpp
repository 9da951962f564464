#pragma once
// GPT-2's byte-level BPE tokenizer, as OpenAI's encoder.py and Hugging Face's GPT2Tokenizer
// run it:
//   1. the text (UTF-8; invalid sequences replaced by U+FFFD first) is split into words by
//        's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//      so a word carries its leading space: "the cat" → "the", " cat";
//   2. each byte of a word becomes one symbol through bytes_to_unicode (printable bytes are
//      themselves, the 68 others U+0100… in order: a space is "Ġ", a newline "Ċ");
//   3. the adjacent pair of lowest merge rank is merged everywhere in the word, left to right,
//      and again, until no pair has a rank;
//   4. each symbol is looked up in the vocabulary.
// Every one of the 256 byte symbols must be in the vocabulary, so every text encodes, and
// decode(encode(text)) == text for valid UTF-8.
#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace attn::tok {

// A code point as UTF-8 (1 to 4 bytes).
std::string utf8_of(std::uint32_t code_point);

// The UTF-8 text of byte b's symbol: "!" for '!', "Ġ" (U+0120) for ' ', "Ā" (U+0100) for 0x00.
const std::array<std::string, 256>& bytes_to_unicode();
// The byte of a symbol's code point, or −1 for a code point that is no byte's symbol.
int unicode_to_byte(std::uint32_t code_point);

// Step 1 alone: the words of text (invalid UTF-8 replaced by U+FFFD), in order; their
// concatenation is the (repaired) text.
std::vector<std::string> split_words(const std::string& text);

class ByteLevelBpe {
public:
    // The 256 byte symbols as ids 0…255 (in GPT-2's order: '!'…'~', '¡'…'¬', '®'…'ÿ', then the
    // other bytes from 0x00 up) and no merges: every byte is one token.
    ByteLevelBpe();

    // vocab.json ({"token": id, …}) and merges.txt ("#version: …" optionally, then "left right"
    // per line, best first). vocab_size, when given, bounds the ids (the embedding's rows).
    // nullopt with "FILE: …" messages naming the key or the line on any fault.
    static std::optional<ByteLevelBpe> load(const std::string& vocab_path, const std::string& merges_path,
                                         std::vector<std::string>& errors, std::optional<int> vocab_size = std::nullopt);
    static std::optional<ByteLevelBpe> from_text(const std::string& vocab_json, const std::string& merges_text,
                                              const std::string& vocab_source, const std::string& merges_source,
                                              std::vector<std::string>& errors, std::optional<int> vocab_size = std::nullopt);
    // A small tokenizer for tests: the 256 byte symbols as ids 0…255 as in ByteLevelBpe(), then
    // each merge's result, in merge order, as the next id (a result already there keeps its id).
    // Merges are pairs of token strings, "Ġ" and "t" → "Ġt".
    static std::optional<ByteLevelBpe> from_merges(const std::vector<std::pair<std::string, std::string>>& merges,
                                                std::vector<std::string>& errors);

    std::vector<int> encode(const std::string& text) const;
    // The bytes of the tokens, joined; ids outside the vocabulary are skipped. May be invalid
    // UTF-8 when a multi-byte character is split across a cut.
    std::string decode(const std::vector<int>& ids) const;

    // The vocabulary string, "Ġcat"; empty for an id the vocabulary does not use.
    const std::string& token(int id) const;
    std::optional<int> id(const std::string& token) const;
    // One more than the largest id: the rows an embedding for this vocabulary needs.
    int size() const { return static_cast<int>(tokens_.size()); }
    int merge_count() const { return static_cast<int>(merges_.size()); }
    // The merge of rank `rank` (0: the best), as the ids of its left and right tokens.
    std::pair<int, int> merge(int rank) const { return merges_[static_cast<std::size_t>(rank)]; }

    // The files again, as load reads them: vocab.json (ids in order) and merges.txt.
    std::string vocab_json() const;
    std::string merges_text() const;

private:
    struct Merge {
        int rank;
        int result;
    };
    struct Cache;
    struct Empty {};
    explicit ByteLevelBpe(Empty);

    std::vector<std::string> tokens_;                      // id → string; "" for an unused id
    std::vector<std::string> bytes_;                       // id → the bytes it stands for
    std::unordered_map<std::string, int> ids_;             // string → id
    std::array<int, 256> byte_ids_{};                      // byte → the id of its symbol
    std::vector<std::pair<int, int>> merges_;              // by rank: (left id, right id)
    std::unordered_map<std::uint64_t, Merge> merge_of_;    // (left id << 32 | right id) → rank and result
    std::shared_ptr<Cache> cache_;                         // word → ids; shared by copies, locked

    static std::optional<ByteLevelBpe> build(std::vector<std::pair<std::string, int>> vocabulary,
                                          const std::vector<std::pair<std::string, std::string>>& merges,
                                          const std::vector<int>& merge_lines, const std::string& vocab_source,
                                          const std::string& merges_source, std::vector<std::string>& errors,
                                          std::optional<int> vocab_size);
    void encode_word(const std::string& word, std::vector<int>& ids) const;
};

}  // namespace attn::tok
