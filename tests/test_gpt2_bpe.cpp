// GPT-2's byte-level BPE: the byte symbols, the word split, merges by rank (checked against
// a line-by-line port of GPT-2's bpe() (tests/fuzz/fuzz_gpt2.hpp)), decoding, display, and bad vocabulary and merges files.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "joined.hpp"
#include "fuzz/fuzz_gpt2.hpp"   // reference_bpe: GPT-2's bpe() line for line
#include "tokenizer/bpe.hpp"
#include "tokenizer/text.hpp"  // piece_label, piece_description
#include "tensor/random.hpp"

using namespace attn;
using namespace attn::tok;
using attn::testing::joined;
using Catch::Matchers::Contains;

namespace {

// The tokens' strings, so the expectations read as GPT-2's vocabulary does.
std::vector<std::string> pieces(const ByteLevelBpe& t, const std::string& text) {
    std::vector<std::string> out;
    for (const int id : t.encode(text)) out.push_back(t.token(id));
    return out;
}

// The small vocabulary of these tests: the 256 byte symbols (ids 0…255), then one token per
// merge, ids 256… in this order.
ByteLevelBpe small_tokenizer() {
    std::vector<std::string> errors;
    auto t = ByteLevelBpe::from_merges({{"Ġ", "t"},     // 256 Ġt
                                     {"h", "e"},     // 257 he
                                     {"Ġt", "he"},   // 258 Ġthe
                                     {"Ġ", "c"},     // 259 Ġc
                                     {"a", "t"},     // 260 at
                                     {"Ġc", "at"},   // 261 Ġcat
                                     {"'", "t"},     // 262 't
                                     {"o", "n"},     // 263 on
                                     {"d", "on"},    // 264 don
                                     {"i", "t"},     // 265 it
                                     {"1", "2"},     // 266 12
                                     {"Ã", "©"},     // 267 Ã© (é = C3 A9: the symbols of 0xC3 and 0xA9)
                                     {"Ċ", "Ċ"},     // 268 ĊĊ (two newlines)
                                     {"Ġ", "Ġ"}},    // 269 ĠĠ (two spaces)
                                    errors);
    REQUIRE(t);
    return *t;
}

// The vocabulary file of ByteLevelBpe() (the 256 byte symbols) with more entries after them.
std::string byte_vocab_with(const std::string& more) {
    std::string text = ByteLevelBpe().vocab_json();
    text.pop_back();  // the closing brace
    return text + (more.empty() ? "" : ", " + more) + "}";
}

}  // namespace

TEST_CASE("bytes_to_unicode: printable bytes are themselves, the others U+0100… in order") {
    const auto& symbols = bytes_to_unicode();
    CHECK(symbols['!'] == "!");
    CHECK(symbols['a'] == "a");
    CHECK(symbols['~'] == "~");
    CHECK(symbols[0xE9] == "\xC3\xA9");   // é: Latin-1 printable, itself
    CHECK(symbols[0x00] == "\xC4\x80");   // Ā U+0100
    CHECK(symbols[' '] == "\xC4\xA0");    // Ġ U+0120: 0x00…0x20 are the first 33
    CHECK(symbols['\n'] == "\xC4\x8A");   // Ċ U+010A
    CHECK(symbols[0x7F] == "\xC4\xA1");   // ġ U+0121: the 34th
    CHECK(symbols[0xA0] == "\xC5\x82");   // ł U+0142
    CHECK(symbols[0xAD] == "\xC5\x83");   // Ń U+0143: the soft hyphen, the last
    std::set<std::string> distinct(symbols.begin(), symbols.end());
    CHECK(distinct.size() == 256);
    for (int b = 0; b < 256; ++b) {
        // The inverse, through the symbol's code point.
        const std::string& s = symbols[b];
        const std::uint32_t cp = s.size() == 1 ? static_cast<unsigned char>(s[0])
                                               : ((static_cast<unsigned char>(s[0]) & 0x1Fu) << 6) | (static_cast<unsigned char>(s[1]) & 0x3Fu);
        CHECK(unicode_to_byte(cp) == b);
    }
    CHECK(unicode_to_byte(0x20) == -1);    // a real space is no byte's symbol
    CHECK(unicode_to_byte(0x144) == -1);
    CHECK(unicode_to_byte(0x1F642) == -1);
    // Ids 0…255 in GPT-2's order: '!' is 0, the first non-printable byte (0x00) 188, space 220.
    const ByteLevelBpe t;
    CHECK(t.token(0) == "!");
    CHECK(t.token(93) == "~");
    CHECK(t.token(94) == "\xC2\xA1");   // ¡
    CHECK(t.token(188) == "\xC4\x80");  // Ā
    CHECK(t.token(198) == "\xC4\x8A");  // Ċ
    CHECK(t.token(220) == "\xC4\xA0");  // Ġ
    CHECK(t.token(255) == "\xC5\x83");  // Ń
    CHECK(t.size() == 256);
}

