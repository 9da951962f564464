// Text helpers for the tokenizer.json pipeline.
//
// [SECTION] UTF-8
// [SECTION] A token's bytes, as a person reads them
// [SECTION] Characters (ICU)
// [SECTION] Normalization forms (ICU)
// [SECTION] Regular expressions (PCRE2)
#include "tokenizer/text.hpp"

#include "tokenizer/bpe.hpp"
#include "io/messages.hpp"

#include <cctype>
#include <cstdio>
#include <stdexcept>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <unicode/uchar.h>
#include <unicode/unorm2.h>
#include <unicode/ustring.h>

namespace attn::tok {

// [SECTION] UTF-8

std::pair<char32_t, std::size_t> code_point_at(const std::string& text, std::size_t i) {
    const auto* p = reinterpret_cast<const unsigned char*>(text.data()) + i;
    const std::size_t left = text.size() - i;
    if (p[0] < 0x80 || left < 2) return {p[0], 1};
    if ((p[0] >> 5) == 0x6) return {((p[0] & 0x1Fu) << 6) | (p[1] & 0x3Fu), 2};
    if ((p[0] >> 4) == 0xE && left >= 3) return {((p[0] & 0x0Fu) << 12) | ((p[1] & 0x3Fu) << 6) | (p[2] & 0x3Fu), 3};
    if (left >= 4) return {((p[0] & 0x07u) << 18) | ((p[1] & 0x3Fu) << 12) | ((p[2] & 0x3Fu) << 6) | (p[3] & 0x3Fu), 4};
    return {p[0], 1};   // not reached for valid UTF-8
}

void append_utf8(std::string& out, char32_t cp) { out += utf8_of(static_cast<std::uint32_t>(cp)); }

std::size_t code_point_count(const std::string& text) {
    std::size_t n = 0;
    for (const char c : text) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
    return n;
}

namespace {

// The bytes of the character a byte leads, as its high bits announce: 1 to 4; 0 for a
// continuation byte or 0xF8 and above.
std::size_t lead_length(unsigned char c) { return c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0; }

}  // namespace

std::size_t utf8_length_at(const std::string& text, std::size_t i) {
    const auto* p = reinterpret_cast<const unsigned char*>(text.data());
    const std::size_t n = text.size();
    const unsigned char c = p[i];
    const std::size_t length = lead_length(c);
    if (length == 0 || i + length > n || (length == 2 && c < 0xC2)) return 0;
    for (std::size_t k = 1; k < length; ++k)
        if ((p[i + k] & 0xC0) != 0x80) return 0;
    if (length == 3) {
        const unsigned cp = ((c & 0x0Fu) << 12) | ((p[i + 1] & 0x3Fu) << 6) | (p[i + 2] & 0x3Fu);
        if (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
    }
    if (length == 4) {
        const unsigned cp = ((c & 0x07u) << 18) | ((p[i + 1] & 0x3Fu) << 12) | ((p[i + 2] & 0x3Fu) << 6) | (p[i + 3] & 0x3Fu);
        if (cp < 0x10000 || cp > 0x10FFFF) return 0;
    }
    return length;
}

// [SECTION] A token's bytes, as a person reads them

namespace {

// The bytes of `piece` from its start that are whole characters.
std::size_t whole_prefix(const std::string& piece) {
    std::size_t whole = 0;
    while (whole < piece.size()) {
        const std::size_t n = utf8_length_at(piece, whole);
        if (n == 0) break;
        whole += n;
    }
    return whole;
}

std::string byte_label(unsigned char c) {
    char hex[8];
    std::snprintf(hex, sizeof hex, "<0x%02X>", static_cast<unsigned>(c));
    return hex;
}

bool word_break(char c) { return c == ' ' || c == '\n' || c == '\t'; }

// Where `text` leaves a character part-way: a lead byte within its last three, only
// continuation bytes after it, fewer than the lead announces; text.size() when it does not.
std::size_t open_character(const std::string& text) {
    for (std::size_t back = 1; back <= 3 && back <= text.size(); ++back) {
        const unsigned char c = static_cast<unsigned char>(text[text.size() - back]);
        if ((c & 0xC0) == 0x80) continue;
        return lead_length(c) > back ? text.size() - back : text.size();
    }
    return text.size();
}

}  // namespace

bool whole_characters(const std::string& bytes) { return whole_prefix(bytes) == bytes.size(); }

std::string piece_label(const std::string& piece) {
    std::string label;
    for (std::size_t i = 0; i < piece.size();) {
        const std::size_t n = utf8_length_at(piece, i);
        const unsigned char c = static_cast<unsigned char>(piece[i]);
        if (n == 0 || (n == 1 && (c < 0x20 || c == 0x7F) && c != '\n' && c != '\t')) {
            label += byte_label(c);  // a byte of a character another token completes, or one that draws nothing
            ++i;
            continue;
        }
        if (c == ' ') label += "\xE2\x90\xA3";       // ␣
        else if (c == '\n') label += "\xE2\x86\xB5";  // ↵
        else if (c == '\t') label += "\xE2\x87\xA5";  // ⇥
        else label.append(piece, i, n);
        i += n;
    }
    return label;
}

std::string piece_description(const std::string& piece, const std::string& text_before) {
    const std::string label = piece_label(piece);
    const std::size_t whole = whole_prefix(piece);
    if (whole == piece.size()) return label;
    const std::size_t start = open_character(text_before);
    const std::string joined = text_before + piece;
    const std::size_t length = start < text_before.size() ? utf8_length_at(joined, start) : 0;
    if (length > 0) {
        // The word it completes: back to the space before the character (through whole
        // characters only), on through the piece's whole characters after it.
        std::size_t begin = start;
        while (begin > 0 && !word_break(joined[begin - 1])) --begin;
        for (std::size_t i = begin; i < start;) {
            const std::size_t n = utf8_length_at(joined, i);
            if (n == 0) {
                begin = start;
                break;
            }
            i += n;
        }
        std::size_t end = start + length;
        while (end < joined.size() && !word_break(joined[end])) {
            const std::size_t n = utf8_length_at(joined, end);
            if (n == 0) break;
            end += n;
        }
        return label + ", completes \"" + joined.substr(begin, end - begin) + "\"";
    }
    if (piece.size() == 1) {
        const unsigned char c = static_cast<unsigned char>(piece[0]);
        return label + ((c & 0xC0) == 0x80         ? ", part of a character"
                        : c >= 0xC2 && c <= 0xF4 ? ", the first byte of a character"
                                                 : ", never part of UTF-8 text");
    }
    return label + (whole == 0 ? " (starts part-way through a character)" : " (ends part-way through a character)");
}

// [SECTION] Characters (ICU)

namespace {

bool in_category(char32_t c, std::uint32_t mask) { return (U_GET_GC_MASK(static_cast<UChar32>(c)) & mask) != 0; }

}  // namespace

bool is_white_space(char32_t c) { return u_hasBinaryProperty(static_cast<UChar32>(c), UCHAR_WHITE_SPACE); }

bool is_numeric(char32_t c) { return in_category(c, U_GC_N_MASK); }

bool is_alphanumeric(char32_t c) { return u_hasBinaryProperty(static_cast<UChar32>(c), UCHAR_ALPHABETIC) || is_numeric(c); }

bool is_punctuation(char32_t c) {
    if (c < 0x80) return (c >= 0x21 && c <= 0x2F) || (c >= 0x3A && c <= 0x40) || (c >= 0x5B && c <= 0x60) || (c >= 0x7B && c <= 0x7E);
    return in_category(c, U_GC_P_MASK);
}

bool is_other(char32_t c) { return in_category(c, U_GC_C_MASK); }
bool is_nonspacing_mark(char32_t c) { return in_category(c, U_GC_MN_MASK); }
bool is_mark(char32_t c) { return in_category(c, U_GC_M_MASK); }

bool is_word_char(char32_t c) {
    return u_hasBinaryProperty(static_cast<UChar32>(c), UCHAR_ALPHABETIC) || in_category(c, U_GC_M_MASK | U_GC_ND_MASK | U_GC_PC_MASK) ||
           u_hasBinaryProperty(static_cast<UChar32>(c), UCHAR_JOIN_CONTROL);
}

std::string lowercase(const std::string& text) {
    std::string out;
    out.reserve(text.size());
    for (std::size_t i = 0; i < text.size();) {
        const auto [c, length] = code_point_at(text, i);
        i += length;
        if (c < 0x80) {
            out += static_cast<char>(c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c);
            continue;
        }
        // One character alone: ICU's full mapping without a context (Σ alone is not final).
        UChar source[2];
        int32_t source_length = 0;
        U16_APPEND_UNSAFE(source, source_length, static_cast<UChar32>(c));
        UChar lowered[8];
        UErrorCode status = U_ZERO_ERROR;
        const int32_t n = u_strToLower(lowered, 8, source, source_length, "", &status);
        if (U_FAILURE(status) || n > 8) {
            append_utf8(out, c);
            continue;
        }
        for (int32_t k = 0; k < n;) {
            UChar32 l;
            U16_NEXT(lowered, k, n, l);
            append_utf8(out, static_cast<char32_t>(l));
        }
    }
    return out;
}

// [SECTION] Normalization forms (ICU)

std::string normalize(const std::string& text, NormalForm form) {
    bool ascii = true;
    for (const char c : text) ascii = ascii && static_cast<unsigned char>(c) < 0x80;
    if (ascii) return text;   // every form leaves ASCII as it is
    UErrorCode status = U_ZERO_ERROR;
    const UNormalizer2* normalizer = form == NormalForm::NFC    ? unorm2_getNFCInstance(&status)
                                     : form == NormalForm::NFD  ? unorm2_getNFDInstance(&status)
                                     : form == NormalForm::NFKC ? unorm2_getNFKCInstance(&status)
                                                                : unorm2_getNFKDInstance(&status);
    if (U_FAILURE(status)) throw std::runtime_error("ICU has no normalization data");
    // UTF-8 → UTF-16 (at most one unit per byte) → normalized (a form grows a string by at
    // most a factor of 18) → UTF-8.
    std::u16string utf16(text.size() + 1, u'\0');
    int32_t utf16_length = 0;
    u_strFromUTF8WithSub(reinterpret_cast<UChar*>(utf16.data()), static_cast<int32_t>(utf16.size()), &utf16_length, text.data(),
                         static_cast<int32_t>(text.size()), 0xFFFD, nullptr, &status);
    if (U_FAILURE(status)) throw std::runtime_error("ICU could not read the text as UTF-8");
    std::u16string normalized(static_cast<std::size_t>(utf16_length) * 3 + 16, u'\0');
    int32_t normalized_length = unorm2_normalize(normalizer, reinterpret_cast<const UChar*>(utf16.data()), utf16_length,
                                                 reinterpret_cast<UChar*>(normalized.data()),
                                                 static_cast<int32_t>(normalized.size()), &status);
    if (status == U_BUFFER_OVERFLOW_ERROR) {
        status = U_ZERO_ERROR;
        normalized.assign(static_cast<std::size_t>(normalized_length) + 1, u'\0');
        normalized_length = unorm2_normalize(normalizer, reinterpret_cast<const UChar*>(utf16.data()), utf16_length,
                                             reinterpret_cast<UChar*>(normalized.data()), static_cast<int32_t>(normalized.size()), &status);
    }
    if (U_FAILURE(status)) throw std::runtime_error("ICU could not normalize the text");
    std::string out(static_cast<std::size_t>(normalized_length) * 3 + 1, '\0');
    int32_t out_length = 0;
    u_strToUTF8(out.data(), static_cast<int32_t>(out.size()), &out_length, reinterpret_cast<const UChar*>(normalized.data()),
                normalized_length, &status);
    if (U_FAILURE(status)) throw std::runtime_error("ICU could not write the text as UTF-8");
    out.resize(static_cast<std::size_t>(out_length));
    return out;
}

// [SECTION] Regular expressions (PCRE2)

struct Regex::Compiled {
    pcre2_code* code = nullptr;
    bool jit = false;
    std::string shown;   // as the file wrote it, for messages
    ~Compiled() { pcre2_code_free(code); }
};

namespace {

constexpr const char* kWordClass = R"(\p{L}\p{M}\p{N}\p{Pc})";

struct MatchData {
    pcre2_match_data* data;
    explicit MatchData(const pcre2_code* code) : data(pcre2_match_data_create_from_pattern(code, nullptr)) {}
    MatchData(const MatchData&) = delete;
    MatchData& operator=(const MatchData&) = delete;
    ~MatchData() { pcre2_match_data_free(data); }
};

// A pattern from a file may backtrack exponentially ("(a+)+c" on a run of a's), and one text
// asks it for a match once per token. Each search may take this many steps of PCRE2's matcher
// (a few milliseconds, JIT or not), and a text that needs more at one search is refused
// (EncodeError): with PCRE2's default of ten million, a 16 KB text of such runs took 37 s.
// The tokenizers' own patterns take tens of steps a token.
constexpr std::uint32_t kMatchLimit = 1000000;

struct MatchContext {
    pcre2_match_context* context;
    MatchContext() : context(pcre2_match_context_create(nullptr)) { pcre2_set_match_limit(context, kMatchLimit); }
    MatchContext(const MatchContext&) = delete;
    MatchContext& operator=(const MatchContext&) = delete;
    ~MatchContext() { pcre2_match_context_free(context); }
};

}  // namespace

std::string pcre2_pattern_of(const std::string& pattern) {
    std::string out;
    bool in_class = false;
    for (std::size_t i = 0; i < pattern.size(); ++i) {
        const char c = pattern[i];
        if (c == '\\' && i + 1 < pattern.size()) {
            const char e = pattern[++i];
            switch (e) {
                case 's': out += R"(\p{White_Space})"; break;
                case 'S': out += R"(\P{White_Space})"; break;
                case 'w': out += in_class ? std::string(kWordClass) : "[" + std::string(kWordClass) + "]"; break;
                case 'W':
                    if (in_class) throw std::runtime_error("\\W inside a character class is not supported");
                    out += "[^" + std::string(kWordClass) + "]";
                    break;
                case 'h': out += in_class ? "0-9a-fA-F" : "[0-9a-fA-F]"; break;   // Oniguruma's \h: a hexadecimal digit
                case 'H':
                    if (in_class) throw std::runtime_error("\\H inside a character class is not supported");
                    out += "[^0-9a-fA-F]";
                    break;
                default:
                    out += c;
                    out += e;
            }
            continue;
        }
        if (!in_class && c == '[') {
            in_class = true;
            out += c;
            // A ']' first (after an optional '^') is a literal, not the end.
            if (i + 1 < pattern.size() && pattern[i + 1] == '^') out += pattern[++i];
            if (i + 1 < pattern.size() && pattern[i + 1] == ']') out += pattern[++i];
            continue;
        }
        if (in_class && c == '[') throw std::runtime_error("nested character classes are not supported");
        if (in_class && c == ']') in_class = false;
        out += c;
    }
    return out;
}

Regex::Regex(const std::string& oniguruma_pattern) { compile(pcre2_pattern_of(oniguruma_pattern), oniguruma_pattern); }

Regex Regex::literal(const std::string& text) {
    std::string escaped;
    for (const char c : text) {
        const unsigned char u = static_cast<unsigned char>(c);
        if (u < 0x80 && !std::isalnum(u)) escaped += '\\';
        escaped += c;
    }
    Regex r;
    r.compile(escaped, text);
    return r;
}

void Regex::compile(const std::string& pcre2_pattern, const std::string& shown) {
    int error_code = 0;
    PCRE2_SIZE error_offset = 0;
    // Oniguruma's Ruby syntax, the Rust crate's default: ^ and $ match at every line.
    pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pcre2_pattern.data()), pcre2_pattern.size(),
                                     PCRE2_UTF | PCRE2_UCP | PCRE2_MULTILINE, &error_code, &error_offset, nullptr);
    if (!code) {
        PCRE2_UCHAR message[256];
        pcre2_get_error_message(error_code, message, sizeof message);
        throw std::runtime_error("the regular expression '" + shown + "' does not compile (" +
                                 reinterpret_cast<const char*>(message) + " at offset " + std::to_string(error_offset) + ")");
    }
    auto compiled = std::make_shared<Compiled>();
    compiled->code = code;
    compiled->jit = pcre2_jit_compile(code, PCRE2_JIT_COMPLETE) == 0;   // the interpreter when JIT is missing
    compiled->shown = shown;
    compiled_ = std::move(compiled);
}

