// The normalizers, pre-tokenizers and post-processors of a tokenizer.json: each with the keys
// it reads, and what it does to the text, as the Rust tokenizers library does it.
//
// [SECTION] Normalizers
// [SECTION] Splitting pieces (the library's find_matches and SplitDelimiterBehavior)
// [SECTION] Pre-tokenizers
// [SECTION] Post-processors
#include <algorithm>

#include "tokenizer/bpe.hpp"   // GPT-2's word pattern and byte symbols (ByteLevel)
#include "tokenizer/read.hpp"

namespace attn::tok {

using nlohmann::json;

// [SECTION] Normalizers

namespace {

struct FormNormalizer final : Normalizer {
    NormalForm form;
    explicit FormNormalizer(NormalForm f) : form(f) {}
    std::string normalize(const std::string& text) const override { return tok::normalize(text, form); }
};

struct LowercaseNormalizer final : Normalizer {
    std::string normalize(const std::string& text) const override { return lowercase(text); }
};

struct PrependNormalizer final : Normalizer {
    std::string prepend;
    std::string normalize(const std::string& text) const override { return text.empty() ? text : prepend + text; }
};

struct ReplaceNormalizer final : Normalizer {
    Regex pattern;
    std::string content;
    ReplaceNormalizer(Regex p, std::string c) : pattern(std::move(p)), content(std::move(c)) {}
    std::string normalize(const std::string& text) const override {
        try {
            return pattern.replace_all(text, content, text.size() * kNormalizedGrowth + kNormalizedSlack);
        } catch (const EncodeError& e) {
            throw EncodeError(where + ": " + e.what());
        }
    }
};

struct StripNormalizer final : Normalizer {
    bool left = true, right = true;
    std::string normalize(const std::string& text) const override {
        std::size_t begin = 0, end = text.size();
        if (left)
            while (begin < end) {
                const auto [c, length] = code_point_at(text, begin);
                if (!is_white_space(c)) break;
                begin += length;
            }
        if (right)
            while (end > begin) {
                std::size_t start = end - 1;
                while (start > begin && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) --start;
                if (!is_white_space(code_point_at(text, start).first)) break;
                end = start;
            }
        return text.substr(begin, end - begin);
    }
};

template <class Keep>
std::string filter_characters(const std::string& text, Keep keep) {
    std::string out;
    out.reserve(text.size());
    for (std::size_t i = 0; i < text.size();) {
        const auto [c, length] = code_point_at(text, i);
        if (keep(c)) out.append(text, i, length);
        i += length;
    }
    return out;
}

// Strips every combining mark (Mn, Mc, Me); used after NFD, so "é" loses its accent.
struct StripAccentsNormalizer final : Normalizer {
    std::string normalize(const std::string& text) const override {
        return filter_characters(text, [](char32_t c) { return !is_mark(c); });
    }
};

// BERT's: control characters out and every whitespace a space; CJK ideographs between spaces;
// accents stripped (NFD, then Mn out); lowercase.
struct BertNormalizer final : Normalizer {
    bool clean_text = true, handle_chinese_chars = true, strip_accents = true, lowercase = true;

