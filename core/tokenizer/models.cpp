// The models of a tokenizer.json: BPE (merges by rank, byte fallback, unknown tokens) and
// WordPiece (longest piece first), as the Rust tokenizers library runs them.
//
// [SECTION] BPE
// [SECTION] WordPiece
// [SECTION] Reading a model
#include <algorithm>
#include <cstdio>
#include <queue>

#include "tokenizer/read.hpp"

namespace attn::tok {

using nlohmann::json;

namespace {

std::uint64_t pair_key(int left, int right) { return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(left)) << 32) | static_cast<std::uint32_t>(right); }

}  // namespace

// [SECTION] BPE

void BpeModel::tokenize(const std::string& word, std::vector<int>& ids) const {
    if (word.empty()) return;
    if (ignore_merges) {   // Llama 3: a word the vocabulary holds whole is one token
        if (const auto it = vocab.find(word); it != vocab.end()) {
            ids.push_back(it->second);
            return;
        }
    }
    // Each character a symbol (with the prefix after the first and the suffix on the last);
    // a character the vocabulary lacks becomes its bytes' <0xNN> tokens (byte_fallback), or
    // the unknown token (runs of them fused into one with fuse_unk), or nothing.
    std::vector<int> symbols;
    std::optional<int> pending_unk;
    for (std::size_t i = 0; i < word.size();) {
        const std::size_t length = code_point_at(word, i).second;
        const bool first = i == 0, last = i + length >= word.size();
        std::string symbol = word.substr(i, length);
        i += length;
        if (!first) symbol = continuing_subword_prefix + symbol;
        if (last) symbol += end_of_word_suffix;
        if (const auto it = vocab.find(symbol); it != vocab.end()) {
            if (pending_unk) symbols.push_back(*pending_unk);
            pending_unk.reset();
            symbols.push_back(it->second);
            continue;
        }
        if (byte_fallback) {
            bool all = true;
            for (const char c : symbol) all = all && byte_fallback_ids[static_cast<unsigned char>(c)] >= 0;
            if (all) {   // (an unknown token still pending comes after these, as in the library)
                for (const char c : symbol) symbols.push_back(byte_fallback_ids[static_cast<unsigned char>(c)]);
                continue;
            }
        }
        if (unk_id) {
            if (pending_unk && !fuse_unk) symbols.push_back(*pending_unk);
            pending_unk = *unk_id;
        }
    }
    if (pending_unk) symbols.push_back(*pending_unk);

    // Merges: the pair of lowest rank first (leftmost among equals), until none has a rank.
    struct Candidate {
        std::uint32_t rank;
        int position;
        int result;
        bool operator>(const Candidate& other) const { return rank != other.rank ? rank > other.rank : position > other.position; }
    };
    const int n = static_cast<int>(symbols.size());
    std::vector<int> next(n), previous(n);
    std::vector<char> removed(n, 0);
    for (int k = 0; k < n; ++k) {
        next[k] = k + 1 < n ? k + 1 : -1;
        previous[k] = k - 1;
    }
    std::priority_queue<Candidate, std::vector<Candidate>, std::greater<Candidate>> heap;
    auto consider = [&](int position) {
        if (position < 0 || next[position] < 0) return;
        const auto it = merges.find(pair_key(symbols[position], symbols[next[position]]));
        if (it != merges.end()) heap.push({it->second.rank, position, it->second.result});
    };
    for (int k = 0; k + 1 < n; ++k) consider(k);
    while (!heap.empty()) {
        const Candidate top = heap.top();
        heap.pop();
        if (removed[top.position] || next[top.position] < 0) continue;
        const int right = next[top.position];
        // Stale when either symbol changed since it was pushed.
        const auto it = merges.find(pair_key(symbols[top.position], symbols[right]));
        if (it == merges.end() || it->second.result != top.result) continue;
        symbols[top.position] = top.result;
        removed[right] = 1;
        next[top.position] = next[right];
        if (next[right] >= 0) previous[next[right]] = top.position;
        consider(previous[top.position]);
        consider(top.position);
    }
    for (int k = n > 0 ? 0 : -1; k >= 0; k = next[k]) ids.push_back(symbols[k]);
}