std::vector<std::pair<std::size_t, std::size_t>> Regex::find_all(const std::string& text) const {
    std::vector<std::pair<std::size_t, std::size_t>> matches;
    if (!compiled_) return matches;
    const pcre2_code* code = compiled_->code;
    MatchData match(code);
    const MatchContext limits;
    const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
    const PCRE2_SIZE length = text.size();
    PCRE2_SIZE offset = 0;
    std::size_t last_end = static_cast<std::size_t>(-1);
    std::uint32_t options = 0;   // the first match checks the UTF-8 once; the rest need not
    while (offset <= length) {
        int rc = pcre2_match(code, subject, length, offset, options, match.data, limits.context);
        // The JIT's own stack ran out: once more without JIT (a match limit is the pattern's: it stays).
        if (rc < 0 && rc != PCRE2_ERROR_NOMATCH && rc != PCRE2_ERROR_MATCHLIMIT && compiled_->jit)
            rc = pcre2_match(code, subject, length, offset, options | PCRE2_NO_JIT, match.data, limits.context);
        if (rc == PCRE2_ERROR_NOMATCH) break;
        if (rc < 0) {
            PCRE2_UCHAR message[256];
            pcre2_get_error_message(rc, message, sizeof message);
            throw EncodeError("the pattern '" + printable(compiled_->shown, 80) + "' failed at byte " + std::to_string(offset) +
                              " of the " + std::to_string(length) + "-byte text it searches (" + reinterpret_cast<const char*>(message) +
                              "): the text's tokens would be wrong past there");
        }
        options = PCRE2_NO_UTF_CHECK;
        const PCRE2_SIZE* span = pcre2_get_ovector_pointer(match.data);
        const std::size_t begin = span[0], end = span[1];
        // Oniguruma's iterator: an empty match right after the previous match is skipped, and
        // after an empty match the search moves on by one character.
        if (begin == end) {
            if (end != last_end) matches.emplace_back(begin, end);
            if (end >= length) break;
            offset = end + code_point_at(text, end).second;
        } else {
            matches.emplace_back(begin, end);
            offset = end;
        }
        last_end = end;
    }
    return matches;
}

std::string Regex::replace_all(const std::string& text, const std::string& content, std::size_t max_bytes) const {
    std::string out;
    std::size_t previous = 0;
    const auto matches = find_all(text);
    // Counted before a byte is written: an empty pattern with a long content would otherwise
    // build the whole product first.
    std::size_t bytes = text.size();
    for (const auto& [begin, end] : matches) {
        bytes = bytes - (end - begin) + content.size();
        if (bytes > max_bytes)
            throw EncodeError("replacing '" + printable(shown(), 80) + "' would make the text longer than " +
                              std::to_string(max_bytes) + " bytes (from " + std::to_string(text.size()) + ")");
    }
    out.reserve(bytes);
    for (const auto& [begin, end] : matches) {
        out.append(text, previous, begin - previous);
        out += content;
        previous = end;
    }
    out.append(text, previous, std::string::npos);
    return out;
}

const std::string& Regex::shown() const {
    static const std::string none;
    return compiled_ ? compiled_->shown : none;
}

}  // namespace attn::tok
