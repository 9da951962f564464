// GPT-2's byte-level BPE.
//
// [SECTION] Bytes and their symbols
// [SECTION] Splitting text into words (PCRE2)
// [SECTION] Reading vocab.json and merges.txt
// [SECTION] Building and checking a tokenizer
// [SECTION] Encoding: merges by rank
// [SECTION] Decoding
#include "tokenizer/bpe.hpp"

#include <algorithm>
#include <mutex>
#include <queue>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <nlohmann/json.hpp>

#include "io/messages.hpp"  // printable, valid_utf8
#include "io/json_read.hpp"   // parse_json, read_text_file
#include "tokenizer/text.hpp"     // utf8_length_at

namespace attn::tok {

using nlohmann::json;

namespace {

// [SECTION] Bytes and their symbols


// The code point of the (well-formed) sequence of the given length at text[i].
std::uint32_t code_point_at(const std::string& text, std::size_t i, std::size_t length) {
    const auto* p = reinterpret_cast<const unsigned char*>(text.data()) + i;
    switch (length) {
        case 1: return p[0];
        case 2: return ((p[0] & 0x1Fu) << 6) | (p[1] & 0x3Fu);
        case 3: return ((p[0] & 0x0Fu) << 12) | ((p[1] & 0x3Fu) << 6) | (p[2] & 0x3Fu);
        default: return ((p[0] & 0x07u) << 18) | ((p[1] & 0x3Fu) << 12) | ((p[2] & 0x3Fu) << 6) | (p[3] & 0x3Fu);
    }
}

// GPT-2's bytes_to_unicode(): bs = '!'…'~', '¡'…'¬', '®'…'ÿ' map to themselves; the other
// 68 bytes, in increasing order, to U+0100 + n. byte_order() is bs followed by those 68:
// the order of ids 0…255 in GPT-2's vocabulary.
struct ByteSymbols {
    std::array<std::string, 256> text;
    std::array<int, 256> order{};             // id → byte
    std::array<int, 0x100 + 68> byte_of{};    // code point → byte, or −1
};

const ByteSymbols& byte_symbols() {
    static const ByteSymbols symbols = [] {
        ByteSymbols s;
        std::array<std::uint32_t, 256> code_point{};
        std::array<bool, 256> printable{};
        int next = 0;
        for (int b = 0; b < 256; ++b) {
            printable[b] = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
            if (printable[b]) {
                code_point[b] = static_cast<std::uint32_t>(b);
                s.order[next++] = b;
            }
        }
        std::uint32_t extra = 0;
        for (int b = 0; b < 256; ++b)
            if (!printable[b]) {
                code_point[b] = 0x100 + extra++;
                s.order[next++] = b;
            }
        s.byte_of.fill(-1);
        for (int b = 0; b < 256; ++b) {
            s.text[b] = utf8_of(code_point[b]);
            s.byte_of[code_point[b]] = b;
        }
        return s;
    }();
    return symbols;
}

}  // namespace

std::string utf8_of(std::uint32_t code_point) {
    std::string s;
    if (code_point < 0x80) {
        s += static_cast<char>(code_point);
    } else if (code_point < 0x800) {
        s += static_cast<char>(0xC0 | (code_point >> 6));
        s += static_cast<char>(0x80 | (code_point & 0x3F));
    } else if (code_point < 0x10000) {
        s += static_cast<char>(0xE0 | (code_point >> 12));
        s += static_cast<char>(0x80 | ((code_point >> 6) & 0x3F));
        s += static_cast<char>(0x80 | (code_point & 0x3F));
    } else {
        s += static_cast<char>(0xF0 | (code_point >> 18));
        s += static_cast<char>(0x80 | ((code_point >> 12) & 0x3F));
        s += static_cast<char>(0x80 | ((code_point >> 6) & 0x3F));
        s += static_cast<char>(0x80 | (code_point & 0x3F));
    }
    return s;
}

const std::array<std::string, 256>& bytes_to_unicode() { return byte_symbols().text; }

int unicode_to_byte(std::uint32_t code_point) {
    const auto& byte_of = byte_symbols().byte_of;
    return code_point < byte_of.size() ? byte_of[code_point] : -1;
}

// [SECTION] Splitting text into words (PCRE2)

namespace {

// GPT-2's pattern. The contractions are case-sensitive as in GPT-2 ("DON'T" keeps "'T" apart
// from the contraction rule). \s+(?!\S) takes a run of spaces but the last one when a word
// follows, so the word keeps its leading space: "a  b" → "a", " ", " b". GPT-2's \s is the
// Python regex module's: Unicode White_Space, 25 characters. PCRE2's \s is one more (U+180E,
// the Mongolian vowel separator, a format character since Unicode 6.3), so the pattern names
// the property itself.
constexpr const char* kWordPattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\p{White_Space}\p{L}\p{N}]+|\p{White_Space}+(?!\P{White_Space})|\p{White_Space}+)";

