#pragma once
// Hugging Face tokenizers-library files (tokenizer.json), encoded to the ids Python's
// tokenizer(text)["input_ids"] gives: the post-processor's special tokens included.
//
// The pipeline, as the Rust library runs it:
//   1. added tokens are found in the raw text (longest first, leftmost first; single_word,
//      lstrip, rstrip honoured) and cut out; "normalized": true ones are found again in the
//      normalized pieces;
//   2. each other piece is normalized (NFC…, Lowercase, Replace, BertNormalizer, …);
//   3. the pre-tokenizer splits it into words (Split with a regex, ByteLevel, Metaspace, …);
//   4. the model turns each word into ids (BPE by merge rank, or WordPiece longest-first);
//   5. the post-processor adds the special tokens (TemplateProcessing, BertProcessing, …).
// Families this reads: byte-level BPE (Llama 3, Qwen2/3, SmolLM2, GPT-NeoX), BPE with
// byte_fallback and "▁" for a space (Llama 2, TinyLlama, Gemma 2/3), WordPiece (BERT).
// A component or a setting that would change the ids and is not implemented here is refused
// when the file is read, never ignored. truncation and padding are not applied: Python's
// tokenizer(text) does not apply them either.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "io/json_read.hpp"

namespace attn::tok {

// A tokenizer.json: up to kMaxBytes, and a DOM bounded like every other format's
// (Gemma 3's 33 MB file holds about 2.2 M values).
inline constexpr std::uintmax_t kTokenizerJsonMaxBytes = 96u * 1024 * 1024;
inline constexpr JsonLimits kTokenizerJsonLimits{"tokenizer.json", 64, 1u << 23};

struct Pipeline;   // the components, read from the file (tokenizer/pipeline.hpp)
class ByteLevelBpe;

class TokenizerJson {
public:
    // nullopt with "SOURCE: JSON.PATH: …" messages on anything malformed or unsupported.
    static std::optional<TokenizerJson> load(const std::string& path, std::vector<std::string>& errors);
    static std::optional<TokenizerJson> from_text(const std::string& json_text, const std::string& source_name,
                                                  std::vector<std::string>& errors);
    // GPT-2's vocab.json and merges.txt (a folder without a tokenizer.json), as transformers'
    // GPT2Converter turns them into one: a BPE model (no unknown token, no prefix or suffix), the
    // ByteLevel pre-tokenizer without a prefix space (GPT-2's word pattern), the ByteLevel decoder
    // and post-processor (which add nothing), and "<|endoftext|>" a special token when the
    // vocabulary holds it. The files are checked as ByteLevelBpe::load checks them, with its
    // messages; vocab_size (config.json's) bounds the ids.
    static std::optional<TokenizerJson> from_vocab_merges(const std::string& vocab_path, const std::string& merges_path,
                                                          std::vector<std::string>& errors, std::optional<int> vocab_size = std::nullopt);
    static std::optional<TokenizerJson> from_byte_level_bpe(const ByteLevelBpe& bpe, const std::string& source_name,
                                                            std::vector<std::string>& errors);

    // The ids of text (UTF-8; invalid sequences become U+FFFD first), special tokens added.
    // Throws tok::EncodeError (text.hpp) when the text cannot be encoded faithfully: a pattern's
    // match limit, a normalizer past its bound. So do the other functions that read a text.
    std::vector<int> encode(const std::string& text) const;
    // The same without the post-processor: what add_special_tokens=False gives.
    std::vector<int> encode_without_special_tokens(const std::string& text) const;
    // The post-processor replaced by a template: `before`, the sequence, `after` (what
    // transformers' Llama, Gemma and GPT-NeoX tokenizers build from tokenizer_config.json's
    // add_bos_token and add_eos_token, whatever tokenizer.json's post-processor says).
    void set_special_tokens(std::vector<int> before, std::vector<int> after);

    // The steps before the model, for showing the pipeline: the text after the normalizer
    // (added tokens cut out first, so they are not in it), and the words the pre-tokenizer
    // hands the model, in order (added tokens as their content).
    std::string normalized(const std::string& text) const;
    std::vector<std::string> words(const std::string& text) const;

    // The vocabulary's string for id ("Ġcat", "▁cat", "##ing", "<0xE2>", "<|begin_of_text|>");
    // empty for an id no token has.
    const std::string& token(int id) const;
    std::optional<int> id(const std::string& token) const;
    // What id stands for in the text, for a token strip: " cat" for "Ġcat" and for "▁cat",
    // "ing" for "##ing", the byte 0xE2 for "<0xE2>" and for byte-level "â" (so a piece may be
    // part of a UTF-8 character), a special token's content as it is.
    std::string piece(int id) const;
    bool is_special(int id) const;
    // One more than the largest id.
    int size() const;

    TokenizerJson(TokenizerJson&&) noexcept;
    TokenizerJson& operator=(TokenizerJson&&) noexcept;
    TokenizerJson(const TokenizerJson&);
    TokenizerJson& operator=(const TokenizerJson&);
    ~TokenizerJson();

private:
    TokenizerJson();
    std::shared_ptr<const Pipeline> pipeline_;   // immutable once read: copies share it
    bool around_set_ = false;                    // set_special_tokens: these instead of the post-processor
    std::vector<int> before_, after_;
};

}  // namespace attn::tok
