#pragma once
// The components of a tokenizer.json, as read from the file (tokenizer_json.cpp reads them;
// components.cpp and models.cpp run them). Internal to core/tokenizer.
#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "tokenizer/text.hpp"

namespace attn::tok {

// A file this reader will not take: "JSON.PATH: what" (the file's name is put before it).
struct Refusal : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// [SECTION] Normalizers: text → text

struct Normalizer {
    std::string where;   // "normalizer.normalizers[2] (Replace)": named in messages
    virtual ~Normalizer() = default;
    // Throws EncodeError when the text cannot be normalized within the bound.
    virtual std::string normalize(const std::string& text) const = 0;
};

// [SECTION] Pre-tokenizers: pieces → smaller pieces

// A piece of the text on its way to the model. at_text_start: it begins where the text
// begins (Metaspace's prepend_scheme "first" asks).
struct Piece {
    std::string text;
    bool at_text_start = false;
};

struct PreTokenizer {
    virtual ~PreTokenizer() = default;
    virtual void split(std::vector<Piece>& pieces) const = 0;
};

// How the pieces a pattern finds are kept (the library's SplitDelimiterBehavior).
enum class Behavior { Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous };

// A match list covering text: [begin, end) ranges, each a match or not.
struct Span {
    std::size_t begin, end;
    bool is_match;
};
// The matches of ranges turned into the spans between and on them (the library's find_matches).
std::vector<Span> spans_of(const std::vector<std::pair<std::size_t, std::size_t>>& matches, std::size_t length);
// Characters for which is_match holds, each its own match.
std::vector<Span> character_spans(const std::string& text, const std::function<bool(char32_t)>& is_match);
// Each piece cut where the spans say, kept as behavior says; empty pieces dropped.
void split_pieces(std::vector<Piece>& pieces, Behavior behavior, bool invert,
                  const std::function<std::vector<Span>(const std::string&)>& find);

// [SECTION] Models: a word → ids

struct Model {
    virtual ~Model() = default;
    virtual void tokenize(const std::string& word, std::vector<int>& ids) const = 0;
};

struct BpeModel final : Model {
    struct Merge {
        std::uint32_t rank;
        int result;
    };
    std::unordered_map<std::string, int> vocab;
    std::unordered_map<std::uint64_t, Merge> merges;   // (left id << 32 | right id) → rank and result
    std::optional<int> unk_id;
    bool fuse_unk = false;
    bool byte_fallback = false;
    bool ignore_merges = false;
    std::string continuing_subword_prefix, end_of_word_suffix;
    std::array<int, 256> byte_fallback_ids{};   // "<0x41>" → its id, or −1

    void tokenize(const std::string& word, std::vector<int>& ids) const override;
};

struct WordPieceModel final : Model {
    std::unordered_map<std::string, int> vocab;
    int unk_id = 0;
    std::string continuing_subword_prefix = "##";
    std::size_t max_input_chars_per_word = 100;   // at most kMaxWordPieceChars
    std::size_t longest_entry_bytes = 0;          // of the vocabulary, "##" included where it is

    void tokenize(const std::string& word, std::vector<int>& ids) const override;
};

// [SECTION] Added tokens

struct AddedToken {
    std::string content;
    int id = 0;
    bool special = false, single_word = false, lstrip = false, rstrip = false, normalized = false;
};

// Finds added tokens in a text: leftmost first, then longest (a byte trie).
class AddedTokenMatcher {
public:
    void add(const std::string& content, int token_index);
    bool empty() const { return nodes_.size() <= 1; }
    // The longest token starting at text[at]: (token index, length), or index −1.
    std::pair<int, std::size_t> longest_at(const std::string& text, std::size_t at) const;

private:
    struct Node {
        std::unordered_map<unsigned char, int> next;
        int token = -1;
    };
    std::vector<Node> nodes_{1};
};

// [SECTION] Post-processors: ids → ids with the special tokens

struct PostProcessor {
    virtual ~PostProcessor() = default;
    virtual std::vector<int> process(std::vector<int> ids) const = 0;
};

// A template: special ids before, the sequence, special ids after.
struct TemplatePost final : PostProcessor {
    struct Item {
        bool is_sequence;
        std::vector<int> ids;   // the special token's ids
    };
    std::vector<Item> items;
    std::vector<int> process(std::vector<int> ids) const override;
};

struct SequencePost final : PostProcessor {
    std::vector<std::unique_ptr<PostProcessor>> processors;
    std::vector<int> process(std::vector<int> ids) const override;
};

// [SECTION] The whole

enum class PieceStyle { ByteLevel, Metaspace, WordPiece };

struct Pipeline {
    std::vector<std::unique_ptr<Normalizer>> normalizers;       // in order; none for null
    std::vector<std::unique_ptr<PreTokenizer>> pre_tokenizers;  // in order; none for null
    std::unique_ptr<Model> model;
    std::vector<std::unique_ptr<PostProcessor>> post_processors;

    std::vector<AddedToken> added;
    AddedTokenMatcher raw_matcher;         // tokens with normalized: false, found in the raw text
    AddedTokenMatcher normalized_matcher;  // tokens with normalized: true, found after normalization

    std::vector<std::string> tokens;       // id → the vocabulary's string; "" for no token
    std::vector<char> special;             // id → 1 for a special added token
    std::unordered_map<std::string, int> ids;
    PieceStyle style = PieceStyle::Metaspace;
    std::string metaspace = "\xE2\x96\x81";   // ▁
    std::string subword_prefix = "##";
    bool byte_fallback = false;

    std::string normalize(const std::string& text) const;
    // Runs the pipeline up to the model: on_added(token index) for each added token found,
    // on_word(word) for each word the model is to read, in the text's order.
    void pre_tokenize(const std::string& text, const std::function<void(int)>& on_added,
                      const std::function<void(const std::string&)>& on_word) const;
    std::vector<int> encode(const std::string& text, bool add_special_tokens) const;
};

}  // namespace attn::tok
