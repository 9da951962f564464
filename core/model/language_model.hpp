#pragma once
// A checkpoint as the app opens it, whatever its family: one folder read by the family table
// (model/hf/), GPT-2's included. The model view, its jobs, Compare and sessions hold one
// lm::Model and read one kind of pass (model_pass.hpp); what differs between families is
// asked of the model, never guessed:
//
//   shape()          layers, query heads H, K/V heads H_kv, d_model, head_dim, vocabulary
//   kv_head(h)       the K/V head query head h reads: h / (H / H_kv) (Hugging Face's repeat_kv)
//   window(ℓ)        the keys a query of layer ℓ sees: 0 all earlier ones (global), W the last W (local)
//   masked_lm()      BERT: each [MASK]'s top 5 instead of the next token's
//   layer_scenario   layer ℓ as an engine scenario (its weights shared, not copied)
#include <optional>
#include <string>
#include <vector>

#include "model/hf/model.hpp"
#include "model/model_pass.hpp"
#include "attention/scenario.hpp"
#include "model/stack.hpp"

namespace attn::lm {

struct Shape {
    int layers = 0;
    int heads = 0;          // query heads H
    int kv_heads = 0;       // K/V heads H_kv (= H without grouped-query attention)
    int d_model = 0;
    int head_dim = 0;
    int vocab_size = 0;
    int max_positions = 0;  // the longest sentence with learned positions; 0: no table limits it (RoPE)
};

// The weight matrices as a model holds them (stored_matrix.hpp): their bytes and the dtypes
// they are read in ("BF16": read in place from a BF16 file; "float32": matrices of their own).
// Biases and norms (float32 vectors) are not counted.
struct HeldWeights {
    double bytes = 0, elements = 0;
    std::string dtypes;  // "BF16", "F32 and float32", …
    // "weights BF16, 257 MiB read in place from the file"
    std::string sentence() const;
};
HeldWeights held_weights(const hf::OpenedModel& model);

class Model {
public:
    explicit Model(hf::OpenedModel model);

    const std::string& folder() const { return opened_.folder; }
    const std::string& model_type() const { return opened_.spec.model_type; }  // config.json's: "gpt2", "llama", "gemma3_text", …
    std::string family() const;             // as people name it: "GPT-2", "Llama", "Gemma 3", "GPT-NeoX (Pythia)", …
    const Shape& shape() const { return shape_; }
    int kv_head(int head) const { return shape_.kv_heads > 0 ? head / (shape_.heads / shape_.kv_heads) : head; }
    int window(int layer) const;
    bool masked_lm() const;

    // The ids of text, or none with a message in `errors` when the tokenizer cannot encode it
    // faithfully (a pattern's match limit, a normalizer past its bound: tok::EncodeError).
    std::vector<int> encode(const std::string& text, std::vector<std::string>& errors) const;
    // An id as the token strip and the top 5 show it ("␣cat", "<0xA9>": a byte of a character).
    std::string token_text(int id) const;
    // token_text, and for a byte of a character what it does after the ids `before`
    // ("<0xA9>, completes \"café\"", "<0xC3>, the first byte of a character").
    std::string token_description(int id, const std::vector<int>& before) const;
    // The text of ids as they continue a text: each id's piece (" cat" for "Ġcat" and "▁cat",
    // a byte token's byte) in turn, invalid UTF-8 replaced by U+FFFD; "#id" for an id of a
    // model without a tokenizer.
    std::string text_of(const std::vector<int>& ids) const;
    // The vocabulary's own string for id ("Ġcat", "▁cat", "##ing").
    std::string vocabulary_token(int id) const;
    // Reasons the ids cannot be run (empty when they can).
    std::vector<std::string> validate(const std::vector<int>& ids) const;
    // A token of `text` beyond the embedding's rows (a tokenizer.json may hold more tokens than
    // the embedding: Gemma 3's), said with the token and where the text holds it; empty when
    // every token of the text has its row (hf::token_beyond_embedding).
    std::string token_beyond_embedding(const std::string& text) const;
    // What opening the model says of such tokens: "tokenizer.json holds 262145 tokens, 1 beyond
    // the embedding's 262144 rows (`<image_soft_token>`): a sentence that produces it is
    // refused"; empty when the tokenizer fits the embedding.
    std::string tokens_beyond_embedding() const;
    // Layer ℓ's scenario for its input (n × d), labelled with `tokens`, the rows of W_O of
    // the heads of `ablated` in layer ℓ zeroed and its experts of `ablated` dropped.
    Scenario layer_scenario(const std::vector<std::string>& tokens, int layer, const Matrix& input, const stack::Ablation& ablated) const;
    // The experts of layer ℓ's mixture (0: its feed-forward is not one, or there is no layer ℓ).
    int experts_in_layer(int layer) const;
    // The heads and experts of `ablated` the model has (a session's, once the model is open:
    // those left out are said by session_file::check_model_choice).
    stack::Ablation fitting(const stack::Ablation& ablated) const;

    HeldWeights held_weights() const;
    // Where layer ℓ's weight matrices are in the checkpoint, by the trace's keys ("w_q",
    // "block.w_1", …): an export names them instead of copying the checkpoint into itself.
    std::vector<std::pair<std::string, std::string>> layer_weight_names(int layer) const;

    // The opened folder: its spec (the family table's row, as config.json sets it), weights and tokenizer.
    const hf::OpenedModel& opened() const { return opened_; }

private:
    hf::OpenedModel opened_;
    Shape shape_;
};

struct ModelLoad {
    std::optional<Model> model;
    std::vector<std::string> errors;  // each names the file and the key or tensor
    std::string ignored;              // "ignored 24 tensors …: …" (a multimodal folder: its text model and the towers not read first), or empty
    // A folder holding no checkpoint itself: the checkpoint folders one level down, sorted.
    std::vector<std::string> inside;
};
// The folder read by the family table (hf::open_model), which refuses a family or a setting it
// does not compute, naming it and those it does.
ModelLoad load_model(const std::string& folder);

// The sentence tokenised by the model's tokenizer and run, the heads of `ablated`
// contributing nothing.
ModelPass forward_text(const Model& model, const std::string& text, const stack::Ablation& ablated = {});
// Ids as they are (a probe of random tokens), labelled as the token strip shows them.
ModelPass forward_ids(const Model& model, const std::vector<int>& ids, const stack::Ablation& ablated = {});
// The model as the stack its passes run on, for the ids and tokens of `pass` (which must
// outlive it): what a sweep over the heads recomputes with.
stack::Stack model_stack(const Model& model, const ModelPass& pass);
// After an edit in layer ℓ (`edited`: the session's scenario of it) or of pass.ablated:
// layers ℓ … L−1, the head and the prediction again. False with pass.errors.
bool recompute_from(const Model& model, int layer, ModelPass& pass, const Scenario* edited = nullptr);
// The residual stream layer ℓ read: its trace's x_pe.
const Matrix& layer_input(const Trace& trace);

}  // namespace attn::lm