struct Pattern {
    pcre2_code* code = nullptr;
    bool jit = false;
};

// Compiled once, shared read-only by every thread (each match has its own match data).
const Pattern& word_pattern() {
    static const Pattern pattern = [] {
        Pattern p;
        int error_code = 0;
        PCRE2_SIZE error_offset = 0;
        p.code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(kWordPattern), PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_UCP,
                               &error_code, &error_offset, nullptr);
        if (p.code) p.jit = pcre2_jit_compile(p.code, PCRE2_JIT_COMPLETE) == 0;  // the interpreter when JIT is missing
        return p;
    }();
    return pattern;
}

struct MatchData {
    pcre2_match_data* data;
    explicit MatchData(const pcre2_code* code) : data(pcre2_match_data_create_from_pattern(code, nullptr)) {}
    MatchData(const MatchData&) = delete;
    MatchData& operator=(const MatchData&) = delete;
    ~MatchData() { pcre2_match_data_free(data); }
};

}  // namespace

std::vector<std::string> split_words(const std::string& raw_text) {
    const std::string text = valid_utf8(raw_text);
    std::vector<std::string> words;
    const Pattern& pattern = word_pattern();
    if (!pattern.code) {  // cannot happen with a PCRE2 built with Unicode support; never crash
        if (!text.empty()) words.push_back(text);
        return words;
    }
    MatchData match(pattern.code);
    const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
    const PCRE2_SIZE length = text.size();
    PCRE2_SIZE offset = 0;
    std::uint32_t options = 0;  // the first match checks the UTF-8 once; the rest need not
    while (offset < length) {
        int rc = pcre2_match(pattern.code, subject, length, offset, options, match.data, nullptr);
        if (rc < 0 && rc != PCRE2_ERROR_NOMATCH && pattern.jit)  // e.g. the JIT stack: once more without JIT
            rc = pcre2_match(pattern.code, subject, length, offset, options | PCRE2_NO_JIT, match.data, nullptr);
        const PCRE2_SIZE* span = pcre2_get_ovector_pointer(match.data);
        if (rc < 0 || span[1] <= offset) {  // every character matches some branch; if not, keep the rest whole
            words.push_back(text.substr(offset));
            break;
        }
        if (span[0] > offset) words.push_back(text.substr(offset, span[0] - offset));  // never skip text
        words.push_back(text.substr(span[0], span[1] - span[0]));
        offset = span[1];
        options = PCRE2_NO_UTF_CHECK;
    }
    return words;
}

// [SECTION] Reading vocab.json and merges.txt