TEST_CASE("the word split follows GPT-2's pattern") {
    using Words = std::vector<std::string>;
    // \s+(?!\S) takes a run of spaces but the last when a word follows; that one joins the word.
    CHECK(split_words("Hello  world!\n") == Words{"Hello", " ", " world", "!", "\n"});
    CHECK(split_words("a  b") == Words{"a", " ", " b"});
    CHECK(split_words("  a") == Words{" ", " a"});
    CHECK(split_words("a  ") == Words{"a", "  "});        // trailing spaces: one word
    CHECK(split_words("   ") == Words{"   "});
    CHECK(split_words("") == Words{});
    // A newline is not " ": it stands alone; "\n\n" before a word splits, at the end it stays whole.
    CHECK(split_words("a\n\nb") == Words{"a", "\n", "\n", "b"});
    CHECK(split_words("end\n\n") == Words{"end", "\n\n"});
    CHECK(split_words("x\t\ty") == Words{"x", "\t", "\t", "y"});
    CHECK(split_words("x \ny") == Words{"x", " ", "\n", "y"});
    // Contractions (lower case only, as in GPT-2), numbers, punctuation runs.
    CHECK(split_words("I'm here, you've 3 cats.") == Words{"I", "'m", " here", ",", " you", "'ve", " 3", " cats", "."});
    CHECK(split_words("don't it's") == Words{"don", "'t", " it", "'s"});
    CHECK(split_words("DON'T") == Words{"DON", "'", "T"});
    CHECK(split_words("they'll we'd") == Words{"they", "'ll", " we", "'d"});
    CHECK(split_words("2024 12") == Words{"2024", " 12"});
    CHECK(split_words("abc123") == Words{"abc", "123"});
    CHECK(split_words("Hi!! ...") == Words{"Hi", "!!", " ..."});
    // Unicode letters and numbers, a symbol, no-break space (Unicode whitespace).
    CHECK(split_words("caf\xC3\xA9 \xE6\x97\xA5\xE6\x9C\xAC") == Words{"caf\xC3\xA9", " \xE6\x97\xA5\xE6\x9C\xAC"});
    CHECK(split_words("\xC3\xA9" "1") == Words{"\xC3\xA9", "1"});
    CHECK(split_words("ok \xF0\x9F\x99\x82!") == Words{"ok", " \xF0\x9F\x99\x82!"});
    CHECK(split_words("a\xC2\xA0" "b") == Words{"a", "\xC2\xA0", "b"});
    // GPT-2's whitespace is Unicode White_Space, as Python's regex module has it: U+180E (a
    // format character) is a symbol joining the "!" (PCRE2's \s gave "x", " ", U+180E, "!"),
    // U+3000 and U+2028 are spaces (only " " joins the word after it), U+001E is not.
    CHECK(split_words("x \xE1\xA0\x8E!") == Words{"x", " \xE1\xA0\x8E!"});
    CHECK(split_words("x\xE3\x80\x80\xE3\x80\x80y") == Words{"x", "\xE3\x80\x80", "\xE3\x80\x80", "y"});
    CHECK(split_words("x\xE2\x80\xA8y") == Words{"x", "\xE2\x80\xA8", "y"});
    CHECK(split_words("x\x1Ey") == Words{"x", "\x1E", "y"});
    // Invalid UTF-8 becomes U+FFFD (a symbol, so it stands apart from letters).
    CHECK(split_words("a\xFF" "b") == Words{"a", "\xEF\xBF\xBD", "b"});
    CHECK(split_words("\xC3") == Words{"\xEF\xBF\xBD"});
    // The words always join back to the text.
    for (const char* text : {"Hello  world!\n", " \t x  y \n\n z  ", "it's 12:30, ok?", "\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E"}) {
        std::string whole;
        for (const auto& w : split_words(text)) whole += w;
        CHECK(whole == text);
    }
}