// [SECTION] WordPiece

void WordPieceModel::tokenize(const std::string& word, std::vector<int>& ids) const {
    if (word.empty()) return;
    if (code_point_count(word) > max_input_chars_per_word) {
        ids.push_back(unk_id);
        return;
    }
    std::vector<int> pieces;
    for (std::size_t start = 0; start < word.size();) {
        // The longest piece from start the vocabulary holds ("##" before all but the first).
        // No piece is longer than the vocabulary's longest entry: candidates start there.
        std::size_t end = std::min(word.size(), start + longest_entry_bytes);
        while (end > start && end < word.size() && (static_cast<unsigned char>(word[end]) & 0xC0) == 0x80) --end;
        int found = -1;
        while (start < end) {
            const std::string piece = (start > 0 ? continuing_subword_prefix : std::string()) + word.substr(start, end - start);
            if (const auto it = vocab.find(piece); it != vocab.end()) {
                found = it->second;
                break;
            }
            do --end;   // back by one character
            while (end > start && (static_cast<unsigned char>(word[end]) & 0xC0) == 0x80);
        }
        if (found < 0) {   // a word with a part no piece covers is one unknown token
            ids.push_back(unk_id);
            return;
        }
        pieces.push_back(found);
        start = end;
    }
    ids.insert(ids.end(), pieces.begin(), pieces.end());
}

// [SECTION] Reading a model