namespace {

constexpr int kMaxId = 1 << 24;                                    // 16.7 M: far beyond any vocabulary
constexpr std::uintmax_t kMaxTokenizerFileBytes = 64u * 1024 * 1024;

struct MergeLine {
    std::string left, right;
    int line;
};

// merges.txt: an optional "#version: …" first line, then "left right" per line. Blank lines
// (the file's last newline) are skipped; a "\r" before a newline is dropped.
std::optional<std::vector<MergeLine>> parse_merges(const std::string& text, const std::string& source,
                                                   std::vector<std::string>& errors) {
    Faults faults(source);
    std::vector<MergeLine> merges;
    std::size_t start = 0;
    for (int line = 1; start <= text.size(); ++line) {
        std::size_t end = text.find('\n', start);
        if (end == std::string::npos) end = text.size();
        std::string content = text.substr(start, end - start);
        start = end + 1;
        if (!content.empty() && content.back() == '\r') content.pop_back();
        if (content.empty() || (line == 1 && content.rfind("#version", 0) == 0)) continue;
        const std::size_t space = content.find(' ');
        if (space == std::string::npos || space == 0 || space + 1 == content.size() ||
            content.find(' ', space + 1) != std::string::npos) {
            faults.add("line " + std::to_string(line) + ": expected two tokens separated by one space, found \"" +
                       printable(content, 60) + "\"");
            continue;
        }
        merges.push_back({content.substr(0, space), content.substr(space + 1), line});
    }
    if (!faults.flush_into(errors)) return std::nullopt;
    return merges;
}

// vocab.json: an object of token → non-negative integer id.
std::optional<std::vector<std::pair<std::string, int>>> parse_vocabulary(const std::string& text, const std::string& source,
                                                                         std::vector<std::string>& errors) {
    const std::optional<json> document = parse_json(text, source, errors, json_limits::kVocabulary);
    if (!document) return std::nullopt;
    Faults faults(source);
    if (!document->is_object()) {
        faults.add("expected an object of token → id, found " + std::string(document->type_name()));
        faults.flush_into(errors);
        return std::nullopt;
    }
    std::vector<std::pair<std::string, int>> vocabulary;
    vocabulary.reserve(document->size());
    for (const auto& [token, value] : document->items()) {
        const std::string key = "key '" + printable(token, 60) + "'";
        if (value.is_number_unsigned()) {
            const auto id = value.get<std::uint64_t>();
            if (id >= static_cast<std::uint64_t>(kMaxId))
                faults.add(key + ": id " + std::to_string(id) + " is absurd (at most " + std::to_string(kMaxId - 1) + ")");
            else
                vocabulary.emplace_back(token, static_cast<int>(id));
        } else if (value.is_number_integer()) {
            faults.add(key + ": id " + value.dump() + " is negative");
        } else {
            faults.add(key + ": expected an integer id, found " + value.dump(-1, ' ', false, json::error_handler_t::replace).substr(0, 60));
        }
    }
    if (!faults.flush_into(errors)) return std::nullopt;
    return vocabulary;
}

}  // namespace

std::optional<ByteLevelBpe> ByteLevelBpe::from_text(const std::string& vocab_json, const std::string& merges_text,
                                              const std::string& vocab_source, const std::string& merges_source,
                                              std::vector<std::string>& errors, std::optional<int> vocab_size) {
    auto vocabulary = parse_vocabulary(vocab_json, vocab_source, errors);
    const auto merge_lines = parse_merges(merges_text, merges_source, errors);
    if (!vocabulary || !merge_lines) return std::nullopt;
    std::vector<std::pair<std::string, std::string>> merges;
    std::vector<int> lines;
    merges.reserve(merge_lines->size());
    for (const MergeLine& m : *merge_lines) {
        merges.emplace_back(m.left, m.right);
        lines.push_back(m.line);
    }
    return build(std::move(*vocabulary), merges, lines, vocab_source, merges_source, errors, vocab_size);
}

std::optional<ByteLevelBpe> ByteLevelBpe::load(const std::string& vocab_path, const std::string& merges_path,
                                         std::vector<std::string>& errors, std::optional<int> vocab_size) {
    const auto vocab_text = read_text_file(vocab_path, kMaxTokenizerFileBytes, "vocabulary", errors);
    const auto merges_text = read_text_file(merges_path, kMaxTokenizerFileBytes, "merges", errors);
    if (!vocab_text || !merges_text) return std::nullopt;
    return from_text(*vocab_text, *merges_text, vocab_path, merges_path, errors, vocab_size);
}

// [SECTION] Building and checking a tokenizer

struct ByteLevelBpe::Cache {
    static constexpr std::size_t kMaxWords = 1 << 16;     // then it starts again: memory stays bounded
    static constexpr std::size_t kMaxWordBytes = 256;     // longer words are rare; not kept
    std::mutex mutex;
    std::unordered_map<std::string, std::vector<int>> words;
};