TEST_CASE("encoding by hand: spaces, punctuation, contractions, digits, non-ASCII") {
    const ByteLevelBpe t = small_tokenizer();
    using Tokens = std::vector<std::string>;
    REQUIRE(t.size() == 270);
    CHECK(t.id("\xC4\xA0t") == 256);
    CHECK(t.id("\xC4\xA0\xC4\xA0") == 269);
    // "the cat" → "the", " cat".  the: t h e → (h,e) rank 2 → t he; (t,he) has no rank.
    //  cat: Ġ c a t → (Ġ,c) rank 4 → Ġc a t → (a,t) rank 5 → Ġc at → (Ġc,at) rank 6 → Ġcat.
    CHECK(pieces(t, "the cat") == Tokens{"t", "he", "\xC4\xA0" "cat"});
    // " the": Ġ t h e → (Ġ,t) rank 1 → Ġt h e → (h,e) 2 → Ġt he → (Ġt,he) 3 → Ġthe.
    CHECK(pieces(t, " the") == Tokens{"\xC4\xA0the"});
    CHECK(t.encode(" the") == std::vector<int>{258});
    // "don't" → "don", "'t": d o n → (o,n) 8 → d on → (d,on) 9 → don; ' t → (',t) 7 → 't.
    CHECK(pieces(t, "don't") == Tokens{"don", "'t"});
    // "it's" → "it", "'s": (i,t) 10 → it; "'s" has no merge: ' s.
    CHECK(pieces(t, "it's") == Tokens{"it", "'", "s"});
    // "x  y" → "x", " ", " y": the lone space is Ġ, " y" is Ġ y (no merge).
    CHECK(pieces(t, "x  y") == Tokens{"x", "\xC4\xA0", "\xC4\xA0", "y"});
    // Trailing "  " is one word: Ġ Ġ → (Ġ,Ġ) 14 → ĠĠ. Leading: " ", " a" → Ġ, Ġ a.
    CHECK(pieces(t, "a  ") == Tokens{"a", "\xC4\xA0\xC4\xA0"});
    CHECK(pieces(t, "  a") == Tokens{"\xC4\xA0", "\xC4\xA0", "a"});
    // Newlines: "a\n\nb" → a, \n, \n, b (Ċ each); "end\n\n" keeps "\n\n" whole → ĊĊ.
    CHECK(pieces(t, "a\n\nb") == Tokens{"a", "\xC4\x8A", "\xC4\x8A", "b"});
    CHECK(pieces(t, "end\n\n") == Tokens{"e", "n", "d", "\xC4\x8A\xC4\x8A"});
    // Digits: "2024" has no merge; " 12" → Ġ 1 2 → (1,2) 11 → Ġ 12.
    CHECK(pieces(t, "2024 12") == Tokens{"2", "0", "2", "4", "\xC4\xA0", "12"});
    // Punctuation runs: "Hi", "!!".
    CHECK(pieces(t, "Hi!!") == Tokens{"H", "i", "!", "!"});
    // é = C3 A9 → symbols Ã © → (Ã,©) 12 → Ã©.
    CHECK(pieces(t, "caf\xC3\xA9") == Tokens{"c", "a", "f", "\xC3\x83\xC2\xA9"});
    // 日本 = E6 97 A5 E6 9C AC: no merges, one byte symbol each: æ Ĺ ¥ æ ľ ¬.
    CHECK(pieces(t, "\xE6\x97\xA5\xE6\x9C\xAC") ==
          Tokens{"\xC3\xA6", "\xC4\xB9", "\xC2\xA5", "\xC3\xA6", "\xC4\xBE", "\xC2\xAC"});
    // 🙂 = F0 9F 99 82 → ð Ł Ļ Ĥ (GPT-2's own "ðŁĻĤ"); with its space, one word " 🙂".
    CHECK(pieces(t, "\xF0\x9F\x99\x82") == Tokens{"\xC3\xB0", "\xC5\x81", "\xC4\xBB", "\xC4\xA4"});
    CHECK(pieces(t, " \xF0\x9F\x99\x82") == Tokens{"\xC4\xA0", "\xC3\xB0", "\xC5\x81", "\xC4\xBB", "\xC4\xA4"});
    // Invalid UTF-8 is repaired first: \xFF → U+FFFD = EF BF BD → ï ¿ ½.
    CHECK(pieces(t, "\xFF") == Tokens{"\xC3\xAF", "\xC2\xBF", "\xC2\xBD"});

    for (const char* text : {"the cat", " the", "don't", "it's", "x  y", "a  ", "  a", "a\n\nb", "end\n\n", "2024 12", "Hi!!",
                             "caf\xC3\xA9", "\xE6\x97\xA5\xE6\x9C\xAC", "\xF0\x9F\x99\x82", " \xF0\x9F\x99\x82", "", "\t\r\n",
                             "Hello, world. I'm here\n\n\tand   there  "}) {
        INFO(text);
        CHECK(t.decode(t.encode(text)) == text);
    }
    // The cache gives the same answer the second time.
    CHECK(pieces(t, "the cat the cat") == Tokens{"t", "he", "\xC4\xA0" "cat", "\xC4\xA0the", "\xC4\xA0" "cat"});
}

