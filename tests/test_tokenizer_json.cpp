// Hugging Face tokenizer.json files: each model, normalizer, pre-tokenizer, added-token rule
// and post-processor on small hand-written files; every refusal; and (tagged [reference], run
// by ctest after npm installs the Rust library) real files id for id against the library.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "fuzz/fuzz_tokenizer.hpp"
#include "tokenizer/bpe.hpp"
#include "joined.hpp"
#include "tokenizer/text.hpp"
#include "tokenizer/tokenizer_json.hpp"
#include "tensor/random.hpp"

using namespace attn;
using namespace attn::tok;
using attn::testing::joined;
using Catch::Matchers::Contains;
using nlohmann::json;

namespace {

// A tokenizer.json from its parts; the model's other keys as BPE's defaults.
json document(json model, json normalizer = nullptr, json pre_tokenizer = nullptr, json post_processor = nullptr,
              json added_tokens = json::array()) {
    return {{"version", "1.0"},          {"truncation", nullptr},          {"padding", nullptr},
            {"added_tokens", added_tokens}, {"normalizer", normalizer},    {"pre_tokenizer", pre_tokenizer},
            {"post_processor", post_processor}, {"decoder", nullptr},      {"model", model}};
}

json bpe(json vocab, json merges, json more = json::object()) {
    json m = {{"type", "BPE"}, {"dropout", nullptr}, {"unk_token", nullptr}, {"continuing_subword_prefix", nullptr},
              {"end_of_word_suffix", nullptr}, {"fuse_unk", false}, {"byte_fallback", false}, {"vocab", vocab}, {"merges", merges}};
    for (auto& [k, v] : more.items()) m[k] = v;
    return m;
}

// The 256 byte symbols ("Ġ" for a space) as ids 0…255, then `more` from 256 on.
json byte_level_vocab(const std::vector<std::string>& more) {
    json vocab = json::object();
    int id = 0;
    for (const std::string& symbol : tok::bytes_to_unicode()) vocab[symbol] = id++;
    for (const std::string& token : more) vocab[token] = id++;
    return vocab;
}

// "<0x00>"…"<0xFF>" as ids 0…255 (every text encodes through byte_fallback), then `more`.
json byte_fallback_vocab(const std::vector<std::string>& more) {
    json vocab = json::object();
    int id = 0;
    for (int b = 0; b < 256; ++b) {
        char name[8];
        std::snprintf(name, sizeof name, "<0x%02X>", b);
        vocab[name] = id++;
    }
    for (const std::string& token : more) vocab[token] = id++;
    return vocab;
}

TokenizerJson load(const json& doc) {
    std::vector<std::string> errors;
    auto t = TokenizerJson::from_text(doc.dump(), "tokenizer.json", errors);
    INFO(joined(errors));
    REQUIRE(t);
    return *t;
}

std::string refusal(const json& doc) {
    std::vector<std::string> errors;
    const auto t = TokenizerJson::from_text(doc.dump(), "tokenizer.json", errors);
    CHECK_FALSE(t);
    REQUIRE(errors.size() == 1);
    return errors[0];
}

std::vector<std::string> tokens(const TokenizerJson& t, const std::string& text) {
    std::vector<std::string> out;
    for (const int id : t.encode(text)) out.push_back(t.token(id));
    return out;
}

// A tokenizer that shows a normalizer's output: no pre-tokenizer, every byte its own token.
TokenizerJson normalizing(const json& normalizer) {
    return load(document(bpe(byte_fallback_vocab({}), json::array(), {{"byte_fallback", true}}), normalizer));
}

std::string bytes_of(const TokenizerJson& t, const std::string& text) {
    std::string out;
    for (const int id : t.encode(text)) out += static_cast<char>(id);
    return out;
}

// A tokenizer that shows a pre-tokenizer's words.
TokenizerJson pre_tokenizing(const json& pre_tokenizer, const json& added = json::array()) {
    return load(document(bpe(byte_fallback_vocab({}), json::array(), {{"byte_fallback", true}}), nullptr, pre_tokenizer, nullptr, added));
}

json split(json pattern, const char* behavior, bool invert = false) {
    return {{"type", "Split"}, {"pattern", pattern}, {"behavior", behavior}, {"invert", invert}};
}

using Words = std::vector<std::string>;

}  // namespace

// [SECTION] Models