ByteLevelBpe::ByteLevelBpe(Empty) : cache_(std::make_shared<Cache>()) { byte_ids_.fill(-1); }

ByteLevelBpe::ByteLevelBpe() : ByteLevelBpe(Empty{}) {
    const ByteSymbols& symbols = byte_symbols();
    for (int id = 0; id < 256; ++id) {
        const int byte = symbols.order[id];
        tokens_.push_back(symbols.text[byte]);
        bytes_.emplace_back(1, static_cast<char>(byte));
        ids_.emplace(symbols.text[byte], id);
        byte_ids_[byte] = id;
    }
}

std::optional<ByteLevelBpe> ByteLevelBpe::from_merges(const std::vector<std::pair<std::string, std::string>>& merges,
                                                std::vector<std::string>& errors) {
    const ByteLevelBpe bytes;
    std::vector<std::pair<std::string, int>> vocabulary;
    std::unordered_map<std::string, int> seen;
    for (int id = 0; id < bytes.size(); ++id) {
        vocabulary.emplace_back(bytes.token(id), id);
        seen.emplace(bytes.token(id), id);
    }
    std::vector<int> lines;
    for (std::size_t i = 0; i < merges.size(); ++i) {
        const auto& [left, right] = merges[i];
        for (const std::string* piece : {&left, &right})
            if (piece->empty() || piece->find_first_of(" \n\r") != std::string::npos || valid_utf8(*piece) != *piece) {
                errors.push_back("merges: entry " + std::to_string(i + 1) + ": '" + printable(*piece) +
                                 "' is empty, holds a space or a line break, or is not UTF-8");
                return std::nullopt;
            }
        const std::string result = left + right;
        const int next_id = static_cast<int>(vocabulary.size());
        if (seen.emplace(result, next_id).second) vocabulary.emplace_back(result, next_id);
        lines.push_back(static_cast<int>(i + 1));
    }
    return build(std::move(vocabulary), merges, lines, "vocabulary", "merges", errors, std::nullopt);
}