TEST_CASE("merges follow GPT-2's bpe(): every occurrence of the best pair, left to right, then the next") {
    std::vector<std::string> errors;
    // (xy,x) ranks before (x,y): GPT-2 merges both x y first ("xy" "xy"); merging one pair at a
    // time by (rank, position) would have made "xyx" "y".
    const auto t = ByteLevelBpe::from_merges({{"xy", "x"}, {"x", "y"}}, errors);
    REQUIRE(t);
    CHECK(pieces(*t, "xyxy") == std::vector<std::string>{"xy", "xy"});
    // Overlapping pairs: "aaa" → "aa" "a" (left first), "aaaa" → "aa" "aa" → "aaaa".
    const auto a = ByteLevelBpe::from_merges({{"a", "a"}, {"aa", "aa"}}, errors);
    REQUIRE(a);
    CHECK(pieces(*a, "aaa") == std::vector<std::string>{"aa", "a"});
    CHECK(pieces(*a, "aaaa") == std::vector<std::string>{"aaaa"});
    CHECK(pieces(*a, "aaaaa") == std::vector<std::string>{"aaaa", "a"});
    // A long word costs O(n log n): 200 000 letters.
    const std::string long_word(200000, 'a');
    const auto ids = a->encode(long_word);
    CHECK(ids.size() == 50000);
    CHECK(a->decode(ids) == long_word);
}

TEST_CASE("random merges and words: the tokenizer agrees with GPT-2's bpe() line for line") {
    Rng rng(7);
    for (int trial = 0; trial < 40; ++trial) {
        // Merges over a, b, c, each of two tokens already made; ranks shuffled, so a merge's
        // result may rank before the merges that make its pieces.
        std::vector<std::string> made = {"a", "b", "c"};
        std::set<std::pair<std::string, std::string>> seen;
        std::vector<std::pair<std::string, std::string>> merges;
        while (merges.size() < 25) {
            const std::string& l = made[rng.next_u64() % made.size()];
            const std::string& r = made[rng.next_u64() % made.size()];
            if (l.size() + r.size() > 8 || !seen.insert({l, r}).second) continue;
            merges.emplace_back(l, r);
            made.push_back(l + r);
        }
        for (std::size_t i = merges.size(); i > 1; --i) std::swap(merges[i - 1], merges[rng.next_u64() % i]);
        std::map<std::pair<std::string, std::string>, int> ranks;
        for (std::size_t i = 0; i < merges.size(); ++i) ranks[merges[i]] = static_cast<int>(i);
        std::vector<std::string> errors;
        const auto t = ByteLevelBpe::from_merges(merges, errors);
        REQUIRE(t);
        for (int w = 0; w < 50; ++w) {
            std::string word;
            std::vector<std::string> symbols;
            for (int n = 1 + static_cast<int>(rng.next_u64() % 30); n > 0; --n) {
                word += static_cast<char>('a' + rng.next_u64() % 3);
                symbols.push_back(word.substr(word.size() - 1));
            }
            INFO(word);
            CHECK(pieces(*t, word) == attn::fuzz::reference_bpe(symbols, ranks));
        }
    }
}

