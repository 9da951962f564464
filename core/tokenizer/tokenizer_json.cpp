// A tokenizer.json, read and run.
//
// [SECTION] Reading objects: keys, types, messages
// [SECTION] Added tokens
// [SECTION] Encoding
// [SECTION] Reading the file
// [SECTION] Tokens and pieces
#include "tokenizer/tokenizer_json.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>

#include "tokenizer/bpe.hpp"       // unicode_to_byte (a byte-level symbol's byte); ByteLevelBpe (vocab.json, merges.txt)
#include "io/messages.hpp"       // valid_utf8
#include "tokenizer/read.hpp"

namespace attn::tok {

using nlohmann::json;

// [SECTION] Reading objects: keys, types, messages

std::string shown(const json& value) {
    std::string text = value.is_string() ? "'" + value.get<std::string>() + "'" : value.dump(-1, ' ', false, json::error_handler_t::replace);
    if (value.is_string()) {
        std::string printable;
        for (const char c : text) {
            const unsigned char u = static_cast<unsigned char>(c);
            if (u < 0x20 || u == 0x7F) {
                char hex[8];
                std::snprintf(hex, sizeof hex, "\\x%02X", u);
                printable += hex;
            } else {
                printable += c;
            }
        }
        text = printable;
    }
    if (text.size() > 120) {
        std::size_t cut = 117;
        while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
        text = text.substr(0, cut) + "…";
    }
    return text;
}

void refuse(const std::string& where, const std::string& what) { throw Refusal(where + ": " + what); }

Object::Object(const json& value, std::string where) : value_(value), where_(std::move(where)) {
    if (!value.is_object()) refuse(where_.empty() ? "the document" : where_, "expected an object, found " + shown(value));
}

void Object::only(std::initializer_list<const char*> known) const {
    for (const auto& [key, _] : value_.items()) {
        if (std::any_of(known.begin(), known.end(), [&key = key](const char* k) { return key == k; })) continue;
        std::string list;
        for (const char* k : known) list += (list.empty() ? "" : ", ") + std::string(k);
        refuse(at(key), "this key is not supported here (it may change the ids; supported: " + list + ")");
    }
}

const json* Object::find(const char* key) const {
    const auto it = value_.find(key);
    return it == value_.end() ? nullptr : &*it;
}

const json& Object::required(const char* key) const {
    const json* value = find(key);
    if (!value) refuse(at(key), "missing");
    return *value;
}

std::string Object::string(const char* key) const {
    const json& value = required(key);
    if (!value.is_string()) refuse(at(key), "expected a string, found " + shown(value));
    return value.get<std::string>();
}

std::optional<std::string> Object::optional_string(const char* key) const {
    const json* value = find(key);
    if (!value || value->is_null()) return std::nullopt;
    if (!value->is_string()) refuse(at(key), "expected a string or null, found " + shown(*value));
    return value->get<std::string>();
}

bool Object::boolean(const char* key, bool fallback) const { return optional_boolean(key).value_or(fallback); }

std::optional<bool> Object::optional_boolean(const char* key) const {
    const json* value = find(key);
    if (!value || value->is_null()) return std::nullopt;
    if (!value->is_boolean()) refuse(at(key), "expected true or false, found " + shown(*value));
    return value->get<bool>();
}

long long Object::integer(const char* key, long long fallback, long long min, long long max) const {
    const json* value = find(key);
    if (!value) return fallback;
    if (!value->is_number_integer() || value->get<long long>() < min || value->get<long long>() > max)
        refuse(at(key), "expected a whole number from " + std::to_string(min) + " to " + std::to_string(max) + ", found " + shown(*value));
    return value->get<long long>();
}

std::string type_of(const Object& object, std::initializer_list<const char*> supported) {
    std::string list;
    for (const char* s : supported) list += (list.empty() ? "" : ", ") + std::string(s);
    const json& type = object.required("type");
    if (type.is_string())
        for (const char* s : supported)
            if (type.get_ref<const std::string&>() == s) return s;
    refuse(object.at("type"), shown(type) + " is not supported (supported: " + list + ")");
}

Regex read_pattern(const json& value, const std::string& where) {
    if (!value.is_object() || value.size() != 1 || !value.begin().value().is_string())
        refuse(where, "expected {\"String\": \"…\"} or {\"Regex\": \"…\"}, found " + shown(value));
    const std::string& kind = value.begin().key();
    const std::string& text = value.begin().value().get_ref<const std::string&>();
    try {
        if (kind == "String") return Regex::literal(text);
        if (kind == "Regex") return Regex(text);
    } catch (const std::runtime_error& e) {
        refuse(where + "." + kind, e.what());
    }
    refuse(where, shown(kind) + " is not a pattern kind (supported: String, Regex)");
}

// [SECTION] Added tokens

void AddedTokenMatcher::add(const std::string& content, int token_index) {
    int node = 0;
    for (const char c : content) {
        const auto it = nodes_[node].next.find(static_cast<unsigned char>(c));
        if (it != nodes_[node].next.end()) {
            node = it->second;
            continue;
        }
        nodes_[node].next.emplace(static_cast<unsigned char>(c), static_cast<int>(nodes_.size()));
        node = static_cast<int>(nodes_.size());
        nodes_.emplace_back();
    }
    if (nodes_[node].token < 0) nodes_[node].token = token_index;   // the first listed wins a tie
}

std::pair<int, std::size_t> AddedTokenMatcher::longest_at(const std::string& text, std::size_t at) const {
    std::pair<int, std::size_t> best{-1, 0};
    int node = 0;
    for (std::size_t i = at; i < text.size(); ++i) {
        const auto it = nodes_[node].next.find(static_cast<unsigned char>(text[i]));
        if (it == nodes_[node].next.end()) break;
        node = it->second;
        if (nodes_[node].token >= 0) best = {nodes_[node].token, i + 1 - at};
    }
    return best;
}

namespace {

// A stretch of text: an added token (its index in Pipeline::added) or text to tokenize (−1).
struct Segment {
    int token;
    std::size_t begin, end;
};

// The first character before `at` and the first from `at`, or nothing at the ends.
std::optional<char32_t> character_before(const std::string& text, std::size_t at) {
    if (at == 0) return std::nullopt;
    std::size_t start = at - 1;
    while (start > 0 && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) --start;
    return code_point_at(text, start).first;
}

// The library's find_matches: leftmost-longest matches, non-overlapping; a single_word token
// only between non-word characters; lstrip and rstrip take the whitespace beside the token.
std::vector<Segment> find_added(const std::string& text, const AddedTokenMatcher& matcher, const std::vector<AddedToken>& added) {
    std::vector<Segment> segments;
    if (matcher.empty() || text.empty()) return {{-1, 0, text.size()}};
    std::size_t start_offset = 0;
    for (std::size_t position = 0; position < text.size();) {
        const auto [index, length] = matcher.longest_at(text, position);
        if (index < 0) {
            ++position;
            continue;
        }
        std::size_t start = position, stop = position + length;
        position = stop;
        const AddedToken& token = added[static_cast<std::size_t>(index)];
        if (token.single_word) {
            const auto before = character_before(text, start);
            const bool word_before = before && is_word_char(*before);
            const bool word_after = stop < text.size() && is_word_char(code_point_at(text, stop).first);
            if (word_before || word_after) continue;
        }
        if (token.lstrip) {
            std::size_t new_start = start;
            while (new_start > 0) {   // back over whitespace characters
                std::size_t k = new_start - 1;
                while (k > 0 && (static_cast<unsigned char>(text[k]) & 0xC0) == 0x80) --k;
                if (!is_white_space(code_point_at(text, k).first)) break;
                new_start = k;
            }
            start = std::max(new_start, start_offset);   // never into a previous match
        }
        if (token.rstrip)
            while (stop < text.size()) {
                const auto [c, n] = code_point_at(text, stop);
                if (!is_white_space(c)) break;
                stop += n;
            }
        if (start_offset < start) segments.push_back({-1, start_offset, start});
        segments.push_back({index, start, stop});
        start_offset = stop;
    }
    if (start_offset != text.size()) segments.push_back({-1, start_offset, text.size()});
    return segments;
}

}  // namespace

// [SECTION] Encoding

std::string Pipeline::normalize(const std::string& text) const {
    std::string out = text;
    // Each normalizer within the bound of the text it was given, and all of them within the
    // bound of the text they started from: a Sequence must not compound its growths.
    const std::size_t most = text.size() * kNormalizedGrowth + kNormalizedSlack;
    for (const auto& n : normalizers) {
        out = n->normalize(out);
        if (out.size() > most)
            throw EncodeError(n->where + " makes the text " + std::to_string(out.size()) + " bytes from " + std::to_string(text.size()) +
                              ": normalizing may make at most " + std::to_string(kNormalizedGrowth) + " times the text's bytes and " +
                              std::to_string(kNormalizedSlack) + " more");
    }
    return out;
}

void Pipeline::pre_tokenize(const std::string& raw_text, const std::function<void(int)>& on_added,
                            const std::function<void(const std::string&)>& on_word) const {
    const std::string text = valid_utf8(raw_text);
    std::vector<Piece> pieces;
    for (const Segment& raw : find_added(text, raw_matcher, added)) {
        if (raw.token >= 0) {
            on_added(raw.token);
            continue;
        }
        if (raw.begin == raw.end) continue;   // the library drops empty pieces before normalizing
        const std::string normalized = normalize(text.substr(raw.begin, raw.end - raw.begin));
        for (const Segment& s : find_added(normalized, normalized_matcher, added)) {
            if (s.token >= 0) {
                on_added(s.token);
                continue;
            }
            if (s.begin == s.end) continue;
            pieces.assign(1, Piece{normalized.substr(s.begin, s.end - s.begin), raw.begin == 0 && s.begin == 0});
            for (const auto& p : pre_tokenizers) p->split(pieces);
            for (const Piece& piece : pieces) on_word(piece.text);
        }
    }
}

std::vector<int> Pipeline::encode(const std::string& text, bool add_special_tokens) const {
    std::vector<int> ids;
    pre_tokenize(
        text, [&](int token) { ids.push_back(added[static_cast<std::size_t>(token)].id); },
        [&](const std::string& word) { model->tokenize(word, ids); });
    if (add_special_tokens)
        for (const auto& p : post_processors) ids = p->process(std::move(ids));
    return ids;
}

// [SECTION] Reading the file

namespace {

void read_added_tokens(const json& value, Pipeline& pipeline) {
    if (value.is_null()) return;
    if (!value.is_array()) refuse("added_tokens", "expected a list of tokens, found " + shown(value));
    for (std::size_t i = 0; i < value.size(); ++i) {
        const Object o(value[i], "added_tokens[" + std::to_string(i) + "]");
        o.only({"id", "content", "single_word", "lstrip", "rstrip", "normalized", "special"});
        AddedToken t;
        t.id = static_cast<int>(o.integer("id", -1, 0, (1LL << 31) - 1));
        if (!o.has("id")) refuse(o.at("id"), "missing");
        t.content = o.string("content");
        t.single_word = o.boolean("single_word", false);
        t.lstrip = o.boolean("lstrip", false);
        t.rstrip = o.boolean("rstrip", false);
        t.special = o.boolean("special", false);
        t.normalized = o.boolean("normalized", !t.special);
        if (t.content.empty()) continue;   // the library skips an empty token
        if (valid_utf8(t.content) != t.content) refuse(o.at("content"), "not UTF-8");
        pipeline.added.push_back(std::move(t));
    }
}

// Added tokens' ids as the library gives them (the file's "id" is not read back): the
// vocabulary's id when it holds the content, else the next id after the vocabulary and the
// added tokens so far. Then the id table and the matchers: raw-text tokens, and normalized
// ones in their normalized form; specials first.
void index_added_tokens(Pipeline& pipeline) {
    const int vocab_size = static_cast<int>(pipeline.ids.size());
    std::unordered_map<std::string, int> added_ids;
    std::optional<int> max_added;
    for (std::size_t i = 0; i < pipeline.added.size(); ++i) {
        AddedToken& t = pipeline.added[i];
        if (const auto it = added_ids.find(t.content); it != added_ids.end()) t.id = it->second;
        else if (const auto in_vocab = pipeline.ids.find(t.content); in_vocab != pipeline.ids.end()) t.id = in_vocab->second;
        else t.id = max_added && *max_added >= vocab_size ? *max_added + 1 : vocab_size;
        added_ids.emplace(t.content, t.id);
        max_added = std::max(max_added.value_or(t.id), t.id);
        if (t.id >= static_cast<int>(pipeline.tokens.size())) pipeline.tokens.resize(static_cast<std::size_t>(t.id) + 1);
        std::string& slot = pipeline.tokens[static_cast<std::size_t>(t.id)];
        if (!slot.empty() && slot != t.content)
            refuse("added_tokens[" + std::to_string(i) + "]", shown(json(t.content)) + " would take id " + std::to_string(t.id) +
                                                                 ", the id of " + shown(json(slot)) + " (the vocabulary's ids have gaps)");
        slot = t.content;
        pipeline.ids.emplace(t.content, t.id);
    }
    pipeline.special.assign(pipeline.tokens.size(), 0);
    for (const bool special_pass : {true, false})
        for (std::size_t i = 0; i < pipeline.added.size(); ++i) {
            const AddedToken& t = pipeline.added[i];
            if (t.special != special_pass) continue;
            if (t.special) pipeline.special[static_cast<std::size_t>(t.id)] = 1;
            if (!t.normalized) {
                pipeline.raw_matcher.add(t.content, static_cast<int>(i));
            } else {
                const std::string normalized = pipeline.normalize(t.content);
                if (!normalized.empty()) pipeline.normalized_matcher.add(normalized, static_cast<int>(i));
            }
        }
}

std::shared_ptr<const Pipeline> read_pipeline(const json& document) {
    const Object top(document, "");
    top.only({"version", "truncation", "padding", "added_tokens", "normalizer", "pre_tokenizer", "model", "post_processor", "decoder"});
    auto pipeline = std::make_shared<Pipeline>();
    if (const json* added = top.find("added_tokens")) read_added_tokens(*added, *pipeline);
    pipeline->normalizers = read_normalizer(top.find("normalizer") ? *top.find("normalizer") : json(), "normalizer");
    bool byte_level = false;
    pipeline->pre_tokenizers =
        read_pre_tokenizer(top.find("pre_tokenizer") ? *top.find("pre_tokenizer") : json(), "pre_tokenizer", pipeline->metaspace, byte_level);
    pipeline->model = read_model(top.required("model"), "model", *pipeline);
    if (const json* decoder = top.find("decoder"); decoder && decoder->is_object() && decoder->value("type", "") == "ByteLevel") byte_level = true;
    if (byte_level) pipeline->style = PieceStyle::ByteLevel;
    index_added_tokens(*pipeline);
    pipeline->post_processors = read_post_processor(top.find("post_processor") ? *top.find("post_processor") : json(), "post_processor", *pipeline);
    return pipeline;
}

}  // namespace

TokenizerJson::TokenizerJson() = default;
TokenizerJson::TokenizerJson(TokenizerJson&&) noexcept = default;
TokenizerJson& TokenizerJson::operator=(TokenizerJson&&) noexcept = default;
TokenizerJson::TokenizerJson(const TokenizerJson&) = default;
TokenizerJson& TokenizerJson::operator=(const TokenizerJson&) = default;
TokenizerJson::~TokenizerJson() = default;

namespace {

// `read` run, every fault a message naming `source_name`: a malformed or unsupported part, an
// allocation that failed, a JSON type error the checks missed (a message, never a crash).
template <class Read>
std::optional<TokenizerJson> guarded(const std::string& source_name, std::vector<std::string>& errors, Read read) {
    try {
        return read();
    } catch (const Refusal& r) {
        errors.push_back(source_name + ": " + r.what());
    } catch (const std::bad_alloc&) {
        errors.push_back(source_name + ": not enough memory to read this tokenizer.json");
    } catch (const std::exception& e) {
        errors.push_back(source_name + ": " + e.what());
    }
    return std::nullopt;
}

}  // namespace

std::optional<TokenizerJson> TokenizerJson::from_text(const std::string& json_text, const std::string& source_name,
                                                      std::vector<std::string>& errors) {
    return guarded(source_name, errors, [&]() -> std::optional<TokenizerJson> {
        const auto document = parse_json(json_text, source_name, errors, kTokenizerJsonLimits);
        if (!document) return std::nullopt;
        TokenizerJson t;
        t.pipeline_ = read_pipeline(*document);
        return t;
    });
}

std::optional<TokenizerJson> TokenizerJson::from_byte_level_bpe(const ByteLevelBpe& bpe, const std::string& source_name,
                                                                std::vector<std::string>& errors) {
    return guarded(source_name, errors, [&]() -> std::optional<TokenizerJson> {
        json vocab = json::object();
        for (int id = 0; id < bpe.size(); ++id)
            if (!bpe.token(id).empty()) vocab[bpe.token(id)] = id;
        json merges = json::array();
        for (int rank = 0; rank < bpe.merge_count(); ++rank) {
            const auto [left, right] = bpe.merge(rank);
            merges.push_back(bpe.token(left) + " " + bpe.token(right));
        }
        json added = json::array();
        if (const std::optional<int> end = bpe.id("<|endoftext|>"))
            added.push_back({{"id", *end}, {"content", "<|endoftext|>"}, {"single_word", false}, {"lstrip", false},
                             {"rstrip", false}, {"normalized", false}, {"special", true}});
        const json byte_level = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", true}};
        json document = {{"version", "1.0"},
                         {"added_tokens", std::move(added)},
                         {"pre_tokenizer", byte_level},
                         {"post_processor", {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", false}, {"use_regex", true}}},
                         {"decoder", byte_level},
                         {"model", {{"type", "BPE"}, {"fuse_unk", false}, {"byte_fallback", false}, {"vocab", std::move(vocab)}, {"merges", std::move(merges)}}}};
        TokenizerJson t;
        t.pipeline_ = read_pipeline(document);
        return t;
    });
}

std::optional<TokenizerJson> TokenizerJson::from_vocab_merges(const std::string& vocab_path, const std::string& merges_path,
                                                              std::vector<std::string>& errors, std::optional<int> vocab_size) {
    const std::optional<ByteLevelBpe> bpe = ByteLevelBpe::load(vocab_path, merges_path, errors, vocab_size);
    if (!bpe) return std::nullopt;
    return from_byte_level_bpe(*bpe, vocab_path, errors);
}

std::optional<TokenizerJson> TokenizerJson::load(const std::string& path, std::vector<std::string>& errors) {
    const auto text = read_text_file(path, kTokenizerJsonMaxBytes, "tokenizer.json", errors);
    if (!text) return std::nullopt;
    return from_text(*text, path, errors);
}

std::vector<int> TokenizerJson::encode(const std::string& text) const {
    if (!around_set_) return pipeline_->encode(text, true);
    std::vector<int> ids = before_;
    const std::vector<int> sequence = pipeline_->encode(text, false);
    ids.insert(ids.end(), sequence.begin(), sequence.end());
    ids.insert(ids.end(), after_.begin(), after_.end());
    return ids;
}

void TokenizerJson::set_special_tokens(std::vector<int> before, std::vector<int> after) {
    around_set_ = true;
    before_ = std::move(before);
    after_ = std::move(after);
}

std::vector<int> TokenizerJson::encode_without_special_tokens(const std::string& text) const { return pipeline_->encode(text, false); }

std::string TokenizerJson::normalized(const std::string& raw_text) const {
    const Pipeline& p = *pipeline_;
    const std::string text = valid_utf8(raw_text);
    std::string out;
    for (const Segment& raw : find_added(text, p.raw_matcher, p.added))
        if (raw.token < 0) out += p.normalize(text.substr(raw.begin, raw.end - raw.begin));
    return out;
}

std::vector<std::string> TokenizerJson::words(const std::string& text) const {
    std::vector<std::string> out;
    pipeline_->pre_tokenize(
        text, [&](int token) { out.push_back(pipeline_->added[static_cast<std::size_t>(token)].content); },
        [&](const std::string& word) { out.push_back(word); });
    return out;
}

// [SECTION] Tokens and pieces

int TokenizerJson::size() const { return static_cast<int>(pipeline_->tokens.size()); }

const std::string& TokenizerJson::token(int id) const {
    static const std::string none;
    return id >= 0 && id < size() ? pipeline_->tokens[static_cast<std::size_t>(id)] : none;
}

std::optional<int> TokenizerJson::id(const std::string& token) const {
    const auto it = pipeline_->ids.find(token);
    if (it == pipeline_->ids.end()) return std::nullopt;
    return it->second;
}

bool TokenizerJson::is_special(int id) const { return id >= 0 && id < size() && pipeline_->special[static_cast<std::size_t>(id)]; }

std::string TokenizerJson::piece(int id) const {
    const std::string& t = token(id);
    if (t.empty()) return t;
    const Pipeline& p = *pipeline_;
    if (is_special(id)) return t;   // "<|begin_of_text|>" as it is; other added tokens ("▁▁▁" in Gemma) decode as the vocabulary's
    switch (p.style) {
        case PieceStyle::ByteLevel: {
            std::string bytes;
            for (std::size_t i = 0; i < t.size();) {
                const auto [c, length] = code_point_at(t, i);
                const int byte = unicode_to_byte(c);
                if (byte >= 0) bytes += static_cast<char>(byte);
                else bytes.append(t, i, length);
                i += length;
            }
            return bytes;
        }
        case PieceStyle::WordPiece:
            return t.compare(0, p.subword_prefix.size(), p.subword_prefix) == 0 && t.size() > p.subword_prefix.size()
                       ? t.substr(p.subword_prefix.size())
                       : t;
        case PieceStyle::Metaspace:
            if (p.byte_fallback && t.size() == 6 && t.compare(0, 3, "<0x") == 0 && t[5] == '>') {
                const std::string hex = t.substr(3, 2);
                if (std::isxdigit(static_cast<unsigned char>(hex[0])) && std::isxdigit(static_cast<unsigned char>(hex[1])))
                    return std::string(1, static_cast<char>(std::stoi(hex, nullptr, 16)));
            }
            std::string out;
            for (std::size_t i = 0; i < t.size();) {
                if (!p.metaspace.empty() && t.compare(i, p.metaspace.size(), p.metaspace) == 0) {
                    out += ' ';
                    i += p.metaspace.size();
                } else {
                    out += t[i++];
                }
            }
            return out;
    }
    return t;
}

}  // namespace attn::tok