namespace {

// The vocabulary {"token": id, …} into pipeline.tokens and pipeline.ids. Ids must be dense
// enough that a table of them stays the size of the file (they run 0 … entries − 1 in every
// real file; added tokens come after).
std::unordered_map<std::string, int> read_vocab(const Object& o, Pipeline& pipeline, std::size_t added_count) {
    const json& vocab = o.required("vocab");
    if (!vocab.is_object()) refuse(o.at("vocab"), "expected an object {\"token\": id, …}, found " + shown(vocab));
    const long long max_id = static_cast<long long>(vocab.size() + added_count) * 2 + 1024;
    std::unordered_map<std::string, int> ids;
    ids.reserve(vocab.size());
    for (const auto& [token, id] : vocab.items()) {
        const std::string at = o.at("vocab") + "." + shown(json(token));
        if (!id.is_number_integer() || id.get<long long>() < 0 || id.get<long long>() >= max_id)
            refuse(at, "expected an id from 0 to " + std::to_string(max_id - 1) + ", found " + shown(id));
        const int value = id.get<int>();
        if (value >= static_cast<int>(pipeline.tokens.size())) pipeline.tokens.resize(value + 1);
        if (!pipeline.tokens[value].empty() && pipeline.tokens[value] != token)
            refuse(at, "id " + std::to_string(value) + " is also the id of " + shown(json(pipeline.tokens[value])));
        pipeline.tokens[value] = token;
        ids.emplace(token, value);
    }
    pipeline.ids = ids;
    return ids;
}

std::unique_ptr<Model> read_bpe(const Object& o, Pipeline& pipeline) {
    o.only({"type", "dropout", "unk_token", "continuing_subword_prefix", "end_of_word_suffix", "fuse_unk", "byte_fallback",
            "ignore_merges", "vocab", "merges"});
    if (const json* dropout = o.find("dropout"); dropout && !dropout->is_null())
        refuse(o.at("dropout"), shown(*dropout) + ": BPE dropout makes the ids random; only null is supported");
    auto m = std::make_unique<BpeModel>();
    m->vocab = read_vocab(o, pipeline, pipeline.added.size());
    m->continuing_subword_prefix = o.optional_string("continuing_subword_prefix").value_or("");
    m->end_of_word_suffix = o.optional_string("end_of_word_suffix").value_or("");
    m->fuse_unk = o.boolean("fuse_unk", false);
    m->byte_fallback = o.boolean("byte_fallback", false);
    m->ignore_merges = o.boolean("ignore_merges", false);
    if (const auto unk = o.optional_string("unk_token")) {
        const auto it = m->vocab.find(*unk);
        if (it == m->vocab.end()) refuse(o.at("unk_token"), shown(*unk) + " is not in the vocabulary");
        m->unk_id = it->second;
    }
    for (int b = 0; b < 256; ++b) {
        char name[8];
        std::snprintf(name, sizeof name, "<0x%02X>", b);
        const auto it = m->vocab.find(name);
        m->byte_fallback_ids[b] = it == m->vocab.end() ? -1 : it->second;
    }
    // Merges: "left right" (split at the first space) or ["left", "right"], best first. A
    // pair listed twice keeps its later rank, as the library's map does.
    const json& merges = o.required("merges");
    if (!merges.is_array()) refuse(o.at("merges"), "expected a list of merges, found " + shown(merges));
    m->merges.reserve(merges.size());
    const std::size_t prefix_length = m->continuing_subword_prefix.size();
    for (std::size_t rank = 0; rank < merges.size(); ++rank) {
        const json& merge = merges[rank];
        const std::string at = o.at("merges") + "[" + std::to_string(rank) + "]";
        std::string left, right;
        if (merge.is_string()) {
            const std::string& line = merge.get_ref<const std::string&>();
            const std::size_t space = line.find(' ');
            if (space == std::string::npos) refuse(at, shown(merge) + " is not \"left right\"");
            left = line.substr(0, space);
            right = line.substr(space + 1);
        } else if (merge.is_array() && merge.size() == 2 && merge[0].is_string() && merge[1].is_string()) {
            left = merge[0].get<std::string>();
            right = merge[1].get<std::string>();
        } else {
            refuse(at, "expected \"left right\" or [\"left\", \"right\"], found " + shown(merge));
        }
        const std::string result = left + (right.compare(0, prefix_length, m->continuing_subword_prefix) == 0 ? right.substr(prefix_length) : right);
        const auto l = m->vocab.find(left), r = m->vocab.find(right), joined = m->vocab.find(result);
        if (l == m->vocab.end() || r == m->vocab.end() || joined == m->vocab.end())
            refuse(at, shown(l == m->vocab.end() ? json(left) : r == m->vocab.end() ? json(right) : json(result)) + " is not in the vocabulary");
        m->merges[pair_key(l->second, r->second)] = {static_cast<std::uint32_t>(rank), joined->second};
    }
    pipeline.byte_fallback = m->byte_fallback;
    return m;
}

std::unique_ptr<Model> read_wordpiece(const Object& o, Pipeline& pipeline) {
    o.only({"type", "unk_token", "continuing_subword_prefix", "max_input_chars_per_word", "vocab"});
    auto m = std::make_unique<WordPieceModel>();
    m->vocab = read_vocab(o, pipeline, pipeline.added.size());
    const std::string unk = o.optional_string("unk_token").value_or("[UNK]");
    const auto it = m->vocab.find(unk);
    if (it == m->vocab.end()) refuse(o.at("unk_token"), shown(unk) + " is not in the vocabulary");
    m->unk_id = it->second;
    m->continuing_subword_prefix = o.optional_string("continuing_subword_prefix").value_or("##");
    // The search tries every shorter piece at every start of a word: quadratic in the word's
    // length, so that length is bounded (the library's files say 100).
    m->max_input_chars_per_word =
        static_cast<std::size_t>(o.integer("max_input_chars_per_word", 100, 0, static_cast<long long>(kMaxWordPieceChars)));
    for (const auto& [entry, id] : m->vocab) m->longest_entry_bytes = std::max(m->longest_entry_bytes, entry.size());
    pipeline.subword_prefix = m->continuing_subword_prefix;
    return m;
}

}  // namespace

std::unique_ptr<Model> read_model(const json& value, const std::string& where, Pipeline& pipeline) {
    const Object o(value, where);
    // A file without "type" is read as the library reads it: merges mean BPE.
    const std::string type = o.has("type") ? type_of(o, {"BPE", "WordPiece"}) : o.has("merges") ? "BPE" : "WordPiece";
    if (type == "BPE") return read_bpe(o, pipeline);
    pipeline.style = PieceStyle::WordPiece;
    return read_wordpiece(o, pipeline);
}

}  // namespace attn::tok