TEST_CASE("a token's bytes as a person reads them: a space, a newline, a tab, a byte of a character, a control byte") {
    const ByteLevelBpe t = small_tokenizer();
    const auto label = [&](const std::string& token) { return attn::tok::piece_label(t.decode({*t.id(token)})); };
    CHECK(label("\xC4\xA0" "cat") == "\xE2\x90\xA3" "cat");         // ␣cat
    CHECK(label("\xC4\xA0\xC4\xA0") == "\xE2\x90\xA3\xE2\x90\xA3");  // ␣␣
    CHECK(label("\xC4\x8A") == "\xE2\x86\xB5");                      // ↵
    CHECK(label("\xC4\x89") == "\xE2\x87\xA5");                      // a tab: ⇥
    CHECK(label("\xC3\x83\xC2\xA9") == "\xC3\xA9");                  // é
    CHECK(label("\xC3\xB0") == "<0xF0>");                            // half an emoji
    CHECK(label("\xC4\x80") == "<0x00>");
    CHECK(label("!") == "!");
    CHECK(attn::tok::piece_label(t.decode({-1})).empty());
    CHECK(t.token(100000).empty());
    // decode joins bytes; an emoji's four tokens make it whole, ids out of range are skipped.
    const std::vector<int> emoji = {*t.id("\xC3\xB0"), *t.id("\xC5\x81"), *t.id("\xC4\xBB"), -5, *t.id("\xC4\xA4"), 99999};
    CHECK(t.decode(emoji) == "\xF0\x9F\x99\x82");
    // A prediction names a byte token for what it is: whole characters as labelled, a lone
    // byte by its value and its place in a character.
    const auto described = [&](const std::string& token, const std::vector<int>& before) {
        return attn::tok::piece_description(t.decode({*t.id(token)}), t.decode(before));
    };
    CHECK(described("\xC4\xA0" "cat", {}) == label("\xC4\xA0" "cat"));
    CHECK(described("\xC3\x83\xC2\xA9", {}) == "\xC3\xA9");
    CHECK(described("\xC3\xB0", {}) == "<0xF0>, the first byte of a character");
    CHECK(described("\xC5\x81", {}) == "<0x9F>, part of a character");
    CHECK(described("\xC3\xBF", {}) == "<0xFF>, never part of UTF-8 text");
    CHECK(attn::tok::piece_description("\xE2\x82", "") == "<0xE2><0x82> (starts part-way through a character)");
    CHECK(attn::tok::piece_description(" \xE2", "") == "\xE2\x90\xA3<0xE2> (ends part-way through a character)");
    CHECK(attn::tok::whole_characters("caf\xC3\xA9"));
    CHECK_FALSE(attn::tok::whole_characters("caf\xC3"));
    CHECK_FALSE(attn::tok::whole_characters("\xC0\x80"));  // an overlong NUL is no character
    // After a sentence that ends part-way through a character, a byte that finishes it names the
    // word it completes; one that does not, or after whole characters, is named alone.
    std::vector<int> caf_half = t.encode("the caf");  // "é" is C3 A9: its first byte ends the sentence
    caf_half.push_back(*t.id("\xC3\x83"));           // byte 0xC3 in GPT-2's byte-to-unicode table
    REQUIRE(t.decode(caf_half) == "the caf\xC3");
    const std::string a9 = "\xC2\xA9";  // byte 0xA9 in GPT-2's byte-to-unicode table
    CHECK(described(a9, {}) == "<0xA9>, part of a character");
    CHECK(described(a9, caf_half) == "<0xA9>, completes \"caf\xC3\xA9\"");
    CHECK(described(a9, t.encode("the cat")) == "<0xA9>, part of a character");
    CHECK(described("\xC3\xB0", caf_half) == "<0xF0>, the first byte of a character");  // C3 F0 is no character
    // The emoji's last byte after its first three: the character alone when nothing is before it.
    const std::vector<int> three = {*t.id("\xC3\xB0"), *t.id("\xC5\x81"), *t.id("\xC4\xBB")};
    CHECK(described("\xC4\xA4", three) == "<0x82>, completes \"\xF0\x9F\x99\x82\"");
    CHECK(described("\xC4\xA0" "cat", caf_half) == label("\xC4\xA0" "cat"));
}

TEST_CASE("vocab.json and merges.txt: read, written, read again") {
    const ByteLevelBpe t = small_tokenizer();
    std::vector<std::string> errors;
    const auto again = ByteLevelBpe::from_text(t.vocab_json(), t.merges_text(), "vocab.json", "merges.txt", errors, 270);
    REQUIRE(again);
    CHECK(errors.empty());
    CHECK(again->size() == 270);
    CHECK(again->merge_count() == 14);
    CHECK(again->encode("the cat don't 12 caf\xC3\xA9") == t.encode("the cat don't 12 caf\xC3\xA9"));
    // CRLF line ends, no version line, a blank line at the end.
    std::string crlf;
    for (char c : t.merges_text().substr(t.merges_text().find('\n') + 1)) crlf += c == '\n' ? std::string("\r\n") : std::string(1, c);
    const auto windows = ByteLevelBpe::from_text(t.vocab_json(), crlf + "\r\n", "vocab.json", "merges.txt", errors);
    REQUIRE(windows);
    CHECK(windows->encode(" the") == std::vector<int>{258});
    // From files.
    std::filesystem::create_directories("test_gpt2_tok");
    std::ofstream("test_gpt2_tok/vocab.json") << t.vocab_json();
    std::ofstream("test_gpt2_tok/merges.txt") << t.merges_text();
    const auto loaded = ByteLevelBpe::load("test_gpt2_tok/vocab.json", "test_gpt2_tok/merges.txt", errors);
    REQUIRE(loaded);
    CHECK(loaded->encode("the cat") == t.encode("the cat"));
    errors.clear();
    CHECK_FALSE(ByteLevelBpe::load("test_gpt2_tok/none.json", "test_gpt2_tok/merges.txt", errors));
    CHECK_THAT(joined(errors), Contains("test_gpt2_tok/none.json: cannot open"));
    std::filesystem::remove_all("test_gpt2_tok");
}