std::optional<ByteLevelBpe> ByteLevelBpe::build(std::vector<std::pair<std::string, int>> vocabulary,
                                          const std::vector<std::pair<std::string, std::string>>& merges,
                                          const std::vector<int>& merge_lines, const std::string& vocab_source,
                                          const std::string& merges_source, std::vector<std::string>& errors,
                                          std::optional<int> vocab_size) {
    ByteLevelBpe t{Empty{}};
    Faults vocab_faults(vocab_source);
    // Ids in order, so messages about duplicates name the smaller id's token first.
    std::sort(vocabulary.begin(), vocabulary.end(),
              [](const auto& a, const auto& b) { return a.second != b.second ? a.second < b.second : a.first < b.first; });
    for (const auto& [token, id] : vocabulary) {
        const std::string key = "key '" + printable(token, 60) + "'";
        if (vocab_size && id >= *vocab_size) {
            vocab_faults.add(key + ": id " + std::to_string(id) + " is not below vocab_size " + std::to_string(*vocab_size) +
                             " (config.json)");
            continue;
        }
        // Ids index the token table: an id past the number of entries would leave a hole, and
        // one absurd id would cost a table of that size. vocab.json's ids run 0 … entries − 1.
        if (static_cast<std::size_t>(id) >= vocabulary.size()) {
            vocab_faults.add(key + ": id " + std::to_string(id) + " is not below the number of entries, " +
                             std::to_string(vocabulary.size()) + " (a vocabulary's ids run from 0 to " +
                             std::to_string(vocabulary.size() - 1) + ")");
            continue;
        }
        if (id < static_cast<int>(t.tokens_.size()) && !t.tokens_[id].empty()) {
            vocab_faults.add(key + ": id " + std::to_string(id) + " is also the id of '" + printable(t.tokens_[id], 60) + "'");
            continue;
        }
        if (token.empty()) {
            vocab_faults.add("the empty string is not a token (id " + std::to_string(id) + ")");
            continue;
        }
        if (id >= static_cast<int>(t.tokens_.size())) {
            t.tokens_.resize(id + 1);
            t.bytes_.resize(id + 1);
        }
        t.tokens_[id] = token;
        t.ids_.emplace(token, id);
        // The bytes the token stands for: each symbol's byte; a character that is no byte's
        // symbol (possible in a hand-made file) stands for its own UTF-8.
        std::string& bytes = t.bytes_[id];
        for (std::size_t i = 0; i < token.size();) {
            const std::size_t length = std::max<std::size_t>(1, utf8_length_at(token, i));
            const int byte = length > 1 || static_cast<unsigned char>(token[i]) < 0x80
                                 ? unicode_to_byte(code_point_at(token, i, length))
                                 : -1;
            if (byte >= 0) bytes += static_cast<char>(byte);
            else bytes.append(token, i, length);
            i += length;
        }
    }
    // Every byte must have its symbol, or some text could not be encoded.
    const ByteSymbols& symbols = byte_symbols();
    std::vector<int> missing;
    for (int byte = 0; byte < 256; ++byte) {
        const auto it = t.ids_.find(symbols.text[byte]);
        if (it == t.ids_.end()) missing.push_back(byte);
        else t.byte_ids_[byte] = it->second;
    }
    if (!missing.empty()) {
        char hex[8];
        std::snprintf(hex, sizeof hex, "0x%02X", missing[0]);
        vocab_faults.add("the symbols of " + std::to_string(missing.size()) + " bytes are missing, the first '" +
                         printable(symbols.text[missing[0]]) + "' (byte " + hex +
                         "); a byte-level vocabulary holds all 256");
    }
    const bool vocabulary_ok = vocab_faults.flush_into(errors);

    Faults merge_faults(merges_source);
    std::unordered_map<std::uint64_t, int> line_of;
    for (std::size_t rank = 0; rank < merges.size(); ++rank) {
        const auto& [left, right] = merges[rank];
        if (!vocabulary_ok) break;  // the vocabulary's messages come first; these would repeat them
        const std::string line = "line " + std::to_string(merge_lines[rank]) + ": ";
        const auto left_id = t.id(left), right_id = t.id(right), result_id = t.id(left + right);
        if (!left_id || !right_id || !result_id) {
            const std::string absent = !left_id ? left : !right_id ? right : left + right;
            merge_faults.add(line + (left_id && right_id ? "the merge result '" : "'") + printable(absent, 60) +
                             "' is not in the vocabulary (" + vocab_source + ")");
            continue;
        }
        const std::uint64_t key = (static_cast<std::uint64_t>(*left_id) << 32) | static_cast<std::uint32_t>(*right_id);
        const auto [it, fresh] = line_of.emplace(key, merge_lines[rank]);
        if (!fresh) {
            merge_faults.add(line + "the merge '" + printable(left + " " + right, 60) + "' is already on line " +
                             std::to_string(it->second));
            continue;
        }
        t.merge_of_.emplace(key, Merge{static_cast<int>(t.merges_.size()), *result_id});
        t.merges_.emplace_back(*left_id, *right_id);
    }
    if (!merge_faults.flush_into(errors) || !vocabulary_ok) return std::nullopt;
    return t;
}

std::optional<int> ByteLevelBpe::id(const std::string& token) const {
    const auto it = ids_.find(token);
    if (it == ids_.end()) return std::nullopt;
    return it->second;
}

const std::string& ByteLevelBpe::token(int id) const {
    static const std::string none;
    return id >= 0 && id < size() ? tokens_[id] : none;
}

std::string ByteLevelBpe::vocab_json() const {
    std::string text = "{";
    for (int id = 0; id < size(); ++id) {
        if (tokens_[id].empty()) continue;
        text += (text.size() > 1 ? ", " : "") + json(tokens_[id]).dump() + ": " + std::to_string(id);
    }
    return text + "}";
}

std::string ByteLevelBpe::merges_text() const {
    std::string text = "#version: 0.2\n";
    for (const auto& [left, right] : merges_) text += tokens_[left] + " " + tokens_[right] + "\n";
    return text;
}

// [SECTION] Encoding: merges by rank