    static bool is_chinese(char32_t c) {
        return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
               (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
               (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
    }

    std::string normalize(const std::string& input) const override {
        std::string text = input;
        if (clean_text) {
            std::string out;
            for (std::size_t i = 0; i < text.size();) {
                const auto [c, length] = code_point_at(text, i);
                i += length;
                const bool whitespace = c == '\t' || c == '\n' || c == '\r' || is_white_space(c);
                const bool control = c != '\t' && c != '\n' && c != '\r' && is_other(c);
                if (c == 0 || c == 0xFFFD || control) continue;
                if (whitespace) out += ' ';
                else append_utf8(out, c);
            }
            text = std::move(out);
        }
        if (handle_chinese_chars) {
            std::string out;
            for (std::size_t i = 0; i < text.size();) {
                const auto [c, length] = code_point_at(text, i);
                if (is_chinese(c)) out += ' ';
                out.append(text, i, length);
                if (is_chinese(c)) out += ' ';
                i += length;
            }
            text = std::move(out);
        }
        if (strip_accents)
            text = filter_characters(tok::normalize(text, NormalForm::NFD), [](char32_t c) { return !is_nonspacing_mark(c); });
        if (lowercase) text = tok::lowercase(text);
        return text;
    }
};

}  // namespace

std::vector<std::unique_ptr<Normalizer>> read_normalizer(const json& value, const std::string& where) {
    std::vector<std::unique_ptr<Normalizer>> out;
    if (value.is_null()) return out;
    const Object o(value, where);
    const std::string type =
        type_of(o, {"Sequence", "NFC", "NFD", "NFKC", "NFKD", "Lowercase", "Prepend", "Replace", "Strip", "StripAccents", "BertNormalizer"});
    if (type == "Sequence") {
        o.only({"type", "normalizers"});
        const json& list = o.required("normalizers");
        if (!list.is_array()) refuse(o.at("normalizers"), "expected a list of normalizers, found " + shown(list));
        for (std::size_t i = 0; i < list.size(); ++i) {
            if (list[i].is_null()) refuse(o.at("normalizers") + "[" + std::to_string(i) + "]", "expected a normalizer, found null");
            for (auto& n : read_normalizer(list[i], o.at("normalizers") + "[" + std::to_string(i) + "]")) out.push_back(std::move(n));
        }
    } else if (type == "NFC" || type == "NFD" || type == "NFKC" || type == "NFKD") {
        o.only({"type"});
        out.push_back(std::make_unique<FormNormalizer>(type == "NFC"    ? NormalForm::NFC
                                                       : type == "NFD"  ? NormalForm::NFD
                                                       : type == "NFKC" ? NormalForm::NFKC
                                                                        : NormalForm::NFKD));
    } else if (type == "Lowercase") {
        o.only({"type"});
        out.push_back(std::make_unique<LowercaseNormalizer>());
    } else if (type == "Prepend") {
        o.only({"type", "prepend"});
        auto n = std::make_unique<PrependNormalizer>();
        n->prepend = o.string("prepend");
        out.push_back(std::move(n));
    } else if (type == "Replace") {
        o.only({"type", "pattern", "content"});
        out.push_back(std::make_unique<ReplaceNormalizer>(read_pattern(o.required("pattern"), o.at("pattern")), o.string("content")));
    } else if (type == "Strip") {
        o.only({"type", "strip_left", "strip_right"});
        auto n = std::make_unique<StripNormalizer>();
        n->left = o.boolean("strip_left", true);
        n->right = o.boolean("strip_right", true);
        out.push_back(std::move(n));
    } else if (type == "StripAccents") {
        o.only({"type"});
        out.push_back(std::make_unique<StripAccentsNormalizer>());
    } else {   // BertNormalizer
        o.only({"type", "clean_text", "handle_chinese_chars", "strip_accents", "lowercase"});
        auto n = std::make_unique<BertNormalizer>();
        n->clean_text = o.boolean("clean_text", true);
        n->handle_chinese_chars = o.boolean("handle_chinese_chars", true);
        n->lowercase = o.boolean("lowercase", true);
        // strip_accents null (or absent) follows lowercase, as the library's does.
        n->strip_accents = o.optional_boolean("strip_accents").value_or(n->lowercase);
        out.push_back(std::move(n));
    }
    if (type != "Sequence") out.back()->where = where + " (" + type + ")";  // named as the file places it
    return out;
}

// [SECTION] Splitting pieces (the library's find_matches and SplitDelimiterBehavior)

std::vector<Span> spans_of(const std::vector<std::pair<std::size_t, std::size_t>>& matches, std::size_t length) {
    if (length == 0) return {{0, 0, false}};
    std::vector<Span> spans;
    std::size_t previous = 0;
    for (const auto& [begin, end] : matches) {
        if (previous != begin) spans.push_back({previous, begin, false});
        spans.push_back({begin, end, true});
        previous = end;
    }
    if (previous != length) spans.push_back({previous, length, false});
    return spans;
}

std::vector<Span> character_spans(const std::string& text, const std::function<bool(char32_t)>& is_match) {
    if (text.empty()) return {{0, 0, false}};
    std::vector<Span> spans;
    std::size_t last = 0;
    for (std::size_t i = 0; i < text.size();) {
        const auto [c, length] = code_point_at(text, i);
        if (is_match(c)) {
            if (last < i) spans.push_back({last, i, false});
            spans.push_back({i, i + length, true});
            last = i + length;
        }
        i += length;
    }
    if (text.size() > last) spans.push_back({last, text.size(), false});
    return spans;
}

namespace {

// The spans merged as behavior says; the result's is_match means "remove".
std::vector<Span> apply_behavior(std::vector<Span> spans, Behavior behavior) {
    std::vector<Span> out;
    bool previous_match = false;
    switch (behavior) {
        case Behavior::Removed: return spans;
        case Behavior::Isolated:
            for (Span& s : spans) s.is_match = false;
            return spans;
        case Behavior::Contiguous:
            for (const Span& s : spans) {
                if (s.is_match == previous_match && !out.empty()) out.back().end = s.end;
                else out.push_back({s.begin, s.end, false});
                previous_match = s.is_match;
            }
            return out;
        case Behavior::MergedWithPrevious:
            for (const Span& s : spans) {
                if (s.is_match && !previous_match && !out.empty()) out.back().end = s.end;
                else out.push_back({s.begin, s.end, false});
                previous_match = s.is_match;
            }
            return out;
        case Behavior::MergedWithNext:
            for (auto it = spans.rbegin(); it != spans.rend(); ++it) {
                if (it->is_match && !previous_match && !out.empty()) out.back().begin = it->begin;
                else out.push_back({it->begin, it->end, false});
                previous_match = it->is_match;
            }
            std::reverse(out.begin(), out.end());
            return out;
    }
    return spans;
}

}  // namespace

void split_pieces(std::vector<Piece>& pieces, Behavior behavior, bool invert,
                  const std::function<std::vector<Span>(const std::string&)>& find) {
    std::vector<Piece> out;
    out.reserve(pieces.size());
    for (const Piece& piece : pieces) {
        std::vector<Span> spans = find(piece.text);
        if (invert)
            for (Span& s : spans) s.is_match = !s.is_match;
        for (const Span& s : apply_behavior(std::move(spans), behavior)) {
            if (s.is_match || s.end == s.begin) continue;   // removed, or empty
            out.push_back({piece.text.substr(s.begin, s.end - s.begin), piece.at_text_start && s.begin == 0});
        }
    }
    pieces = std::move(out);
}

// [SECTION] Pre-tokenizers

namespace {

Behavior read_behavior(const Object& o, const char* key, std::optional<Behavior> fallback) {
    const json* value = o.find(key);
    if (!value && fallback) return *fallback;
    if (!value) refuse(o.at(key), "missing (expected one of Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous)");
    const std::string name = value->is_string() ? value->get<std::string>() : "";
    if (name == "Removed") return Behavior::Removed;
    if (name == "Isolated") return Behavior::Isolated;
    if (name == "MergedWithPrevious") return Behavior::MergedWithPrevious;
    if (name == "MergedWithNext") return Behavior::MergedWithNext;
    if (name == "Contiguous") return Behavior::Contiguous;
    refuse(o.at(key), shown(*value) + " is not a behavior (supported: Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous)");
}

struct SplitPre final : PreTokenizer {
    Regex pattern;
    Behavior behavior;
    bool invert;
    SplitPre(Regex p, Behavior b, bool i) : pattern(std::move(p)), behavior(b), invert(i) {}
    void split(std::vector<Piece>& pieces) const override {
        split_pieces(pieces, behavior, invert, [this](const std::string& text) { return spans_of(pattern.find_all(text), text.size()); });
    }
};

// GPT-2's: a space before each piece (add_prefix_space), GPT-2's word pattern (use_regex),
// then every byte as its symbol ("Ġ" for a space).
struct ByteLevelPre final : PreTokenizer {
    bool add_prefix_space = false, use_regex = true;
    void split(std::vector<Piece>& pieces) const override {
        std::vector<Piece> words;
        for (Piece& piece : pieces) {
            if (add_prefix_space && (piece.text.empty() || piece.text[0] != ' ')) piece.text.insert(0, " ");
            if (!use_regex) {
                words.push_back(std::move(piece));
                continue;
            }
            bool first = true;
            for (std::string& word : split_words(piece.text)) {
                words.push_back({std::move(word), piece.at_text_start && first});
                first = false;
            }
        }
        const auto& symbols = bytes_to_unicode();
        for (Piece& word : words) {
            std::string mapped;
            mapped.reserve(word.text.size() * 2);
            for (const char c : word.text) mapped += symbols[static_cast<unsigned char>(c)];
            word.text = std::move(mapped);
        }
        pieces.clear();
        for (Piece& word : words)
            if (!word.text.empty()) pieces.push_back(std::move(word));
    }
};

enum class PrependScheme { First, Always, Never };

// SentencePiece's space: every " " becomes the replacement, one is put before the piece as
// prepend_scheme says, and the piece is cut before each replacement (split).
struct MetaspacePre final : PreTokenizer {
    std::string replacement = "\xE2\x96\x81";
    PrependScheme prepend = PrependScheme::Always;
    bool split_words = true;
    void split(std::vector<Piece>& pieces) const override {
        for (Piece& piece : pieces) {
            std::string replaced;
            for (const char c : piece.text) {
                if (c == ' ') replaced += replacement;
                else replaced += c;
            }
            const bool starts = replaced.compare(0, replacement.size(), replacement) == 0;
            if (!starts && (prepend == PrependScheme::Always || (prepend == PrependScheme::First && piece.at_text_start)))
                replaced.insert(0, replacement);
            piece.text = std::move(replaced);
        }
        if (!split_words) return;
        const Regex pattern = Regex::literal(replacement);
        split_pieces(pieces, Behavior::MergedWithNext, false,
                     [&pattern](const std::string& text) { return spans_of(pattern.find_all(text), text.size()); });
    }
};

struct CharacterSplitPre final : PreTokenizer {
    std::function<bool(char32_t)> is_match;
    Behavior behavior;
    CharacterSplitPre(std::function<bool(char32_t)> m, Behavior b) : is_match(std::move(m)), behavior(b) {}
    void split(std::vector<Piece>& pieces) const override {
        split_pieces(pieces, behavior, false, [this](const std::string& text) { return character_spans(text, is_match); });
    }
};

// Whitespace: the runs of \w+ and of [^\w\s]+ are kept, the rest removed. This one pattern is
// the Rust regex crate's, not Oniguruma's: its \w is Alphabetic, M, Nd, Pc and Join_Control
// (a ZWJ between emoji is a word character).
struct WhitespacePre final : PreTokenizer {
    Regex pattern{R"([\p{Alphabetic}\p{M}\p{Nd}\p{Pc}\p{Join_Control}]+|[^\p{Alphabetic}\p{M}\p{Nd}\p{Pc}\p{Join_Control}\p{White_Space}]+)"};
    void split(std::vector<Piece>& pieces) const override {
        split_pieces(pieces, Behavior::Removed, true, [this](const std::string& text) { return spans_of(pattern.find_all(text), text.size()); });
    }
};

}  // namespace

std::vector<std::unique_ptr<PreTokenizer>> read_pre_tokenizer(const json& value, const std::string& where, std::string& metaspace,
                                                              bool& byte_level) {
    std::vector<std::unique_ptr<PreTokenizer>> out;
    if (value.is_null()) return out;
    const Object o(value, where);
    const std::string type = type_of(o, {"Sequence", "Split", "ByteLevel", "Metaspace", "BertPreTokenizer", "Whitespace", "WhitespaceSplit",
                                         "Digits", "Punctuation"});
    if (type == "Sequence") {
        o.only({"type", "pretokenizers"});
        const json& list = o.required("pretokenizers");
        if (!list.is_array()) refuse(o.at("pretokenizers"), "expected a list of pre-tokenizers, found " + shown(list));
        for (std::size_t i = 0; i < list.size(); ++i) {
            const std::string at = o.at("pretokenizers") + "[" + std::to_string(i) + "]";
            if (list[i].is_null()) refuse(at, "expected a pre-tokenizer, found null");
            for (auto& p : read_pre_tokenizer(list[i], at, metaspace, byte_level)) out.push_back(std::move(p));
        }
    } else if (type == "Split") {
        o.only({"type", "pattern", "behavior", "invert"});
        out.push_back(std::make_unique<SplitPre>(read_pattern(o.required("pattern"), o.at("pattern")), read_behavior(o, "behavior", std::nullopt),
                                                 o.boolean("invert", false)));
    } else if (type == "ByteLevel") {
        o.only({"type", "add_prefix_space", "trim_offsets", "use_regex"});
        auto p = std::make_unique<ByteLevelPre>();
        p->add_prefix_space = o.boolean("add_prefix_space", true);
        p->use_regex = o.boolean("use_regex", true);
        (void)o.boolean("trim_offsets", true);   // offsets only: the ids do not change
        byte_level = true;
        out.push_back(std::move(p));
    } else if (type == "Metaspace") {
        o.only({"type", "replacement", "prepend_scheme", "split", "add_prefix_space", "str_rep"});
        auto p = std::make_unique<MetaspacePre>();
        p->replacement = o.optional_string("replacement").value_or("\xE2\x96\x81");
        if (code_point_count(p->replacement) != 1)
            refuse(o.at("replacement"), shown(o.required("replacement")) + " is not one character");
        if (const auto rep = o.optional_string("str_rep"); rep && *rep != p->replacement)
            refuse(o.at("str_rep"), shown(*rep) + " differs from replacement " + shown(p->replacement));
        // Older files say add_prefix_space (true: always, false: never); prepend_scheme wins.
        p->prepend = o.boolean("add_prefix_space", true) ? PrependScheme::Always : PrependScheme::Never;
        if (const auto scheme = o.optional_string("prepend_scheme")) {
            if (*scheme == "first") p->prepend = PrependScheme::First;
            else if (*scheme == "always") p->prepend = PrependScheme::Always;
            else if (*scheme == "never") p->prepend = PrependScheme::Never;
            else refuse(o.at("prepend_scheme"), shown(*scheme) + " is not a prepend scheme (supported: first, always, never)");
        }
        p->split_words = o.boolean("split", true);
        metaspace = p->replacement;
        out.push_back(std::move(p));
    } else if (type == "BertPreTokenizer") {
        o.only({"type"});
        out.push_back(std::make_unique<CharacterSplitPre>(is_white_space, Behavior::Removed));
        out.push_back(std::make_unique<CharacterSplitPre>(is_punctuation, Behavior::Isolated));
    } else if (type == "Whitespace") {
        o.only({"type"});
        out.push_back(std::make_unique<WhitespacePre>());
    } else if (type == "WhitespaceSplit") {
        o.only({"type"});
        out.push_back(std::make_unique<CharacterSplitPre>(is_white_space, Behavior::Removed));
    } else if (type == "Digits") {
        o.only({"type", "individual_digits"});
        const bool individual = o.boolean("individual_digits", false);
        out.push_back(std::make_unique<CharacterSplitPre>(is_numeric, individual ? Behavior::Isolated : Behavior::Contiguous));
    } else {   // Punctuation
        o.only({"type", "behavior"});
        out.push_back(std::make_unique<CharacterSplitPre>(is_punctuation, read_behavior(o, "behavior", Behavior::Isolated)));
    }
    return out;
}

// [SECTION] Post-processors

std::vector<int> TemplatePost::process(std::vector<int> ids) const {
    std::vector<int> out;
    out.reserve(ids.size() + 4);
    for (const Item& item : items) {
        if (item.is_sequence) out.insert(out.end(), ids.begin(), ids.end());
        else out.insert(out.end(), item.ids.begin(), item.ids.end());
    }
    return out;
}

std::vector<int> SequencePost::process(std::vector<int> ids) const {
    for (const auto& p : processors) ids = p->process(std::move(ids));
    return ids;
}

namespace {

int read_id(const json& value, const std::string& where, const Pipeline& pipeline) {
    if (!value.is_number_integer() || value.get<long long>() < 0 || value.get<long long>() >= static_cast<long long>(pipeline.tokens.size()))
        refuse(where, "expected a token id from 0 to " + std::to_string(pipeline.tokens.size() - 1) + ", found " + shown(value));
    return value.get<int>();
}

// BertProcessing's and RobertaProcessing's ["[SEP]", 102].
int read_token_pair(const Object& o, const char* key, const Pipeline& pipeline) {
    const json& pair = o.required(key);
    if (!pair.is_array() || pair.size() != 2 || !pair[0].is_string())
        refuse(o.at(key), "expected [\"token\", id], found " + shown(pair));
    return read_id(pair[1], o.at(key) + "[1]", pipeline);
}

std::unique_ptr<PostProcessor> read_template(const Object& o, const Pipeline& pipeline) {
    o.only({"type", "single", "pair", "special_tokens"});
    auto t = std::make_unique<TemplatePost>();
    const json& special_tokens = o.required("special_tokens");
    if (!special_tokens.is_object()) refuse(o.at("special_tokens"), "expected an object, found " + shown(special_tokens));
    const json& single = o.required("single");
    if (!single.is_array()) refuse(o.at("single"), "expected a list of pieces, found " + shown(single));
    for (std::size_t i = 0; i < single.size(); ++i) {
        const std::string at = o.at("single") + "[" + std::to_string(i) + "]";
        if (!single[i].is_object() || single[i].size() != 1) refuse(at, "expected {\"SpecialToken\": …} or {\"Sequence\": …}, found " + shown(single[i]));
        const std::string kind = single[i].begin().key();
        const Object piece(single[i].begin().value(), at + "." + kind);
        piece.only({"id", "type_id"});
        const std::string id = piece.string("id");
        (void)piece.integer("type_id", 0, 0, 1 << 30);   // token type ids: not the input ids
        if (kind == "Sequence") {
            if (id != "A") refuse(piece.at("id"), shown(id) + ": a single sequence's template names only sequence A");
            t->items.push_back({true, {}});
        } else if (kind == "SpecialToken") {
            if (!special_tokens.contains(id)) refuse(piece.at("id"), shown(id) + " is not in " + o.at("special_tokens"));
            const Object special(special_tokens.at(id), o.at("special_tokens") + "." + id);
            special.only({"id", "ids", "tokens"});
            const json& ids = special.required("ids");
            if (!ids.is_array()) refuse(special.at("ids"), "expected a list of ids, found " + shown(ids));
            TemplatePost::Item item{false, {}};
            for (std::size_t k = 0; k < ids.size(); ++k) item.ids.push_back(read_id(ids[k], special.at("ids") + "[" + std::to_string(k) + "]", pipeline));
            t->items.push_back(std::move(item));
        } else {
            refuse(at, shown(kind) + " is not a template piece (supported: SpecialToken, Sequence)");
        }
    }
    return t;
}

}  // namespace

std::vector<std::unique_ptr<PostProcessor>> read_post_processor(const json& value, const std::string& where, const Pipeline& pipeline) {
    std::vector<std::unique_ptr<PostProcessor>> out;
    if (value.is_null()) return out;
    const Object o(value, where);
    const std::string type = type_of(o, {"TemplateProcessing", "BertProcessing", "RobertaProcessing", "ByteLevel", "Sequence"});
    if (type == "TemplateProcessing") {
        out.push_back(read_template(o, pipeline));
    } else if (type == "BertProcessing" || type == "RobertaProcessing") {
        if (type == "BertProcessing") o.only({"type", "sep", "cls"});
        else o.only({"type", "sep", "cls", "trim_offsets", "add_prefix_space"});   // the last two: offsets only
        auto t = std::make_unique<TemplatePost>();
        t->items.push_back({false, {read_token_pair(o, "cls", pipeline)}});
        t->items.push_back({true, {}});
        t->items.push_back({false, {read_token_pair(o, "sep", pipeline)}});
        out.push_back(std::move(t));
    } else if (type == "ByteLevel") {
        o.only({"type", "add_prefix_space", "trim_offsets", "use_regex"});   // offsets only: the ids stay
    } else {   // Sequence
        o.only({"type", "processors"});
        const json& list = o.required("processors");
        if (!list.is_array()) refuse(o.at("processors"), "expected a list of post-processors, found " + shown(list));
        for (std::size_t i = 0; i < list.size(); ++i) {
            const std::string at = o.at("processors") + "[" + std::to_string(i) + "]";
            if (list[i].is_null()) refuse(at, "expected a post-processor, found null");
            for (auto& p : read_post_processor(list[i], at, pipeline)) out.push_back(std::move(p));
        }
    }
    return out;
}

}  // namespace attn::tok