TEST_CASE("bad vocabulary and merges files name the file and the key or line") {
    const std::string merges = "#version: 0.2\n";
    struct Case {
        const char* what;
        std::string vocab, merges;
        std::vector<std::string> says;
        std::optional<int> vocab_size = std::nullopt;
    };
    const std::vector<Case> cases = {
        {"vocab.json not JSON", "{\"a\": 1,", merges, {"vocab.json: line 1", "not valid JSON"}},
        {"vocab.json an array", "[1, 2]", merges, {"vocab.json: expected an object of token → id, found array"}},
        {"an id that is a string", byte_vocab_with(R"("hello": "7")"), merges, {"vocab.json: key 'hello': expected an integer id, found \"7\""}},
        {"a fractional id", byte_vocab_with(R"("hello": 1.5)"), merges, {"vocab.json: key 'hello': expected an integer id, found 1.5"}},
        {"a negative id", byte_vocab_with(R"("hello": -1)"), merges, {"vocab.json: key 'hello': id -1 is negative"}},
        {"an absurd id", byte_vocab_with(R"("hello": 4000000000)"), merges, {"vocab.json: key 'hello': id 4000000000 is absurd"}},
        {"a duplicate id", byte_vocab_with(R"("hello": 256, "world": 256)"), merges,
         {"vocab.json: key 'world': id 256 is also the id of 'hello'"}},
        {"an id beyond vocab_size", byte_vocab_with(R"("hello": 300)"), merges,
         {"vocab.json: key 'hello': id 300 is not below vocab_size 260 (config.json)"}, 260},
        {"missing byte symbols", R"({"a": 0, "b": 1})", merges,
         {"vocab.json: the symbols of 254 bytes are missing", "'\xC4\x80' (byte 0x00)", "all 256"}},
        {"a merges line of one token", byte_vocab_with(""), merges + "ab\n", {"merges.txt: line 2: expected two tokens separated by one space, found \"ab\""}},
        {"a merges line of three tokens", byte_vocab_with(""), merges + "a b c\n", {"merges.txt: line 2:", "found \"a b c\""}},
        {"a merges line with two spaces", byte_vocab_with(""), "a  b\n", {"merges.txt: line 1:", "found \"a  b\""}},
        {"a merge piece missing", byte_vocab_with(R"("ab": 256)"), merges + "a b\nab zz\n",
         {"merges.txt: line 3: 'zz' is not in the vocabulary (vocab.json)"}},
        {"a merge result missing", byte_vocab_with(""), merges + "a b\n",
         {"merges.txt: line 2: the merge result 'ab' is not in the vocabulary (vocab.json)"}},
        {"a merge given twice", byte_vocab_with(R"("ab": 256)"), merges + "a b\na b\n", {"merges.txt: line 3: the merge 'a b' is already on line 2"}},
    };
    for (const Case& c : cases) {
        INFO(c.what);
        std::vector<std::string> errors;
        const auto t = ByteLevelBpe::from_text(c.vocab, c.merges, "vocab.json", "merges.txt", errors, c.vocab_size);
        CHECK_FALSE(t);
        for (const auto& fragment : c.says) CHECK_THAT(joined(errors), Contains(fragment));
    }
    // A file of many bad lines: twenty messages and a count.
    std::string many;
    for (int i = 0; i < 500; ++i) many += "x\n";
    std::vector<std::string> errors;
    CHECK_FALSE(ByteLevelBpe::from_text(byte_vocab_with(""), many, "vocab.json", "merges.txt", errors));
    CHECK(errors.size() == 21);
    CHECK_THAT(errors.back(), Contains("merges.txt: … and 480 more problems"));
}