std::vector<int> ByteLevelBpe::encode(const std::string& text) const {
    std::vector<int> ids;
    for (const std::string& word : split_words(text)) encode_word(word, ids);
    return ids;
}

void ByteLevelBpe::encode_word(const std::string& word, std::vector<int>& ids) const {
    const bool cacheable = cache_ && word.size() <= Cache::kMaxWordBytes;   // a moved-from tokenizer has no cache
    if (cacheable) {
        std::lock_guard<std::mutex> lock(cache_->mutex);
        const auto it = cache_->words.find(word);
        if (it != cache_->words.end()) {
            ids.insert(ids.end(), it->second.begin(), it->second.end());
            return;
        }
    }
    // GPT-2's bpe(): repeatedly take the adjacent pair of lowest rank and merge every
    // occurrence of it, left to right, in one pass; stop when no pair has a rank. Done here
    // with a heap of candidate pairs ordered by (rank, position) so a long word costs
    // O(n log n), not O(n²). All candidates of the lowest rank are taken together and merged
    // left to right, exactly GPT-2's pass; pairs a merge creates go back in the heap (they
    // cannot have this rank: a merge's result is longer than either piece).
    struct Symbol {
        int id;
        int previous;
        int next;   // −1 at the ends
    };
    struct Candidate {
        int rank;
        int position;   // the left symbol's index: positions keep their order as symbols merge
        int left, right;
        bool operator>(const Candidate& other) const {
            return rank != other.rank ? rank > other.rank : position > other.position;
        }
    };
    const int n = static_cast<int>(word.size());
    std::vector<Symbol> symbols(n);
    for (int i = 0; i < n; ++i) symbols[i] = {byte_ids_[static_cast<unsigned char>(word[i])], i - 1, i + 1 < n ? i + 1 : -1};
    std::priority_queue<Candidate, std::vector<Candidate>, std::greater<Candidate>> heap;
    auto consider = [&](int position) {
        if (position < 0 || symbols[position].next < 0) return;
        const int left = symbols[position].id, right = symbols[symbols[position].next].id;
        const auto it = merge_of_.find((static_cast<std::uint64_t>(left) << 32) | static_cast<std::uint32_t>(right));
        if (it != merge_of_.end()) heap.push({it->second.rank, position, left, right});
    };
    for (int i = 0; i + 1 < n; ++i) consider(i);
    std::vector<Candidate> pass;
    while (!heap.empty()) {
        const int rank = heap.top().rank;
        pass.clear();
        while (!heap.empty() && heap.top().rank == rank) {
            pass.push_back(heap.top());
            heap.pop();
        }
        const std::uint64_t pair = (static_cast<std::uint64_t>(pass[0].left) << 32) | static_cast<std::uint32_t>(pass[0].right);
        const int result = merge_of_.at(pair).result;
        for (const Candidate& c : pass) {
            // A candidate is stale when an earlier merge took either symbol (a symbol only
            // ever grows, so a stale candidate never becomes valid again).
            Symbol& left = symbols[c.position];
            if (left.id != c.left || left.next < 0 || symbols[left.next].id != c.right) continue;
            Symbol& right = symbols[left.next];
            right.id = -1;
            left.id = result;
            left.next = right.next;
            if (left.next >= 0) symbols[left.next].previous = c.position;
            consider(left.previous);
            consider(c.position);
        }
    }
    std::vector<int> word_ids;
    for (int i = n > 0 ? 0 : -1; i >= 0; i = symbols[i].next) word_ids.push_back(symbols[i].id);
    ids.insert(ids.end(), word_ids.begin(), word_ids.end());
    if (cacheable) {
        std::lock_guard<std::mutex> lock(cache_->mutex);
        if (cache_->words.size() >= Cache::kMaxWords) cache_->words.clear();
        cache_->words.emplace(word, std::move(word_ids));
    }
}

// [SECTION] Decoding

std::string ByteLevelBpe::decode(const std::vector<int>& ids) const {
    std::string text;
    for (const int id : ids)
        if (id >= 0 && id < size()) text += bytes_[id];
    return text;
}

}  // namespace attn::tok