TEST_CASE("byte-level BPE merges by rank and shows each token's text", "[tokenizer]") {
    const json vocab = byte_level_vocab({"Ġc", "at", "Ġcat", "th", "the"});
    const auto t = load(document(bpe(vocab, {"Ġ c", "a t", "Ġc at", "t h", "th e"}), nullptr,
                                 {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", true}}));
    CHECK(tokens(t, "the cat") == Words{"the", "Ġcat"});
    CHECK(tokens(t, "the  cat") == Words{"the", "Ġ", "Ġcat"});
    CHECK(t.piece(*t.id("Ġcat")) == " cat");
    CHECK(t.piece(*t.id("Ċ")) == "\n");
    // é is C3 A9: two byte symbols, each a piece of one byte.
    const auto ids = t.encode("é");
    REQUIRE(ids.size() == 2);
    CHECK(t.piece(ids[0]) == "\xC3");
    CHECK(t.piece(ids[1]) == "\xA9");
    // The same merges as pairs give the same ids.
    const auto pairs = load(document(bpe(vocab, json::array({json::array({"Ġ", "c"}), json::array({"a", "t"}), json::array({"Ġc", "at"}),
                                                 json::array({"t", "h"}), json::array({"th", "e"})})), nullptr,
                                     {{"type", "ByteLevel"}, {"add_prefix_space", false}}));
    CHECK(pairs.encode("the cat") == t.encode("the cat"));
    // add_prefix_space: "the" becomes " the".
    const auto prefixed = load(document(bpe(vocab, {"Ġ c", "a t", "Ġc at"}), nullptr, {{"type", "ByteLevel"}, {"add_prefix_space", true}}));
    CHECK(tokens(prefixed, "cat") == Words{"Ġcat"});
}

TEST_CASE("BPE: the lower rank merges first, and a pair listed twice keeps its later rank", "[tokenizer]") {
    const json vocab = byte_fallback_vocab({"a", "b", "c", "ab", "bc"});
    CHECK(tokens(load(document(bpe(vocab, {"a b", "b c"}))), "abc") == Words{"ab", "c"});
    CHECK(tokens(load(document(bpe(vocab, {"b c", "a b"}))), "abc") == Words{"a", "bc"});
    CHECK(tokens(load(document(bpe(vocab, {"a b", "b c", "a b"}))), "abc") == Words{"a", "bc"});
}

TEST_CASE("BPE ignore_merges takes a word the vocabulary holds whole", "[tokenizer]") {
    const json vocab = byte_fallback_vocab({"a", "b", "c", "abc"});
    CHECK(tokens(load(document(bpe(vocab, json::array(), {{"ignore_merges", true}}))), "abc") == Words{"abc"});
    CHECK(tokens(load(document(bpe(vocab, json::array(), {{"ignore_merges", false}}))), "abc") == Words{"a", "b", "c"});
}

TEST_CASE("BPE byte_fallback, unk_token and fuse_unk", "[tokenizer]") {
    const json vocab = byte_fallback_vocab({"<unk>", "a", "\xE2\x96\x81"});
    const auto fallback = load(document(bpe(vocab, json::array(), {{"byte_fallback", true}, {"unk_token", "<unk>"}})));
    CHECK(tokens(fallback, "a€") == Words{"a", "<0xE2>", "<0x82>", "<0xAC>"});
    CHECK(fallback.piece(*fallback.id("<0xE2>")) == "\xE2");
    CHECK(fallback.piece(*fallback.id("\xE2\x96\x81")) == " ");
    const json no_bytes = {{"<unk>", 0}, {"a", 1}};
    CHECK(tokens(load(document(bpe(no_bytes, json::array(), {{"unk_token", "<unk>"}, {"fuse_unk", true}}))), "a€€a") ==
          Words{"a", "<unk>", "a"});
    CHECK(tokens(load(document(bpe(no_bytes, json::array(), {{"unk_token", "<unk>"}, {"fuse_unk", false}}))), "a€€a") ==
          Words{"a", "<unk>", "<unk>", "a"});
    // No unknown token: a character the vocabulary lacks is dropped.
    CHECK(tokens(load(document(bpe(no_bytes, json::array()))), "a€a") == Words{"a", "a"});
}

TEST_CASE("BPE continuing_subword_prefix and end_of_word_suffix", "[tokenizer]") {
    const json vocab = {{"a", 0}, {"##b", 1}, {"##c</w>", 2}, {"a##b", 3}, {"ab", 4}, {"ab##c</w>", 5}, {"abc</w>", 6}};
    const auto t = load(document(bpe(vocab, {"a ##b", "ab ##c</w>"}, {{"continuing_subword_prefix", "##"}, {"end_of_word_suffix", "</w>"}})));
    CHECK(tokens(t, "abc") == Words{"abc</w>"});
}

TEST_CASE("WordPiece: longest piece first, ## after the first, one [UNK] for a word no pieces cover", "[tokenizer]") {
    const json model = {{"type", "WordPiece"}, {"unk_token", "[UNK]"}, {"continuing_subword_prefix", "##"}, {"max_input_chars_per_word", 12},
                        {"vocab", {{"[UNK]", 0}, {"un", 1}, {"##aff", 2}, {"##able", 3}, {"run", 4}, {"##ning", 5}, {"##n", 6}}}};
    const auto t = load(document(model, nullptr, {{"type", "WhitespaceSplit"}}));
    CHECK(tokens(t, "unaffable running") == Words{"un", "##aff", "##able", "run", "##ning"});
    CHECK(tokens(t, "unx run") == Words{"[UNK]", "run"});
    CHECK(tokens(t, "unaffableunaffable") == Words{"[UNK]"});   // over max_input_chars_per_word
    CHECK(t.piece(*t.id("##aff")) == "aff");
    CHECK(t.piece(*t.id("run")) == "run");
}

// [SECTION] Normalizers

TEST_CASE("normalizers: forms, case, Prepend, Replace, Strip, StripAccents, Sequence", "[tokenizer]") {
    CHECK(bytes_of(normalizing({{"type", "NFC"}}), "e\xCC\x81") == "\xC3\xA9");
    CHECK(bytes_of(normalizing({{"type", "NFD"}}), "\xC3\xA9") == "e\xCC\x81");
    CHECK(bytes_of(normalizing({{"type", "NFKC"}}), "\xEF\xAC\x81") == "fi");   // ﬁ
    CHECK(bytes_of(normalizing({{"type", "NFKD"}}), "\xE2\x91\xA0") == "1");    // ①
    CHECK(bytes_of(normalizing({{"type", "Lowercase"}}), "HeLLo \xC3\x89\xCE\xA3") == "hello \xC3\xA9\xCF\x83");   // ÉΣ → éσ
    CHECK(bytes_of(normalizing({{"type", "Prepend"}, {"prepend", "_"}}), "ab") == "_ab");
    CHECK(bytes_of(normalizing({{"type", "Prepend"}, {"prepend", "_"}}), "").empty());
    CHECK(bytes_of(normalizing({{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "_"}}), "a b  c") == "a_b__c");
    CHECK(bytes_of(normalizing({{"type", "Replace"}, {"pattern", {{"Regex", " +"}}}, {"content", "."}}), "a b  c") == "a.b.c");
    CHECK(bytes_of(normalizing({{"type", "Strip"}, {"strip_left", true}, {"strip_right", false}}), " \t a ") == "a ");
    CHECK(bytes_of(normalizing({{"type", "Strip"}, {"strip_left", true}, {"strip_right", true}}), " \t a \n") == "a");
    CHECK(bytes_of(normalizing({{"type", "Sequence"}, {"normalizers", {{{"type", "NFD"}}, {{"type", "StripAccents"}}}}}), "caf\xC3\xA9") == "cafe");
    CHECK(bytes_of(normalizing(nullptr), "As It Is") == "As It Is");
}

TEST_CASE("BertNormalizer: clean text, CJK, accents (null follows lowercase), lowercase", "[tokenizer]") {
    const json all = {{"type", "BertNormalizer"}, {"clean_text", true}, {"handle_chinese_chars", true}, {"strip_accents", nullptr}, {"lowercase", true}};
    CHECK(bytes_of(normalizing(all), "Caf\xC3\xA9\tOK\x01\xE4\xB8\xAD") == "cafe ok \xE4\xB8\xAD ");
    json cased = all;
    cased["lowercase"] = false;
    CHECK(bytes_of(normalizing(cased), "Caf\xC3\xA9") == "Caf\xC3\xA9");   // strip_accents null: follows lowercase
    cased["strip_accents"] = true;
    CHECK(bytes_of(normalizing(cased), "Caf\xC3\xA9") == "Cafe");
}

// [SECTION] Pre-tokenizers

TEST_CASE("Split: each behavior, invert, String and Regex patterns", "[tokenizer]") {
    const json dash = {{"String", "-"}};
    CHECK(pre_tokenizing(split(dash, "Removed")).words("a-b--c") == Words{"a", "b", "c"});
    CHECK(pre_tokenizing(split(dash, "Isolated")).words("a-b--c") == Words{"a", "-", "b", "-", "-", "c"});
    CHECK(pre_tokenizing(split(dash, "MergedWithPrevious")).words("a-b--c") == Words{"a-", "b-", "-", "c"});
    CHECK(pre_tokenizing(split(dash, "MergedWithNext")).words("a-b--c") == Words{"a", "-b", "-", "-c"});
    CHECK(pre_tokenizing(split(dash, "Contiguous")).words("a-b--c") == Words{"a", "-", "b", "--", "c"});
    CHECK(pre_tokenizing(split({{"Regex", "[a-z]+"}}, "Removed", true)).words("ab12cd") == Words{"ab", "cd"});
    // Oniguruma's \s is White_Space: U+180E is not a space (PCRE2's own \s would say it is).
    CHECK(pre_tokenizing(split({{"Regex", "\\s+"}}, "Removed")).words("a \xE1\xA0\x8E b") == Words{"a", "\xE1\xA0\x8E", "b"});
}

TEST_CASE("ByteLevel, Metaspace, Whitespace, WhitespaceSplit, BertPreTokenizer, Digits, Punctuation", "[tokenizer]") {
    CHECK(pre_tokenizing({{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}}).words("I'm  ok") ==
          Words{"I", "'m", "Ġ", "Ġok"});
    CHECK(pre_tokenizing({{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}}).words("I'm ok") == Words{"I'mĠok"});
    const json meta = {{"type", "Metaspace"}, {"replacement", "\xE2\x96\x81"}, {"prepend_scheme", "always"}, {"split", true}};
    CHECK(pre_tokenizing(meta).words("a b") == Words{"\xE2\x96\x81" "a", "\xE2\x96\x81" "b"});
    json unsplit = meta;
    unsplit["split"] = false;
    unsplit["prepend_scheme"] = "never";
    CHECK(pre_tokenizing(unsplit).words("a b") == Words{"a\xE2\x96\x81" "b"});
    // "first": only the piece at the text's start gets the ▁, not one after an added token.
    json first = meta;
    first["prepend_scheme"] = "first";
    const json added = {{{"id", 256}, {"content", "<s>"}, {"special", true}, {"normalized", false}, {"lstrip", false}, {"rstrip", false}, {"single_word", false}}};
    const auto t = load(document(bpe(byte_fallback_vocab({}), json::array(), {{"byte_fallback", true}}), nullptr, first, nullptr, added));
    CHECK(t.words("a<s>b") == Words{"\xE2\x96\x81" "a", "<s>", "b"});
    CHECK(pre_tokenizing({{"type", "Whitespace"}}).words("Hi, you!  ok") == Words{"Hi", ",", "you", "!", "ok"});
    CHECK(pre_tokenizing({{"type", "WhitespaceSplit"}}).words("Hi, you!\t ok") == Words{"Hi,", "you!", "ok"});
    CHECK(pre_tokenizing({{"type", "BertPreTokenizer"}}).words("Hi, you!! ok") == Words{"Hi", ",", "you", "!", "!", "ok"});
    CHECK(pre_tokenizing({{"type", "Digits"}, {"individual_digits", true}}).words("a123") == Words{"a", "1", "2", "3"});
    CHECK(pre_tokenizing({{"type", "Digits"}, {"individual_digits", false}}).words("a123b") == Words{"a", "123", "b"});
    CHECK(pre_tokenizing({{"type", "Punctuation"}, {"behavior", "Isolated"}}).words("a,b") == Words{"a", ",", "b"});
    CHECK(pre_tokenizing({{"type", "Sequence"}, {"pretokenizers", {{{"type", "WhitespaceSplit"}}, {{"type", "Digits"}, {"individual_digits", true}}}}})
              .words("ab 12") == Words{"ab", "1", "2"});
}

// [SECTION] Added tokens

TEST_CASE("added tokens: raw text first, longest first, single_word, lstrip, rstrip, normalized", "[tokenizer]") {
    auto token = [](int id, const char* content, bool special, bool normalized) {
        return json{{"id", id}, {"content", content}, {"special", special}, {"normalized", normalized},
                    {"lstrip", false}, {"rstrip", false}, {"single_word", false}};
    };
    json added = json::array({token(256, "<a>", true, false), token(257, "<ab>", true, false), token(258, "hello", false, true)});
    const json ws = {{"type", "WhitespaceSplit"}};
    auto t = load(document(bpe(byte_fallback_vocab({}), json::array(), {{"byte_fallback", true}}), {{"type", "Lowercase"}}, ws, nullptr, added));
    CHECK(t.words("x<ab>y<a>") == Words{"x", "<ab>", "y", "<a>"});
    CHECK(t.words("HELLO<A>") == Words{"hello", "<a>"});   // hello after lowercase; <A> is not <a> in the raw text
    CHECK(t.is_special(256));
    CHECK_FALSE(t.is_special(258));
    added[0]["single_word"] = true;
    t = load(document(bpe(byte_fallback_vocab({}), json::array(), {{"byte_fallback", true}}), nullptr, ws, nullptr, added));
    CHECK(t.words("x<a> <a>") == Words{"x<a>", "<a>"});
    added[0]["single_word"] = false;
    added[0]["lstrip"] = true;
    added[0]["rstrip"] = true;
    const json meta = {{"type", "Metaspace"}, {"replacement", "\xE2\x96\x81"}, {"prepend_scheme", "never"}, {"split", true}};
    t = load(document(bpe(byte_fallback_vocab({}), json::array(), {{"byte_fallback", true}}), nullptr, meta, nullptr, added));
    CHECK(t.words("x  <a>  y") == Words{"x", "<a>", "y"});
    CHECK(t.words("x  <ab>  y") == Words{"x", "\xE2\x96\x81", "\xE2\x96\x81", "<ab>", "\xE2\x96\x81", "\xE2\x96\x81" "y"});
    CHECK(t.piece(256) == "<a>");
}

// [SECTION] Post-processors

TEST_CASE("post-processors: TemplateProcessing, BertProcessing, RobertaProcessing, ByteLevel, Sequence", "[tokenizer]") {
    const json vocab = byte_fallback_vocab({"<s>", "</s>", "a"});
    const json model = bpe(vocab, json::array(), {{"byte_fallback", true}});
    const json template_post = {{"type", "TemplateProcessing"},
                                {"single", json::array({json{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}},
                                                        json{{"Sequence", {{"id", "A"}, {"type_id", 0}}}}})},
                                {"pair", nullptr},
                                {"special_tokens", {{"<s>", {{"id", "<s>"}, {"ids", {256}}, {"tokens", {"<s>"}}}}}}};
    CHECK(load(document(model, nullptr, nullptr, template_post)).encode("a") == std::vector<int>{256, 258});
    CHECK(load(document(model, nullptr, nullptr, template_post)).encode_without_special_tokens("a") == std::vector<int>{258});
    const json bert = {{"type", "BertProcessing"}, {"sep", {"</s>", 257}}, {"cls", {"<s>", 256}}};
    CHECK(load(document(model, nullptr, nullptr, bert)).encode("a") == std::vector<int>{256, 258, 257});
    const json roberta = {{"type", "RobertaProcessing"}, {"sep", {"</s>", 257}}, {"cls", {"<s>", 256}}, {"trim_offsets", true}, {"add_prefix_space", false}};
    CHECK(load(document(model, nullptr, nullptr, roberta)).encode("") == std::vector<int>{256, 257});
    const json byte_level = {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", false}, {"use_regex", true}};
    CHECK(load(document(model, nullptr, nullptr, {{"type", "Sequence"}, {"processors", {byte_level, template_post}}})).encode("a") ==
          std::vector<int>{256, 258});
}

// [SECTION] Refusals

TEST_CASE("refused: what would change the ids and is not implemented, and malformed files", "[tokenizer]") {
    const json vocab = byte_fallback_vocab({"a", "b", "ab"});
    const json good = document(bpe(vocab, {"a b"}));
    load(good);   // the base the faults below are made in
    auto with = [&](const char* key, json value) {
        json d = good;
        d[key] = value;
        return d;
    };
    auto model_with = [&](const char* key, json value) {
        json d = good;
        d["model"][key] = value;
        return d;
    };
    CHECK_THAT(refusal(model_with("type", "Unigram")), Contains("tokenizer.json: model.type: 'Unigram' is not supported (supported: BPE, WordPiece)"));
    CHECK_THAT(refusal(model_with("dropout", 0.1)), Contains("model.dropout: 0.1: BPE dropout makes the ids random; only null is supported"));
    CHECK_THAT(refusal(model_with("merges", {"ab"})), Contains("model.merges[0]: 'ab' is not \"left right\""));
    CHECK_THAT(refusal(model_with("merges", {"a c"})), Contains("model.merges[0]: 'c' is not in the vocabulary"));
    CHECK_THAT(refusal(model_with("merges", json::array({json::array({"a", 1})}))), Contains("model.merges[0]: expected \"left right\" or"));
    CHECK_THAT(refusal(model_with("vocab", json::array())), Contains("model.vocab: expected an object"));
    CHECK_THAT(refusal(model_with("vocab", {{"a", -1}})), Contains("model.vocab.'a': expected an id from 0"));
    CHECK_THAT(refusal(model_with("unk_token", "<unk>")), Contains("model.unk_token: '<unk>' is not in the vocabulary"));
    CHECK_THAT(refusal(model_with("fancy_option", true)), Contains("model.fancy_option: this key is not supported here"));
    CHECK_THAT(refusal(with("normalizer", {{"type", "Precompiled"}, {"precompiled_charsmap", "AAAA"}})),
               Contains("normalizer.type: 'Precompiled' is not supported (supported: Sequence, NFC"));
    CHECK_THAT(refusal(with("normalizer", {{"type", "Sequence"}, {"normalizers", {{{"type", "NFC"}}, {{"type", "Nmt"}}}}})),
               Contains("normalizer.normalizers[1].type: 'Nmt' is not supported"));
    CHECK_THAT(refusal(with("pre_tokenizer", {{"type", "UnicodeScripts"}})), Contains("pre_tokenizer.type: 'UnicodeScripts' is not supported"));
    CHECK_THAT(refusal(with("pre_tokenizer", split({{"Regex", "("}}, "Isolated"))), Contains("pre_tokenizer.pattern.Regex: the regular expression '(' does not compile"));
    CHECK_THAT(refusal(with("pre_tokenizer", split({{"String", "-"}}, "Sideways"))),
               Contains("pre_tokenizer.behavior: 'Sideways' is not a behavior (supported: Removed, Isolated"));
    CHECK_THAT(refusal(with("pre_tokenizer", {{"type", "Metaspace"}, {"prepend_scheme", "sometimes"}})),
               Contains("pre_tokenizer.prepend_scheme: 'sometimes' is not a prepend scheme"));
    CHECK_THAT(refusal(with("post_processor", {{"type", "Unknown"}})), Contains("post_processor.type: 'Unknown' is not supported"));
    CHECK_THAT(refusal(with("post_processor", {{"type", "BertProcessing"}, {"sep", {"[SEP]", 9999}}, {"cls", {"[CLS]", 0}}})),
               Contains("post_processor.sep[1]: expected a token id from 0 to"));
    CHECK_THAT(refusal(with("added_tokens", {{{"content", "<x>"}}})), Contains("added_tokens[0].id: missing"));
    CHECK_THAT(refusal(with("added_tokens", {{{"id", "x"}, {"content", "<x>"}}})), Contains("added_tokens[0].id: expected a whole number"));
    CHECK_THAT(refusal(with("surprise", 1)), Contains("surprise: this key is not supported here"));
    CHECK_THAT(refusal(with("model", nullptr)), Contains("model: expected an object, found null"));
    std::vector<std::string> errors;
    CHECK_FALSE(TokenizerJson::from_text("{\"model\": ", "tokenizer.json", errors));
    REQUIRE(errors.size() == 1);
    CHECK_THAT(errors[0], Contains("tokenizer.json: line 1"));
    errors.clear();
    CHECK_FALSE(TokenizerJson::load("/no/such/tokenizer.json", errors));
    CHECK_THAT(joined(errors), Contains("/no/such/tokenizer.json"));
}

// [SECTION] Texts that cannot be encoded faithfully: refused, never cut or slow

TEST_CASE("a pattern that hits PCRE2's match limit refuses the text, naming the pattern and the offset", "[tokenizer][hostile]") {
    const auto t = pre_tokenizing(split({{"Regex", "(a+)+c|b"}}, "Removed"));
    CHECK(t.words("aaaa xb yb") == Words{"aaaa x", " y"});
    // Forty a's make (a+)+ backtrack past the match limit at the first byte: before, that was
    // "no more matches" and the text went on as "x b ␣y b", every b kept.
    const std::string text = std::string(40, 'a') + "xb yb";
    CHECK_THROWS_AS(t.words(text), EncodeError);
    CHECK_THROWS_WITH(t.encode(text), Contains("the pattern '(a+)+c|b' failed at byte 0 of the 45-byte text") && Contains("limit"));
}

TEST_CASE("WordPiece: max_input_chars_per_word is bounded, and a long word's search stops at the longest entry", "[tokenizer][hostile]") {
    const json vocab = {{"[UNK]", 0}, {"a", 1}, {"##a", 2}, {"b", 3}};
    json model = {{"type", "WordPiece"}, {"unk_token", "[UNK]"}, {"continuing_subword_prefix", "##"},
                  {"max_input_chars_per_word", 1000000000000LL}, {"vocab", vocab}};
    CHECK_THAT(refusal(document(model)), Contains("max_input_chars_per_word") && Contains("1000"));
    model["max_input_chars_per_word"] = static_cast<long long>(kMaxWordPieceChars);
    const auto t = load(document(model, nullptr, {{"type", "WhitespaceSplit"}}));
    // A word of 1,000 letters: one piece each, every start trying at most 3 bytes (the longest
    // entry), not the rest of the word; 1,001 letters: one [UNK] before any search. (The
    // 20,000-letter word that took minutes is now over the bound: refused above, or [UNK].)
    const std::vector<int> ids = t.encode(std::string(kMaxWordPieceChars, 'a'));
    REQUIRE(ids.size() == kMaxWordPieceChars);
    CHECK(ids.front() == 1);
    CHECK(ids.back() == 2);
    CHECK(tokens(t, std::string(kMaxWordPieceChars + 1, 'a')) == Words{"[UNK]"});
    CHECK(tokens(t, "ab") == Words{"[UNK]"});   // "##b" is no entry: the word is unknown, as before
}

TEST_CASE("a Replace normalizer may not multiply the text past its bound, and says which one", "[tokenizer][hostile]") {
    const json replace_empty = {{"type", "Replace"}, {"pattern", {{"String", ""}}}, {"content", std::string(10000, 'x')}};
    const auto alone = normalizing(replace_empty);
    CHECK_THROWS_WITH(alone.encode(std::string(20000, 'a')),
                      Contains("normalizer (Replace)") && Contains("longer than " + std::to_string(20000 * kNormalizedGrowth + kNormalizedSlack)));
    // Each Replace within its own bound, the Sequence's compounding stopped at the text's.
    const json doubling = {{"type", "Replace"}, {"pattern", {{"String", "a"}}}, {"content", "aaaaaaaaaaaaaaaa"}};
    const auto twice = normalizing({{"type", "Sequence"}, {"normalizers", {doubling, doubling}}});
    CHECK_THROWS_WITH(twice.encode(std::string(2000, 'a')), Contains("normalizer.normalizers[1] (Replace) makes the text 512000 bytes from 2000"));
    CHECK(bytes_of(twice, "ab") == std::string(256, 'a') + "b");   // short texts are as they were
}

TEST_CASE("every input the tokenizer.json fuzzer ever crashed on runs without a crash", "[tokenizer]") {
    namespace fs = std::filesystem;
    int files = 0;
    for (const auto& entry : fs::directory_iterator(fs::path(ATTNLAB_FUZZ_REGRESSIONS) / "tokenizer")) {
        if (entry.path().filename() == "README.md") continue;
        INFO(entry.path().string());
        std::ifstream in(entry.path(), std::ios::binary);
        const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        CHECK(attn::fuzz::exercise_tokenizer(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()));
        ++files;
    }
    CHECK(files >= 1);
    // The seed loads: the replay runs the encoder, not only the loader.
    std::ifstream seed(fs::path(ATTNLAB_FUZZ_REGRESSIONS) / "tokenizer" / "seed-every-component", std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(seed)), std::istreambuf_iterator<char>());
    std::vector<std::string> errors;
    const auto t = TokenizerJson::from_text(bytes.substr(0, bytes.find('\x1E')), "seed", errors);
    INFO(joined(errors));
    REQUIRE(t);
    CHECK(t->encode("ab").front() == 1);
}

// [SECTION] Real files against the Rust library

TEST_CASE("real tokenizer.json files encode every text to the Rust library's ids", "[.][reference]") {
    std::ifstream in(ATTNLAB_TOKENIZER_REFERENCE);
    REQUIRE(in);   // written by the fixture (tests/tokenizers/reference.cmake)
    const json reference = json::parse(in);
    REQUIRE(reference.at("files").size() >= 4);
    for (const json& file : reference.at("files")) {
        const std::string name = file.at("name");
        std::vector<std::string> errors;
        const auto started = std::chrono::steady_clock::now();
        const auto t = TokenizerJson::load(file.at("file"), errors);
        const double load_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
        INFO(name << ": " << joined(errors));
        REQUIRE(t);
        int matched = 0;
        for (const json& c : file.at("cases")) {
            const std::string text = c.at("text");
            const auto expected = c.at("ids").get<std::vector<int>>();
            const auto ids = t->encode(text);
            std::ostringstream shown;
            for (const int id : ids) shown << id << " '" << t->token(id) << "' ";
            INFO(name << ": text '" << text << "'\n ours: " << shown.str() << "\n expected: " << json(expected).dump());
            CHECK(ids == expected);
            matched += ids == expected;
            // Llama 3 and Gemma 3 change nothing before the model: their pieces, joined, are the text.
            if (name == "llama3" || name == "gemma3") {
                std::string joined_pieces;
                for (const int id : t->encode_without_special_tokens(text)) joined_pieces += t->piece(id);
                CHECK(joined_pieces == text);
            }
        }
        // A paragraph of every text at once: its time is reported, not held to a limit (speed is
        // measured in bench/, never in a test); Llama 3's and Gemma 3's pieces still join to it.
        std::string paragraph;
        for (const json& c : file.at("cases")) paragraph += c.at("text").get<std::string>() + " ";
        const auto encode_started = std::chrono::steady_clock::now();
        const auto ids = t->encode(paragraph);
        const double encode_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - encode_started).count();
        WARN(name << ": " << matched << "/" << file.at("cases").size() << " texts match; loaded in " << load_seconds << " s; a paragraph of "
                  << paragraph.size() << " bytes → " << ids.size() << " ids in " << encode_ms << " ms");
        CHECK(ids.size() >= file.at("cases").size());
        if (name == "llama3" || name == "gemma3") {
            std::string joined_pieces;
            for (const int id : t->encode_without_special_tokens(paragraph)) joined_pieces += t->piece(id);
            CHECK(joined_pieces == paragraph);
        }
    }
}

TEST_CASE("GPT-2's vocab.json and merges.txt as transformers' converter makes a tokenizer.json of them", "[tokenizer]") {
    // Merges in the order training makes them (a result ranks after the merges of its pieces),
    // over words with and without their leading space: the library's BPE and GPT-2's bpe()
    // give the same ids, and so must the two readers.
    std::vector<std::pair<std::string, std::string>> merges = {{"\xC4\xA0", "t"}, {"h", "e"}, {"\xC4\xA0t", "he"}, {"a", "t"}};
    attn::Rng rng(11);
    std::vector<std::string> made = {"a", "b", "c", "\xC4\xA0", "\xC4\xA0t", "he", "at"};
    std::set<std::pair<std::string, std::string>> seen(merges.begin(), merges.end());
    while (merges.size() < 60) {
        const std::string& l = made[rng.next_u64() % made.size()];
        const std::string& r = made[rng.next_u64() % made.size()];
        // Training makes each token once: a result already made is not made again.
        if (r.rfind("\xC4\xA0", 0) == 0 || l.size() + r.size() > 10 || std::find(made.begin(), made.end(), l + r) != made.end() ||
            !seen.insert({l, r}).second)
            continue;
        merges.emplace_back(l, r);
        made.push_back(l + r);
    }
    std::vector<std::string> errors;
    const auto gpt2 = ByteLevelBpe::from_merges(merges, errors);
    REQUIRE(gpt2);
    const auto t = TokenizerJson::from_byte_level_bpe(*gpt2, "vocab.json", errors);
    INFO(joined(errors));
    REQUIRE(t);
    CHECK(t->size() == gpt2->size());
    std::vector<std::string> texts = {"the cat", " the  cat\n\n", "It's 2026; they'll've gone.", "\tcaf\xC3\xA9 \xE4\xBD\xA0\xE5\xA5\xBD \xF0\x9F\x98\x80",
                                      "bad \xFF\xC3 bytes", "   ", ""};
    for (int w = 0; w < 200; ++w) {
        std::string text;
        for (int n = 1 + static_cast<int>(rng.next_u64() % 12); n > 0; --n) text += " abcthe'\n"[rng.next_u64() % 9];
        texts.push_back(text);
    }
    for (const std::string& text : texts) {
        INFO(text);
        CHECK(t->encode(text) == gpt2->encode(text));
        std::vector<std::string> words;   // GPT-2's words, each byte as its symbol
        for (const std::string& word : split_words(text)) {
            std::string symbols;
            for (const char c : word) symbols += bytes_to_unicode()[static_cast<unsigned char>(c)];
            words.push_back(symbols);
        }
        CHECK(t->words(text) == words);
    }
    for (int id = 0; id < gpt2->size(); ++id) {
        CHECK(t->token(id) == gpt2->token(id));
        CHECK(t->piece(id) == gpt2->decode({id}));
        CHECK_FALSE(t->is_special(id));
    }

    // "<|endoftext|>" is a special token when the vocabulary holds it: one id in a text, as
    // transformers finds it, never split into bytes.
    json vocab = json::parse(ByteLevelBpe().vocab_json());
    vocab["<|endoftext|>"] = 256;
    const auto with_end = ByteLevelBpe::from_text(vocab.dump(), "#version: 0.2\n", "vocab.json", "merges.txt", errors);
    REQUIRE(with_end);
    const auto t_end = TokenizerJson::from_byte_level_bpe(*with_end, "vocab.json", errors);
    REQUIRE(t_end);
    CHECK(t_end->is_special(256));
    CHECK(t_end->encode("a<|endoftext|>b") == std::vector<int>{*t_end->id("a"), 256, *t_end->id("b")});
    CHECK(t_end->encode("a<|endoftext|>b") != with_end->encode("a<|endoftext|>b"));  // GPT-2's own reader splits it
}

TEST_CASE("vocab.json and merges.txt read as a tokenizer: files missing or malformed are named, as GPT-2's reader names them",
          "[tokenizer]") {
    namespace fs = std::filesystem;
    const fs::path dir = fs::temp_directory_path() / "attnlab_vocab_merges";
    fs::create_directories(dir);
    const std::string vocab = (dir / "vocab.json").string(), merges = (dir / "merges.txt").string();
    json v = json::parse(ByteLevelBpe().vocab_json());
    v["ab"] = 256;
    std::ofstream(vocab) << v.dump();
    std::ofstream(merges) << "#version: 0.2\na b\n";
    std::vector<std::string> errors;
    const auto t = TokenizerJson::from_vocab_merges(vocab, merges, errors, 300);
    INFO(joined(errors));
    REQUIRE(t);
    CHECK(t->encode("abab") == std::vector<int>{256, 256});

    CHECK_FALSE(TokenizerJson::from_vocab_merges(vocab, merges, errors, 256));   // config.json's embedding has no row for "ab"
    CHECK(errors == std::vector<std::string>{vocab + ": key 'ab': id 256 is not below vocab_size 256 (config.json)"});
    errors.clear();
    std::ofstream(merges) << "#version: 0.2\na zz\n";
    CHECK_FALSE(TokenizerJson::from_vocab_merges(vocab, merges, errors));
    CHECK_THAT(joined(errors), Contains(merges + ": line 2: 'zz' is not in the vocabulary (" + vocab + ")"));
    errors.clear();
    CHECK_FALSE(TokenizerJson::from_vocab_merges((dir / "none.json").string(), merges, errors));
    CHECK_THAT(joined(errors), Contains("none.json"));
    fs::remove_all(dir);
}
