#pragma once
// Text helpers the tokenizer.json pipeline shares: UTF-8 code points, the Unicode questions
// the Rust library asks of a character (through ICU), normalization forms (ICU), and regular
// expressions (PCRE2 with UTF + UCP) for the patterns the hub writes for Oniguruma.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace attn::tok {

// A text this tokenizer cannot encode, said rather than turned into plausible tokens: a
// pattern's match failed (PCRE2's match or depth limit), or a normalizer would multiply the
// text past its bound. The message names the component and the place in the text.
struct EncodeError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// What a tokenizer.json may make a text cost (docs/reliability.md).
// Normalizing makes at most kNormalizedGrowth times the text's bytes, plus kNormalizedSlack (a
// Prepend's word). Real normalizers stay far below: NFKD's longest expansion is 18 characters
// for one (about 11 times its bytes), Metaspace's "▁" 3 for 1. A Replace with an empty pattern
// and a long content would otherwise multiply the text without bound (10,000 bytes of content
// on 20 KB make 200 MB).
inline constexpr std::size_t kNormalizedGrowth = 32, kNormalizedSlack = 4096;
// The most WordPiece's max_input_chars_per_word may say: its search is quadratic in a word's
// length, and a longer word is one [UNK] before any search (the library's files say 100).
inline constexpr std::size_t kMaxWordPieceChars = 1000;

// [SECTION] UTF-8

// The code point at text[i] and its length in bytes; text must be valid UTF-8.
std::pair<char32_t, std::size_t> code_point_at(const std::string& text, std::size_t i);
void append_utf8(std::string& out, char32_t code_point);
std::size_t code_point_count(const std::string& text);
// The length of the well-formed UTF-8 sequence at text[i] (no overlong forms, no surrogates,
// at most U+10FFFF), or 0 when the bytes there are not one: text may be any bytes.
std::size_t utf8_length_at(const std::string& text, std::size_t i);
// Whether the bytes are whole characters of UTF-8 (a byte-level token may be part of one).
bool whole_characters(const std::string& bytes);

// [SECTION] A token's bytes, as a person reads them

// A token's bytes as the token strip and the predictions show them: whole characters as they
// are, a space as ␣, a newline as ↵, a tab as ⇥, and a byte that is no whole character or a
// control character that draws nothing as <0xNN>.
std::string piece_label(const std::string& piece);
// piece_label, and for a piece that is no whole characters what it does after `text_before`
// (the text the ids before it stand for): "<0xA9>, completes \"café\"" when it finishes the
// character the text leaves part-way (the word it completes: back to the space before it,
// through whole characters only), else for one byte its place in UTF-8 ("<0xC3>, the first
// byte of a character", "<0xA9>, part of a character", "<0xFF>, never part of UTF-8 text"), or
// where a longer piece breaks a character ("␣<0xE2> (ends part-way through a character)").
std::string piece_description(const std::string& piece, const std::string& text_before);

// [SECTION] Characters, as Rust's char methods and the tokenizers crate see them

bool is_white_space(char32_t c);       // char::is_whitespace: the White_Space property
bool is_alphanumeric(char32_t c);      // char::is_alphanumeric: Alphabetic or Numeric
bool is_numeric(char32_t c);           // char::is_numeric: general category N
bool is_punctuation(char32_t c);       // ASCII punctuation or general category P (BERT's rule)
bool is_other(char32_t c);             // general category C: Cc, Cf, Cs, Co, Cn
bool is_nonspacing_mark(char32_t c);   // Mn
bool is_mark(char32_t c);              // Mn, Mc, Me
bool is_word_char(char32_t c);         // regex \w (Rust's regex crate): Alphabetic, M, Nd, Pc, Join_Control
// Each character's full lowercase mapping, character by character (no final-sigma context),
// as Rust's char::to_lowercase.
std::string lowercase(const std::string& text);

enum class NormalForm { NFC, NFD, NFKC, NFKD };
std::string normalize(const std::string& text, NormalForm form);

// [SECTION] Regular expressions

// A pattern written for Oniguruma (the hub's regexes), compiled with PCRE2 in UTF + UCP mode.
// Oniguruma's \s is Unicode White_Space and its \w is Letter, Mark, Number and
// Connector_Punctuation; PCRE2's differ (its \s takes U+180E), so those escapes are
// rewritten as properties before compiling.
class Regex {
public:
    // Throws std::runtime_error naming the pattern and PCRE2's message when it does not compile.
    explicit Regex(const std::string& oniguruma_pattern);
    // A literal string, every character meant as itself.
    static Regex literal(const std::string& text);
    // The non-overlapping matches in text, left to right, as [begin, end) byte ranges; an empty
    // match moves the search on by one character. A match that fails (a match limit) throws
    // EncodeError with the pattern, the byte offset in text and PCRE2's message: the matches
    // after it are unknown, and "no more matches" would cut the text silently.
    std::vector<std::pair<std::size_t, std::size_t>> find_all(const std::string& text) const;
    // Every match replaced by content (content taken as it is: no group references). Throws
    // EncodeError, as find_all, and when the result would pass max_bytes.
    std::string replace_all(const std::string& text, const std::string& content, std::size_t max_bytes = SIZE_MAX) const;
    // The pattern as the file wrote it.
    const std::string& shown() const;

private:
    struct Compiled;
    Regex() = default;
    void compile(const std::string& pcre2_pattern, const std::string& shown);
    std::shared_ptr<const Compiled> compiled_;
};

// Oniguruma's pattern in PCRE2's words (exposed for tests).
std::string pcre2_pattern_of(const std::string& oniguruma_pattern);

}  // namespace attn::tok
