// The presets. The article presets carry the numbers the article prints, as printed:
// where the printed arithmetic is wrong the engine still computes the truth, and the
// explanation says where the article went astray.
//
// [SECTION] Builders
// [SECTION] The articles' worked examples
// [SECTION] Sentences the articles use
// [SECTION] Demonstrations
// [SECTION] What modern blocks change
#include "teaching/presets.hpp"

#include "tensor/reflect.hpp"

#include <cmath>

#include "attention/engine.hpp"
#include "attention/positional.hpp"
#include "tensor/random.hpp"

namespace attn {

namespace {

// [SECTION] Builders

Matrix rows(std::initializer_list<std::initializer_list<float>> values) {
    Matrix m(static_cast<Eigen::Index>(values.size()), static_cast<Eigen::Index>(values.begin()->size()));
    Eigen::Index i = 0;
    for (auto& row : values) {
        Eigen::Index j = 0;
        for (float v : row) m(i, j++) = v;
        ++i;
    }
    return m;
}

Scenario sentence(const std::string& name, const std::string& text, int d_model, int heads,
                  PositionalEncoding pe = PositionalEncoding::Sinusoidal) {
    Scenario s;
    s.name = name;
    s.target.tokens = tokenize(text);
    s.d_model = d_model;
    s.heads = heads;
    s.positional = pe;
    return s;
}

const char* kArticle003 = "Transformers and Attention Mechanisms: Unveiling the Math Behind Modern NLP Models (R. Shaikh)";
const char* kArticle000 = "The Transformer Breakdown: A Deep Dive into Self-Attention, Key-Value Pairs, and Positional Encoding";
const char* kArticle002 = "Transformer Architecture: the math behind attention (Codeayan)";
const char* kArticle004 = "Understanding Transformer Networks and the Self-Attention Mechanism (Ghaznix)";

// [SECTION] The articles' worked examples

Preset three_token_example() {
    Preset p;
    p.name = "dot-product-3-tokens";
    p.title = "3 tokens, d_k = 2: the worked example";
    p.article = kArticle003;
    p.description =
        "Q, K and V given directly for 3 tokens with d_k = 2, as in the article's sections 1 "
        "(dot-product attention) and 2 (self-attention matrix calculations). The article prints "
        "the scores, the scaled scores, the weights and the output of row 1.";
    Scenario& s = p.scenario;
    s.name = p.name;
    s.input = InputMode::Direct;
    s.q = rows({{1, 0}, {0, 1}, {1, 1}});
    s.k = rows({{1, 1}, {1, 0}, {0, 1}});
    s.v = rows({{10, 0}, {0, 10}, {5, 5}});
    s.direct_query_labels = s.direct_key_labels = {"token 1", "token 2", "token 3"};

    const double r = 1.0 / std::sqrt(2.0);
    const std::string softmax_truth =
        "softmax(0.7071, 0.7071, 0): e^0.7071 = 2.0281, e^0 = 1, sum = 2.0281 + 2.0281 + 1 = 5.0562, "
        "so the weights are 2.0281/5.0562 = 0.4011, 0.4011 and 1/5.0562 = 0.1978.";
    const std::string output_truth =
        "Row 1 of the output is 0.4011·[10, 0] + 0.4011·[0, 10] + 0.1978·[5, 5] = [4.011 + 0.989, 4.011 + 0.989] "
        "= [5.0, 5.0]. Both components are equal because the first two weights are equal and V's third row is "
        "[5, 5]; in fact 10·w₁ + 5·w₃ = 5·(2w₁ + w₃) = 5 for any weights with w₁ = w₂ that sum to 1.";
    p.printed = {
        {"§1 scores Q₁·Kᵀ, row 1", "head0.scores", 0, 0, {1, 1, 0}, 0, ""},
        {"§1 scaled scores, row 1 (1/√2, 1/√2, 0)", "head0.scaled_scores", 0, 0, {r, r, 0}, 6, ""},
        {"§1 attention weights, row 1", "head0.weights", 0, 0, {0.42, 0.42, 0.16}, 2,
         "The printed [0.42, 0.42, 0.16] is not the softmax of the scaled scores. " + softmax_truth},
        {"§1 output, row 1", "head0.output", 0, 0, {5.3, 4.2}, 1,
         "The printed [5.3, 4.2] does not follow even from the printed weights: 0.42·10 + 0.42·0 + 0.16·5 = 5.0 and "
         "0.42·0 + 0.42·10 + 0.16·5 = 5.0. " + output_truth},
        {"§2 scores QKᵀ, row 1", "head0.scores", 0, 0, {1, 1, 0}, 0, ""},
        {"§2 scores QKᵀ, row 2", "head0.scores", 1, 0, {1, 0, 1}, 0, ""},
        {"§2 scores QKᵀ, row 3", "head0.scores", 2, 0, {2, 1, 1}, 0, ""},
        {"§2 scaled scores, row 1", "head0.scaled_scores", 0, 0, {r, r, 0}, 6, ""},
        {"§2 scaled scores, row 2", "head0.scaled_scores", 1, 0, {r, 0, r}, 6, ""},
        {"§2 scaled scores, row 3", "head0.scaled_scores", 2, 0, {2 * r, r, r}, 6, ""},
        {"§2 attention weights, row 1 (to one decimal)", "head0.weights", 0, 0, {0.4, 0.4, 0.2}, 1, ""},
        {"§2 output, row 1", "head0.output", 0, 0, {5, 4}, 0,
         "The second component is 0.4·0 + 0.4·10 + 0.2·5 = 4 + 1 = 5, not 4: the printed value drops the third "
         "token's contribution 0.2·5 = 1. " + output_truth},
    };
    return p;
}

Preset positional_encoding_example() {
    Preset p;
    p.name = "positional-encoding-d4";
    p.title = "Sinusoidal encoding, d_model = 4, positions 0 and 1";
    p.article = kArticle003;
    p.description =
        "The article's section 3: PE(pos, 2i) = sin(pos / 10000^(2i/d_model)), PE(pos, 2i+1) = cos(same), for "
        "pos = 0 and 1 with d_model = 4. The embeddings are zero so that X + PE shows the encoding alone.";
    Scenario& s = p.scenario;
    s.name = p.name;
    s.target.tokens = {"pos 0", "pos 1"};
    s.target.embeddings = Matrix::Zero(2, 4);
    s.d_model = 4;
    s.heads = 1;
    s.positional = PositionalEncoding::Sinusoidal;
    p.printed = {
        {"PE(0, ·) = sin 0, cos 0, sin 0, cos 0", "pe", 0, 0, {0, 1, 0, 1}, 3, ""},
        {"PE(1, 0) = sin 1, PE(1, 1) = cos 1", "pe", 1, 0, {0.841, 0.540}, 3, ""},
        {"PE(1, 2) printed as sin(0.0001)", "pe", 1, 2, {0.0001}, 4,
         "PE(1, 2) has i = 1, so its angle is 1 / 10000^(2·1/4) = 1 / 10000^0.5 = 1/100, and PE(1, 2) = sin(0.01) "
         "= 0.0100. The printed sin(0.0001) takes 10000^(2·2/4) = 10000: it doubles the dimension index 2 instead "
         "of the pair index i = 1. The article's own code makes the same slip: its loop variable i steps over the "
         "dimensions 0, 2, … and is doubled again in 2*i/d_model."},
        {"PE(1, 3) printed as cos(0.0001) ≈ 1.0000", "pe", 1, 3, {1.0}, 4,
         "PE(1, 3) = cos(0.01) = 0.99995, which rounds to 1.0000 only by luck: the angle should be 0.01, not "
         "0.0001 (see PE(1, 2))."},
    };
    return p;
}

Preset embedding_plus_pe_example() {
    Preset p;
    p.name = "embedding-plus-pe";
    p.title = "Word embedding + positional encoding, d_model = 4";
    p.article = kArticle003;
    p.description =
        "The article adds a positional encoding to the word embedding [0.5, 0.2, 0.3, 0.1]. Here the same word "
        "stands at positions 0 and 1, so both true sums are on screen.";
    Scenario& s = p.scenario;
    s.name = p.name;
    s.target.tokens = {"word", "word"};
    s.target.embeddings = rows({{0.5f, 0.2f, 0.3f, 0.1f}, {0.5f, 0.2f, 0.3f, 0.1f}});
    s.d_model = 4;
    s.heads = 1;
    s.positional = PositionalEncoding::Sinusoidal;
    const std::string why =
        "The printed encoding [0.0, 1.0, 0.841, 0.540] is not the encoding of any position: its first half is "
        "PE(0, 0..1) = [0, 1] and its second half is PE(1, 0..1) = [0.841, 0.540]. With d_model = 4 the encoding "
        "of position 0 is [0, 1, 0, 1] and of position 1 is [0.841, 0.540, 0.010, 1.000].";
    p.printed = {
        {"positional encoding added (position 0)", "pe", 0, 0, {0.0, 1.0, 0.841, 0.540}, 3, why},
        {"final input = embedding + PE (position 0)", "x_pe", 0, 0, {0.5, 1.2, 1.141, 0.640}, 3,
         "The addition itself is right for the vector printed, but that vector is wrong. " + why +
             " So the input at position 0 is [0.5, 1.2, 0.3, 1.1], and at position 1 it is [1.341, 0.740, 0.310, 1.100]."},
    };
    return p;
}

Preset numpy_example() {
    Preset p;
    p.name = "numpy-seed-42";
    p.title = "NumPy example: np.random.seed(42), 4 tokens, d_k = 8";
    p.article = kArticle004;
    p.description =
        "The article's NumPy code: np.random.seed(42), then Q, K, V = np.random.randn(1, 4, 8) each, for "
        "\"I love deep learning\". The generator is replayed exactly (MT19937 and NumPy's polar Box–Muller), so "
        "these are the matrices the article's code draws. The article prints only the output shape (1, 4, 8).";
    Scenario& s = p.scenario;
    s.name = p.name;
    s.input = InputMode::Direct;
    NumpyLegacyRandom rng(42);
    s.q = rng.randn(4, 8);
    s.k = rng.randn(4, 8);
    s.v = rng.randn(4, 8);
    s.direct_query_labels = s.direct_key_labels = {"I", "love", "deep", "learning"};
    return p;
}

// [SECTION] Sentences the articles use

Preset sentence_preset(const std::string& name, const std::string& title, const std::string& text,
                       const std::string& description, const char* article, int d_model, int heads,
                       MaskKind mask = MaskKind::None) {
    Preset p;
    p.name = name;
    p.title = title;
    p.description = description;
    p.article = article;
    p.scenario = sentence(name, text, d_model, heads);
    p.scenario.mask = mask;
    return p;
}

// [SECTION] Demonstrations

Preset cross_attention_preset() {
    Preset p;
    p.name = "cross-attention-translation";
    p.title = "Cross-attention: \"le chat dort\" reads \"the cat sleeps\"";
    p.article = kArticle002;
    p.description =
        "Queries come from the target sentence being generated, keys and values from the encoded source "
        "sentence, as in an encoder–decoder translator.";
    p.scenario = sentence(p.name, "le chat dort", 8, 2);
    p.scenario.attention = AttentionKind::Cross;
    p.scenario.source.tokens = tokenize("the cat sleeps");
    return p;
}

Preset overflow_preset() {
    Preset p;
    p.name = "naive-softmax-overflow";
    p.title = "Large scores: naive vs stable softmax";
    p.description =
        "Scores around 10⁴. exp(10⁴) is infinite in float32, so the naive softmax returns NaN; the stable "
        "softmax subtracts each row's max first and is exact. Switch the softmax to compare.";
    Scenario& s = p.scenario;
    s.name = p.name;
    s.input = InputMode::Direct;
    s.q = rows({{100, 100}, {1, 0}});
    s.k = rows({{100, 100}, {99, 100}, {0, 1}});
    s.v = rows({{1, 0}, {0, 1}, {1, 1}});
    s.softmax = SoftmaxKind::Naive;
    return p;
}

Preset softcap_preset() {
    Preset p;
    p.name = "logit-soft-capping";
    p.title = "Logit soft-capping: Gemma 2 keeps every score inside (\xE2\x88\x92""50, 50)";
    p.description =
        "Gemma 2 passes each scaled score through 50\xC2\xB7tanh(s/50) before the mask and the softmax: small scores "
        "barely move, large ones are squeezed toward \xC2\xB1""50, so no single key can take all the weight. Query 1 "
        "scores 100 and 90 on keys 1 and 2: uncapped, key 2 gets 0.005% of the weight; capped to 48.2 and 47.3, it "
        "keeps 30%. Set the soft-cap to 0 to compare.";
    Scenario& s = p.scenario;
    s.name = p.name;
    s.input = InputMode::Direct;
    s.q = rows({{10, 10, 0, 0}, {1, 1, 1, 1}, {0, 0, 4, 4}});
    s.k = rows({{10, 10, 0, 0}, {9, 9, 0, 0}, {2, 0, 0, 0}, {0, 0, 5, 5}});
    s.v = rows({{1, 0}, {0, 1}, {1, 1}, {-1, 1}});
    s.softcap = 50.0f;
    return p;
}

Preset grouped_query_preset() {
    Preset p;
    p.name = "grouped-query-attention";
    p.title = "Grouped-query attention: 4 query heads share 2 K/V heads (Llama, Qwen, Gemma)";
    p.description =
        "Llama 2 70B, Llama 3, Qwen and Gemma keep fewer keys and values than queries: here query heads 1\xE2\x80\x93""2 read "
        "K/V head 1 and heads 3\xE2\x80\x93""4 read K/V head 2, so W_K and W_V have half the columns of W_Q and the K/V "
        "cache a decoder keeps while generating is 2\xC3\x97 smaller. Each head still has its own queries: compare the "
        "weights of heads 1 and 2, which see the same keys. RoPE turns q and k as Llama 3 does: pairs (i, i + d\xE2\x82\x96/2), "
        "base 500000.";
    p.scenario = sentence(p.name, "The animal did not cross the road because it was tired", 16, 4, PositionalEncoding::Rotary);
    p.scenario.kv_heads = 2;
    p.scenario.mask = MaskKind::Causal;
    p.scenario.rope.pairing = RopePairing::RotateHalf;  // Llama 3's RoPE: pairs (i, i + d/2), base 500000
    p.scenario.rope.theta = 500000.0f;
    return p;
}

Preset qk_norm_preset() {
    Preset p;
    p.name = "qk-norm";
    p.title = "QK-norm: each head's q and k normalised before RoPE (Qwen3, Gemma 3, OLMo 2)";
    p.description =
        "Qwen3, Gemma 3 and OLMo 2 pass each head's q and k, row by row, through RMSNorm over their d\xE2\x82\x96 numbers, "
        "after the projection and before RoPE, with one learned weight vector for q and one for k shared by every head. "
        "Here W_Q and W_K are 6\xC3\x97 too large, as weights drift in training: the projected rows are long, but after the "
        "norm every row has RMS 1 times its weights, so no score can grow past \xE2\x88\x9A""d\xE2\x82\x96\xC2\xB7max(w)\xC2\xB2. "
        "Turn QK-norm off to see the weights collapse onto one key each; edit w_q or w_k to sharpen or soften every head at once.";
    p.scenario = sentence(p.name, "the cat sat on the mat", 8, 2, PositionalEncoding::Rotary);
    p.scenario.mask = MaskKind::Causal;
    p.scenario.w_q = Matrix(resolved_weight(SharedMatrix(), 8, 8, p.scenario.seed, 0).get() * 6.0f);
    p.scenario.w_k = Matrix(resolved_weight(SharedMatrix(), 8, 8, p.scenario.seed, 1).get() * 6.0f);
    p.scenario.qk_norm = true;
    p.scenario.q_norm = rows({{1.6f, 0.6f, 1.2f, 0.9f}}).row(0);
    p.scenario.k_norm = rows({{1.0f, 1.4f, 0.7f, 1.1f}}).row(0);
    p.scenario.block.epsilon = 1e-6f;
    return p;
}

Preset sinks_preset() {
    Preset p;
    p.name = "attention-sinks";
    p.title = "Attention sinks: a learned logit per head that takes its share of every row (gpt-oss)";
    p.description =
        "gpt-oss gives each head one learned sink logit b that joins every softmax row's max and sum and is then "
        "dropped: w_ij = exp(s_ij \xE2\x88\x92 m) / (exp(b \xE2\x88\x92 m) + "
        "\xCE\xA3 exp(s \xE2\x88\x92 m)). Head 1's sink, b = 4, takes most of each row: its weights sum to well under 1 (the "
        "sink card beside them shows the rest), so a head can attend to nothing instead of being forced to hand out a "
        "whole unit of attention. Head 2's b = 0 takes less, less so as rows see more keys. Models without a sink learn "
        "one anyway: they park the surplus on the first token (attention sinks, Xiao et al. 2023) \xE2\x80\x94 open GPT-2 "
        "in the model view and many heads of its later layers put most of their weight on token 1.";
    p.scenario = sentence(p.name, "the cat sat on the mat", 8, 2, PositionalEncoding::Rotary);
    p.scenario.mask = MaskKind::Causal;
    p.scenario.sinks = rows({{4.0f, 0.0f}}).row(0);
    return p;
}

Preset latent_attention_preset() {
    Preset p;
    p.name = "latent-attention";
    p.title = "Multi-head latent attention: every head's keys and values from one small latent a token (DeepSeek-V2, V3)";
    p.description =
        "DeepSeek-V2 and V3 keep a cache far smaller than their heads need. Each token is compressed to one latent c "
        "(W_kv_a, then RMSNorm: ĉ), and every head's key and value are expanded from it (W_kv_b). RoPE cannot pass "
        "through that expansion, so a small rotary key k_rope, made beside c, is the same in every head: each head's "
        "k is [k_nope | RoPE(k_rope)], its q [q_nope | RoPE(q_rope)], and q·k adds a content part and a position "
        "part. A cache keeps only ĉ and k_rope. Here 4 heads of dₖ = 6 and d_v = 3 from a latent of 4 and a rotary "
        "key of 2: 6 numbers a token instead of 36 (the latent card says so); DeepSeek-V3 keeps 512 + 64 = 576 "
        "instead of 128 × (192 + 128) = 40960. Queries take a low-rank path too (W_q_a, RMSNorm, W_q_b), to "
        "save weights, not cache. Random weights.";
    p.scenario = sentence(p.name, "the cat sat on the mat", 8, 4, PositionalEncoding::Rotary);
    Scenario& s = p.scenario;
    s.mask = MaskKind::Causal;
    s.latent.kv_rank = 4;
    s.latent.q_rank = 6;
    s.latent.nope_dim = 4;
    s.latent.rope_dim = 2;
    s.latent.v_dim = 3;
    s.block.epsilon = 1e-6f;  // the latent's RMSNorms
    return p;
}

Preset gated_attention_preset() {
    Preset p;
    p.name = "gated-attention";
    p.title = "Gated attention: each head's output \xC3\x97 a gate of its token before W_O (Qwen3-Next, Qwen3.5)";
    p.description =
        "Qwen3-Next (2025) multiplies every head's output, number by number, by a gate \xCF\x83(x\xC2\xB7W_G + b_G) computed "
        "from the token the query stands at, before W_O: the gate card. Where a gate is near 0 the head writes nothing "
        "for that token, without having to park its attention anywhere: the first-token sink that trained models "
        "otherwise learn (see first-token-sink) is no longer needed, and the heads' outputs stay small and stable. In "
        "Qwen3-Next, q_proj computes the gate's weights beside the query's (each head's 2\xC2\xB7" "d_k outputs: its query, "
        "then its gate). Here head 2's bias b_G = \xE2\x88\x92" "3 keeps its gate nearly shut for every token (the gated "
        "card's right half fades), head 1's is open by its weights alone. Random weights.";
    p.scenario = sentence(p.name, "the cat sat on the mat", 8, 2, PositionalEncoding::Rotary);
    Scenario& s = p.scenario;
    s.mask = MaskKind::Causal;
    s.output_gate.on = true;
    s.output_gate.b_g = rows({{0.0f, 0.0f, 0.0f, 0.0f, -3.0f, -3.0f, -3.0f, -3.0f}}).row(0);
    return p;
}

Preset gated_deltanet_preset() {
    Preset p;
    p.name = "gated-deltanet";
    p.title = "Gated DeltaNet: linear attention with a fixed state instead of a growing cache (Qwen3-Next, Qwen3.5)";
    p.description =
        "Three of every four Qwen3-Next layers have no softmax and no KV cache. Each head keeps one state S of "
        "d_k \xC3\x97 d_v numbers (here 4 \xC3\x97 4, whatever the length of the text) and, token by token, fades it by "
        "e^g, reads what it holds for the new key (S\xE1\xB5\x80k), corrects it towards the new value by \xCE\xB2 "
        "(the delta rule: a key written twice is overwritten, not added), and answers the query from it: o = S\xE1\xB5\x80q. "
        "Before that, a causal convolution mixes each channel of q, k and v over the last 4 tokens, and q and k are "
        "L2-normed. The output is still a weighted sum of the values: the implied weights card draws the A with o = A\xC2\xB7V "
        "that the recurrence amounts to (signed, rows not summing to 1). Head 1 decays fast (A_log = ln 4: g from \xE2\x88\x92" "11 "
        "to \xE2\x88\x92" "0.7, most tokens keeping almost nothing of S), so its A is nearly diagonal; head 2 barely decays (A_log = "
        "ln 0.05: g above \xE2\x88\x92" "0.21) and reaches back to the start. The "
        "gated RMSNorm, \xE2\x8A\x99 SiLU(z), comes before W_O. Both heads read one q and one k (key_heads 1). Random weights.";
    p.scenario = sentence(p.name, "the cat sat on the mat and the cat ran", 8, 2, PositionalEncoding::None);
    Scenario& s = p.scenario;
    s.mask = MaskKind::Causal;
    s.head_dim = 4;
    s.delta_net.on = true;
    s.delta_net.key_heads = 1;
    s.delta_net.key_dim = 4;
    s.delta_net.conv_kernel = 4;
    s.delta_net.a_log = rows({{std::log(4.0f), std::log(0.05f)}}).row(0);
    s.block.epsilon = 1e-6f;  // the gated RMSNorm's
    return p;
}

Preset first_token_sink_preset() {
    Preset p;
    p.name = "first-token-sink";
    p.title = "Parking on the first token: what trained decoders do without a sink (GPT-2, Llama)";
    p.description =
        "Trained decoders have heads that put most of every row's weight on the first token, whatever the query "
        "(attention sinks, Xiao et al. 2023): softmax must hand out a whole unit of attention, and a head with nothing "
        "to read parks it where it costs nothing. Here W_Q and W_K are set by hand to do what training finds: every "
        "token carries a constant feature (X's column 7) that W_Q turns into the same query direction in head 1, and "
        "only <s> carries the feature (column 8) that W_K turns into a key along it, so q\xE1\xB5\xA2\xC2\xB7k\xE2\x82\x81 is "
        "large for every i. <s>'s other features are small and W_V ignores the two, so its value is short: the "
        "parked weight adds little to the output. Head 2 keeps random weights to compare.";
    Scenario& s = p.scenario;
    s.name = p.name;
    s.target.tokens = {"<s>", "the", "cat", "sat", "on", "the", "mat"};
    s.d_model = 8;
    s.heads = 2;
    s.positional = PositionalEncoding::None;
    s.mask = MaskKind::Causal;
    const int n = static_cast<int>(s.target.tokens.size());
    Matrix x = normal_matrix(n, 8, 41, 0.6f);
    x.col(6).setOnes();        // every token: a constant feature
    x.col(7).setZero();
    x.row(0) *= 0.15f;         // <s>: small features,
    x(0, 6) = 1.0f;
    x(0, 7) = 3.0f;            // and its own
    s.target.embeddings = x;
    Matrix w_q = resolved_weight(SharedMatrix(), 8, 8, s.seed, 0).get();
    Matrix w_k = resolved_weight(SharedMatrix(), 8, 8, s.seed, 1).get();
    Matrix w_v = resolved_weight(SharedMatrix(), 8, 8, s.seed, 2).get();
    w_q.row(6).head(4).setConstant(0.7f);  // head 1's query: the constant feature, one direction
    w_q.row(7).head(4).setZero();
    w_k.row(6).head(4).setZero();
    w_k.row(7).head(4).setConstant(0.7f);  // head 1's key along it: <s> alone
    w_v.row(6).setZero();                  // the constant and <s>'s own feature write nothing
    w_v.row(7).setZero();
    s.w_q = w_q;
    s.w_k = w_k;
    s.w_v = w_v;
    return p;
}

Preset long_preset() {
    Preset p;
    p.name = "long-64-tokens";
    p.title = "64 tokens, d_model = 64, 8 heads";
    p.description = "A longer text for exploring heads and masks at a size where the heatmaps become images.";
    std::string text;
    const char* sentences[] = {"The animal did not cross the road because it was tired .",
                               "The bank of the river was muddy .", "The money was deposited in the bank .",
                               "She gave her dog a bone .", "dog bites man .", "man bites dog ."};
    std::vector<std::string> tokens;
    for (int round = 0; static_cast<int>(tokens.size()) < 64; ++round)
        for (const char* sentence_text : sentences)
            for (auto& t : tokenize(sentence_text))
                if (tokens.size() < 64) tokens.push_back(t);
    p.scenario = sentence(p.name, "", 64, 8);
    p.scenario.target.tokens = tokens;
    p.scenario.mask = MaskKind::Causal;
    return p;
}

// [SECTION] What modern blocks change

// A pre-norm decoder block over a short sentence: RoPE, a causal mask, 2 heads, d_model 8, a
// feed-forward 16 wide — what Llama, Gemma and Pythia share. Each preset changes one thing of it.
Scenario modern_block(const std::string& name, const std::string& text) {
    Scenario s = sentence(name, text, 8, 2, PositionalEncoding::Rotary);
    s.mask = MaskKind::Causal;
    s.block.residual = s.block.layer_norm = s.block.feed_forward = true;
    s.block.norm = NormPlacement::Pre;
    s.block.d_ff = 16;
    return s;
}

Preset rms_norm_preset() {
    Preset p;
    p.name = "rmsnorm-block";
    p.title = "RMSNorm instead of LayerNorm (Llama, Qwen)";
    p.description =
        "A GPT-2 style pre-norm block whose two norms are RMSNorm: each row is divided by its root mean square, "
        "x / \xE2\x88\x9A(mean(x\xC2\xB2) + \xCE\xB5) \xC2\xB7 \xCE\xB3, with no mean subtracted and no \xCE\xB2. That is one "
        "statistic fewer than LayerNorm, and Llama, Qwen and Mistral use it. Set Norm to LayerNorm to compare: the "
        "rows are no longer centred on 0.";
    p.scenario = modern_block(p.name, "the cat sat down");
    p.scenario.block.norm_kind = NormKind::RMSNorm;
    p.scenario.block.activation = Activation::GeluTanh;
    p.scenario.block.epsilon = 1e-6f;
    return p;
}

Preset swiglu_preset() {
    Preset p;
    p.name = "swiglu-feed-forward";
    p.title = "SwiGLU: a gated feed-forward (Llama, Qwen)";
    p.description =
        "The feed-forward has two projections side by side: the gate, SiLU(x\xC2\xB7W_gate), and the up "
        "projection x\xC2\xB7W\xE2\x82\x81. Their cell-by-cell product goes through W\xE2\x82\x82 (down). The gate decides "
        "how much of each hidden unit passes, and there are no biases. Llama, Qwen and Mistral use it with RMSNorm; "
        "Gemma uses the same gate with GELU (GeGLU).";
    p.scenario = modern_block(p.name, "the cat sat down");
    p.scenario.block.norm_kind = NormKind::RMSNorm;
    p.scenario.block.gated = true;
    p.scenario.block.activation = Activation::SiLU;
    p.scenario.block.epsilon = 1e-6f;
    return p;
}

Preset parallel_residual_preset() {
    Preset p;
    p.name = "parallel-residual";
    p.title = "Attention and feed-forward side by side (GPT-NeoX, Pythia)";
    p.description =
        "With a parallel residual, the feed-forward reads the block's input through its own LayerNorm, x + "
        "Attention(LN\xE2\x82\x81(x)) + FFN(LN\xE2\x82\x82(x)), and does not wait for attention's output. GPT-NeoX, Pythia "
        "and GPT-J compute it this way, with the exact GELU (erf). Compare LN\xE2\x82\x82 with LN\xE2\x82\x81: both "
        "normalise the same input X.";
    p.scenario = modern_block(p.name, "dogs chase the ball");
    p.scenario.block.parallel_residual = true;
    p.scenario.block.activation = Activation::GeluErf;
    return p;
}

Preset sandwich_preset() {
    Preset p;
    p.name = "gemma-sandwich-norms";
    p.title = "Gemma 2/3: four norms around each sublayer";
    p.description =
        "Gemma 2 and 3 normalise each sublayer's input (as a pre-norm block does) and also its output before "
        "the residual adds it: x + N(Attention(N\xE2\x82\x81(x))), then y + N(FFN(N\xE2\x82\x82(y))). That makes four "
        "RMSNorms, each with its own \xCE\xB3, in Gemma's form x / \xE2\x88\x9A(mean(x\xC2\xB2) + \xCE\xB5) \xC2\xB7 (1 + \xCE\xB3): "
        "the checkpoint stores \xCE\xB3, and \xCE\xB3 = 0 changes nothing. The feed-forward is GeGLU, a gate with "
        "GELU-tanh.";
    p.scenario = modern_block(p.name, "birds fly south");
    Scenario& s = p.scenario;
    s.block.norm_kind = NormKind::RMSNorm;
    s.block.gamma_plus_one = true;
    s.block.sandwich_norm = true;
    s.block.gated = true;
    s.block.activation = Activation::GeluTanh;
    s.block.epsilon = 1e-6f;
    // γ as a trained checkpoint holds it: small values around 0, so the norms' scales sit around 1.
    s.block.norm_post_attention.gamma = normal_matrix(1, 8, 31, 0.25f);
    s.block.norm_post_feed_forward.gamma = normal_matrix(1, 8, 32, 0.25f);
    return p;
}

// [SECTION] What changed since 2017: one sentence through four blocks, random weights
// (seeded: the same for each), d_model 16, 4 heads; each adds one generation's changes.

const char* kSince2017 = "The animal did not cross the road because it was tired";

Scenario since_2017_block(const std::string& name) {
    Scenario s = sentence(name, kSince2017, 16, 4);
    s.block.residual = s.block.layer_norm = s.block.feed_forward = true;
    s.block.d_ff = 32;
    return s;
}

Preset block_2017_preset() {
    Preset p;
    p.name = "block-2017";
    p.title = "The 2017 block: sinusoidal positions, 4 heads, post-norm, ReLU";
    p.description =
        "\"Attention Is All You Need\": sinusoidal positions added to the embeddings, 4 heads each with its own "
        "K and V, every token seeing every other, then LayerNorm(x + Attention(x)) and LayerNorm(y + "
        "ReLU(yW\xE2\x82\x81)W\xE2\x82\x82). Random weights: the structure, not a trained model.";
    p.scenario = since_2017_block(p.name);
    return p;
}

Preset block_gpt2_preset() {
    Preset p;
    p.name = "block-gpt2";
    p.title = "GPT-2's block: a causal mask, learned positions, pre-norm, GELU";
    p.description =
        "GPT-2 (2019) generates text, so a token sees only itself and the tokens before it (causal mask). Positions "
        "are a learned table, the norms move before each sublayer (x + Attention(LN\xE2\x82\x81(x))), and ReLU "
        "becomes GELU. Random weights.";
    p.scenario = since_2017_block(p.name);
    p.scenario.positional = PositionalEncoding::Learned;
    p.scenario.mask = MaskKind::Causal;
    p.scenario.block.norm = NormPlacement::Pre;
    p.scenario.block.activation = Activation::GeluTanh;
    return p;
}

Preset block_llama_preset() {
    Preset p;
    p.name = "block-llama";
    p.title = "Llama's block: RoPE, grouped-query attention, RMSNorm, SwiGLU";
    p.description =
        "Llama (2023) turns q and k by RoPE instead of adding positions (pairs (i, i + d\xE2\x82\x96/2), base 500000 "
        "in Llama 3), shares each K/V head between two query heads (grouped-query attention: a K/V cache half the "
        "size), normalises by the root mean square alone (RMSNorm) and gates its feed-forward (SwiGLU). Random weights.";
    p.scenario = since_2017_block(p.name);
    Scenario& s = p.scenario;
    s.positional = PositionalEncoding::Rotary;
    s.rope.pairing = RopePairing::RotateHalf;
    s.rope.theta = 500000.0f;
    s.kv_heads = 2;
    s.mask = MaskKind::Causal;
    s.block.norm = NormPlacement::Pre;
    s.block.norm_kind = NormKind::RMSNorm;
    s.block.gated = true;
    s.block.activation = Activation::SiLU;
    s.block.epsilon = 1e-5f;
    return p;
}

Preset block_gemma_preset() {
    Preset p;
    p.name = "block-gemma2";
    p.title = "Gemma 2's block: a local window, soft-capping, sandwich norms, GeGLU";
    p.description =
        "Gemma 2 (2024) alternates local layers, where a token sees only its last few tokens (a sliding window, here "
        "4), with global ones; squeezes every score into (\xE2\x88\x92""50, 50) by 50\xC2\xB7tanh(s/50); scales by "
        "its query_pre_attn_scalar instead of \xE2\x88\x9A" "d\xE2\x82\x96; normalises each sublayer's output too "
        "(four RMSNorms in the (1 + \xCE\xB3) form); and gates with GELU (GeGLU). Random weights.";
    p.scenario = since_2017_block(p.name);
    Scenario& s = p.scenario;
    s.positional = PositionalEncoding::Rotary;
    s.rope.pairing = RopePairing::RotateHalf;
    s.kv_heads = 2;
    s.mask = MaskKind::SlidingWindow;
    s.window = 4;
    s.softcap = 50.0f;
    s.score_scale = 0.5f;  // query_pre_attn_scalar 4 here (= d_k): Gemma 2 2B uses 256^−½
    s.block.norm = NormPlacement::Pre;
    s.block.norm_kind = NormKind::RMSNorm;
    s.block.gamma_plus_one = true;
    s.block.sandwich_norm = true;
    s.block.gated = true;
    s.block.activation = Activation::GeluTanh;
    s.block.epsilon = 1e-6f;
    return p;
}

Preset block_gemma3_preset() {
    Preset p;
    p.name = "block-gemma3";
    p.title = "Gemma 3's block: QK-norm in place of soft-capping, five local layers to one global";
    p.description =
        "Gemma 3 (2025) keeps Gemma 2's sandwich norms and GeGLU but drops the soft-cap: each head's q and k pass "
        "through RMSNorm over their d\xE2\x82\x96 numbers, in the (1 + w) form, before RoPE (QK-norm), which bounds "
        "every score as the cap did. Five local layers (a sliding window, here 4, RoPE base 10000) come for each "
        "global one (base 10\xE2\x81\xB6): this block is a local one. Random weights.";
    p.scenario = block_gemma_preset().scenario;
    Scenario& s = p.scenario;
    s.name = p.name;
    s.softcap = 0.0f;
    s.rope.theta = 10000.0f;  // the local layers' base (rope_local_base_freq)
    s.qk_norm = true;
    s.qk_norm_plus_one = true;
    s.q_norm = rows({{0.3f, -0.2f, 0.1f, 0.25f}}).row(0);  // Gemma stores w of (1 + w): around 0
    s.k_norm = rows({{-0.1f, 0.2f, 0.35f, -0.25f}}).row(0);
    return p;
}

Preset block_modernbert_preset() {
    Preset p;
    p.name = "block-modernbert";
    p.title = "ModernBERT's local layer: a band of keys on both sides of each query";
    p.description =
        "ModernBERT (2024) is an encoder, like BERT: a token sees the tokens after it as well as before. Two layers of "
        "every three are local: a query sees only the keys within w positions on either side, itself included "
        "(|i \xE2\x88\x92 j| \xE2\x89\xA4 w; w = 64 in ModernBERT, 2 here), so the mask is a band along the diagonal and a "
        "layer's cost grows with the length, not its square. Every third layer is global. RoPE in place of a position "
        "table (base 10000 on the local layers, 160000 on the global ones), pre-norm LayerNorms without a bias, and a "
        "GeGLU feed-forward (the exact GELU). Change the band's width beside the mask. Random weights.";
    p.scenario = since_2017_block(p.name);
    Scenario& s = p.scenario;
    s.positional = PositionalEncoding::Rotary;
    s.mask = MaskKind::Band;
    s.window = 2;
    s.block.norm = NormPlacement::Pre;
    s.block.gated = true;
    s.block.activation = Activation::GeluErf;
    return p;
}

Preset block_diffllama_preset() {
    Preset p;
    p.name = "block-diffllama";
    p.title = "DiffLlama's differential attention: each pair of heads takes one map from the other";
    p.description =
        "Differential attention (2024) pairs the heads: head p with head p + H/2. Both compute an ordinary softmax map, "
        "both read the pair's two values side by side (2\xC2\xB7" "d\xE2\x82\x96 wide), and the pair outputs the first map's "
        "reading minus \xCE\xBB times the second's. Weight that both maps spread over every key cancels, like the common "
        "noise between two microphones; what the first map gives more stays. \xCE\xBB = exp(\xCE\xA3 \xCE\xBB_q1\xE2\x8A\x99\xCE\xBB_k1) "
        "\xE2\x88\x92 exp(\xCE\xA3 \xCE\xBB_q2\xE2\x8A\x99\xCE\xBB_k2) + \xCE\xBB_init is learned per layer; each pair's output is "
        "RMS-normed over its numbers and scaled by (1 \xE2\x88\x92 \xCE\xBB_init) before W_O. Llama's block around it: "
        "RoPE, a causal mask, grouped-query attention, pre-norm RMSNorm, SwiGLU. Random weights.";
    p.scenario = block_llama_preset().scenario;
    Scenario& s = p.scenario;
    s.name = p.name;
    s.differential.on = true;
    s.differential.lambda_init = 0.2f;  // DiffLlama's first layer: 0.8 − 0.6·e⁰
    s.differential.lambda_q1 = rows({{0.3f, -0.2f, 0.4f, 0.1f}}).row(0);
    s.differential.lambda_k1 = rows({{0.5f, 0.1f, 0.3f, -0.2f}}).row(0);
    s.differential.lambda_q2 = rows({{-0.1f, 0.2f, 0.1f, 0.3f}}).row(0);
    s.differential.lambda_k2 = rows({{0.2f, 0.4f, -0.3f, 0.1f}}).row(0);
    return p;
}

Preset block_olmo2_preset() {
    Preset p;
    p.name = "block-olmo2";
    p.title = "OLMo 2's block: norms after each sublayer only, QK-norm over every head at once";
    p.description =
        "OLMo 2 (2024) keeps Llama's RoPE, grouped-query attention and SwiGLU, but moves the norms: attention and "
        "the feed-forward read the residual stream as it is, and each one's output is normalised before it is added "
        "back (x + RMSNorm(Attention(x))), which kept its training stable. Its QK-norm is one RMSNorm over the whole "
        "projection, all heads' numbers of a row at once (16 here, not d\xE2\x82\x96 = 4), with a weight for "
        "each head and dimension; the heads are split after it. Random weights.";
    p.scenario = block_llama_preset().scenario;
    Scenario& s = p.scenario;
    s.name = p.name;
    s.block.layer_norm = false;   // no norm before the sublayers
    s.block.sandwich_norm = true; // one after each
    s.block.epsilon = 1e-6f;
    s.qk_norm = true;
    s.qk_norm_whole = true;
    s.q_norm = rows({{1.1f, 0.9f, 1.0f, 1.2f, 0.8f, 1.0f, 1.3f, 0.9f, 1.0f, 1.1f, 0.7f, 1.0f, 0.9f, 1.2f, 1.0f, 1.1f}}).row(0);
    s.k_norm = rows({{0.9f, 1.2f, 1.0f, 0.8f, 1.1f, 1.0f, 0.9f, 1.3f}}).row(0);  // 2 K/V heads of 4
    return p;
}

Preset block_phi3_preset() {
    Preset p;
    p.name = "block-phi3";
    p.title = "Phi-3's block: LongRoPE, whose factors change with the text's length";
    p.description =
        "Phi-3 and Phi-4-mini (2024) were trained on 4096 tokens and read 131072. LongRoPE slows each RoPE "
        "frequency by a factor of its own, found by search: a short list for texts up to the original length, a long "
        "list beyond it, so every key of a longer text turns differently. cos and sin are also multiplied by "
        "\xE2\x88\x9A(1 + ln s / ln L) (s = 32, L = 4096: 1.19), which sharpens the scores. Here L = 4 and s = 8: "
        "the sentence's 11 tokens take the long factors; shorten it to 4 and the short ones turn it. (Phi-3 also "
        "stores Q, K, V as one qkv_proj and the gate and up projections as one gate_up_proj: W_Q, W_K, W_V and the "
        "gate's and up's weights are slices of their rows.) Random weights.";
    p.scenario = block_llama_preset().scenario;
    Scenario& s = p.scenario;
    s.name = p.name;
    s.rope.theta = 10000.0f;
    s.rope.scaling = RopeScalingKind::LongRope;
    s.rope.original_max_positions = 4;
    s.rope.short_factor = rows({{1.0f, 1.3f}}).row(0);
    s.rope.long_factor = rows({{1.2f, 9.0f}}).row(0);
    s.rope.attention_factor = static_cast<float>(std::sqrt(1.0 + std::log(8.0) / std::log(4.0)));  // 1.5811
    return p;
}

Preset block_qwen3_moe_preset() {
    Preset p;
    p.name = "block-qwen3-moe";
    p.title = "Qwen3-MoE's block: a router picks each token's experts";
    p.description =
        "Qwen3-MoE (2025) is Qwen3's block (Llama's, with QK-norm) whose feed-forward is many experts and a router. "
        "Each token's router logits x\xC2\xB7W_router, one per expert, go through a softmax, and only the k most likely "
        "experts run on that token; their outputs are added, each weighted by its probability renormalised over the k "
        "(norm_topk_prob). Qwen3-30B-A3B keeps 8 of 128 experts per token, so a token reads about a tenth of the "
        "feed-forward weights. Here 4 experts of width 16, 2 kept: the routing card shows which two each token went "
        "to. Random weights.";
    p.scenario = block_llama_preset().scenario;
    Scenario& s = p.scenario;
    s.name = p.name;
    s.rope.theta = 1000000.0f;
    s.qk_norm = true;
    s.block.epsilon = 1e-6f;
    s.block.d_ff = 16;
    s.block.moe.experts = 4;
    s.block.moe.top_k = 2;
    s.block.moe.normalize_top_k = true;
    return p;
}

Preset block_qwen2_moe_preset() {
    Preset p;
    p.name = "block-qwen2-moe";
    p.title = "Qwen2-MoE's block: routed experts, and a shared expert every token runs";
    p.description =
        "Qwen1.5-MoE (2024) and Qwen2-57B-A14B route each token to its top k experts as Qwen3-MoE does, but beside "
        "them keep a shared expert that every token runs, whatever the router chose: common knowledge need not be "
        "learned again by every expert. A gate of its own, \xCF\x83(x\xC2\xB7g), says how much of it each token takes (the "
        "shared expert gate card), and its output is added after the routed experts' sum. DeepSeek-V3 and Llama 4 keep "
        "a shared expert too, without the gate. Here 4 experts of width 16, 2 kept (not renormalised, as "
        "Qwen1.5-MoE-A2.7B), and a shared expert of width 32. Random weights.";
    // Qwen3-MoE's block with Qwen2's attention (no QK-norm) and routing (not renormalised), and the shared expert
    p.scenario = block_qwen3_moe_preset().scenario;
    Scenario& s = p.scenario;
    s.name = p.name;
    s.qk_norm = false;
    s.block.moe.normalize_top_k = false;
    s.block.moe.shared_d_ff = 32;
    s.block.moe.shared_gated = true;
    return p;
}

Preset block_deepseek_v3_preset() {
    Preset p;
    p.name = "block-deepseek-v3";
    p.title = "DeepSeek-V3's block: latent attention, and a router that picks groups of experts first";
    p.description =
        "DeepSeek-V3 (2024) keeps its cache small with multi-head latent attention: each token's keys and values are "
        "expanded from one compressed latent ĉ (the latent card says how much smaller than 4 heads' K and V), and a "
        "rotary key k_rope is shared by every head. Its feed-forward is a mixture whose router scores each expert by a "
        "sigmoid, not a softmax; the experts are in groups, a token first keeps its best groups (a group's score: its "
        "2 best experts), then its top k experts in them. A bias b_choice, adjusted in training to balance the experts' "
        "load, steers the choice but never the weights: the kept sigmoids, renormalised, × 2.5. A shared expert "
        "runs on every token, without a gate. Here 8 experts in 4 groups, 2 groups kept, 2 experts. RoPE pairs (2i, "
        "2i+1) (rope_interleave). Random weights.";
    p.scenario = block_llama_preset().scenario;
    Scenario& s = p.scenario;
    s.name = p.name;
    s.kv_heads = 0;  // every head its own K and V, from the latent
    s.rope.pairing = RopePairing::Interleaved;
    s.rope.theta = 10000.0f;
    s.latent.kv_rank = 8;
    s.latent.q_rank = 12;
    s.latent.nope_dim = 4;
    s.latent.rope_dim = 2;
    s.latent.v_dim = 4;
    s.block.epsilon = 1e-6f;
    s.block.d_ff = 8;  // each expert's width
    MixtureOfExperts& m = s.block.moe;
    m.experts = 8;
    m.top_k = 2;
    m.router_kind = RouterKind::SigmoidGrouped;
    m.normalize_top_k = true;
    m.groups = 4;
    m.top_groups = 2;
    m.routed_scale = 2.5f;
    m.choice_bias = rows({{0.10f, -0.20f, 0.05f, 0.0f, 0.30f, -0.10f, 0.0f, 0.15f}}).row(0);
    m.shared_d_ff = 8;  // one shared expert, moe_intermediate_size wide
    return p;
}

Preset block_llama4_preset() {
    Preset p;
    p.name = "block-llama4";
    p.title = "Llama 4's block: chunked attention, a weightless QK-norm, and a router whose experts read a scaled input";
    p.description =
        "Llama 4 (2025) cuts the text into chunks of 8192 tokens (here 4) in three layers of every four: a query sees "
        "only the earlier keys of its own chunk, so the mask is a staircase of small triangles and a cache keeps at most "
        "one chunk. The fourth layer is global and turns nothing (NoPE: see the preset nope-temperature). RoPE turns the "
        "pairs (2i, 2i+1), and each head's q and k are RMS-normed without a weight after it (a rotation keeps a row's "
        "length, so the norm before it, drawn here, is the same numbers). The feed-forward's router keeps the top "
        "logits and weighs each kept expert by its own \xCF\x83, with no softmax; unlike every other mixture, the weight "
        "scales what the expert reads, not what it writes (a SwiGLU of w\xC2\xB7x is not w times the SwiGLU of x). A "
        "shared expert runs on every token. Here 4 experts of width 16, 2 kept (Llama 4 keeps 1). Random weights.";
    p.scenario = block_llama_preset().scenario;
    Scenario& s = p.scenario;
    s.name = p.name;
    s.rope.pairing = RopePairing::Interleaved;
    s.mask = MaskKind::Chunked;
    s.chunk = 4;
    s.qk_norm = true;  // weightless: ones
    s.block.d_ff = 16;
    MixtureOfExperts& m = s.block.moe;
    m.experts = 4;
    m.top_k = 2;
    m.router_kind = RouterKind::TopKThenSigmoid;
    m.weight_input = true;
    m.shared_d_ff = 16;
    return p;
}

Preset nope_temperature_preset() {
    Preset p;
    p.name = "nope-temperature";
    p.title = "Llama 4's global layer: no positions at all, and queries that grow sharper along the text";
    p.description =
        "Every fourth layer of Llama 4 turns neither q nor k (NoPE) and sees every earlier token: its scores do not "
        "know how far apart two tokens are, only the causal mask and the stream carry order. Over a long text such a "
        "layer's softmax spreads thin, so each query is multiplied by a temperature \xCF\x84 = ln(floor((p + 1) / "
        "floor_scale) + 1) \xC2\xB7 attn_scale + 1 that grows with its position p: 1 for the first 8191 tokens "
        "of Llama 4, then slowly more (arXiv 2501.19399). Here floor_scale 3 and attn_scale 0.5, so that eleven tokens "
        "see it change: the \xCF\x84 card beside Q, and the rows of the scores growing by it. SmolLM3 has NoPE layers "
        "without the temperature. Random weights.";
    p.scenario = sentence(p.name, kSince2017, 16, 4, PositionalEncoding::None);
    Scenario& s = p.scenario;
    s.mask = MaskKind::Causal;
    s.temperature = {3.0f, 0.5f};
    return p;
}

Preset block_gpt_oss_preset() {
    Preset p;
    p.name = "block-gpt-oss";
    p.title = "gpt-oss's block: sinks, a sliding window, YaRN, and a router that softmaxes only its top k";
    p.description =
        "gpt-oss (2025) gives each head a learned sink logit that joins every row's softmax and is dropped: a row can "
        "give most of its attention to nothing (the sink card shows each row's share). Its layers alternate a sliding "
        "window of 128 tokens (here 4) with full attention, and RoPE is stretched by YaRN (factor 32 on 4096 tokens: "
        "the slow pairs divided by 32, the fast ones kept, cos and sin \xC3\x97 1.35). The feed-forward is a "
        "mixture whose router keeps the k highest logits first and takes the softmax over those k only (Qwen3-MoE and "
        "Mixtral softmax all E first), and each expert is a SwiGLU clamped at 7: ((clamp(up) + 1) \xE2\x8A\x99 "
        "g\xC2\xB7\xCF\x83(1.702\xC2\xB7g)), g = min(gate, 7). Here 4 experts of width 16, 2 kept. Random weights.";
    p.scenario = block_llama_preset().scenario;
    Scenario& s = p.scenario;
    s.name = p.name;
    s.rope.theta = 150000.0f;
    s.rope.scaling = RopeScalingKind::Yarn;
    s.rope.factor = 32.0f;
    s.rope.original_max_positions = 4096;
    s.rope.truncate = false;
    s.rope.attention_factor = static_cast<float>(yarn_mscale(32.0));  // 1.3466
    s.mask = MaskKind::SlidingWindow;
    s.window = 4;
    s.sinks = rows({{2.0f, 0.5f, -1.0f, 3.0f}}).row(0);
    s.b_q = s.b_k = s.b_v = Vector();  // seeded projections; gpt-oss's biases are a checkpoint's
    s.block.d_ff = 16;
    s.block.moe.experts = 4;
    s.block.moe.top_k = 2;
    s.block.moe.router_kind = RouterKind::TopKThenSoftmax;
    s.block.moe.swiglu_limit = 7.0f;
    s.block.moe.swiglu_alpha = 1.702f;
    return p;
}

std::vector<Preset> make_presets() {
    std::vector<Preset> all;
    all.push_back(three_token_example());
    all.push_back(positional_encoding_example());
    all.push_back(embedding_plus_pe_example());
    all.push_back(numpy_example());
    all.push_back(sentence_preset("animal-was-tired", "\"The animal did not cross the road because it was tired\"",
                                  "The animal did not cross the road because it was tired",
                                  "\"it\" refers to \"animal\": a model must connect distant words.", kArticle002, 8, 2));
    all.push_back(sentence_preset("dog-bites-man", "\"dog bites man\"", "dog bites man",
                                  "Same words as \"man bites dog\": only position encoding tells them apart.",
                                  kArticle000, 8, 1));
    all.push_back(sentence_preset("man-bites-dog", "\"man bites dog\"", "man bites dog",
                                  "Same words as \"dog bites man\": only position encoding tells them apart.",
                                  kArticle000, 8, 1));
    all.push_back(sentence_preset("bank-of-the-river", "\"The bank of the river was muddy.\"",
                                  "The bank of the river was muddy.",
                                  "\"bank\" next to \"river\": context decides the meaning.", kArticle004, 8, 2));
    all.push_back(sentence_preset("bank-deposit", "\"The money was deposited in the bank.\"",
                                  "The money was deposited in the bank.",
                                  "\"bank\" next to \"money\": context decides the meaning.", kArticle004, 8, 2));
    all.push_back(sentence_preset("i-love-ai", "\"I love AI\"", "I love AI",
                                  "Without position encoding, \"I love AI\" and \"AI love I\" give the same outputs, "
                                  "only permuted.", kArticle003, 8, 1));
    all.push_back(sentence_preset("ai-love-i", "\"AI love I\"", "AI love I",
                                  "The words of \"I love AI\" in another order.", kArticle003, 8, 1));
    all.push_back(sentence_preset("she-gave-her-dog-a-bone", "\"She gave her dog a bone\"", "She gave her dog a bone",
                                  "Who does \"her\" refer to? Self-attention looks at the whole sentence.", kArticle003,
                                  8, 2));
    all.push_back(sentence_preset("i-love-deep-learning-causal", "\"I love deep learning\", causal mask",
                                  "I love deep learning",
                                  "A decoder's view: each token sees only itself and the tokens before it.",
                                  kArticle004, 8, 2, MaskKind::Causal));
    all.push_back(cross_attention_preset());
    all.push_back(overflow_preset());
    all.push_back(softcap_preset());
    all.push_back(grouped_query_preset());
    all.push_back(block_2017_preset());
    all.push_back(block_gpt2_preset());
    all.push_back(block_llama_preset());
    all.push_back(block_gemma_preset());
    all.push_back(block_gemma3_preset());
    all.push_back(block_olmo2_preset());
    all.push_back(block_modernbert_preset());
    all.push_back(block_diffllama_preset());
    all.push_back(block_phi3_preset());
    all.push_back(block_qwen3_moe_preset());
    all.push_back(block_qwen2_moe_preset());
    all.push_back(block_gpt_oss_preset());
    all.push_back(block_deepseek_v3_preset());
    all.push_back(block_llama4_preset());
    all.push_back(first_token_sink_preset());
    all.push_back(qk_norm_preset());
    all.push_back(sinks_preset());
    all.push_back(latent_attention_preset());
    all.push_back(nope_temperature_preset());
    all.push_back(gated_attention_preset());
    all.push_back(gated_deltanet_preset());
    all.push_back(long_preset());
    all.push_back(rms_norm_preset());
    all.push_back(swiglu_preset());
    all.push_back(parallel_residual_preset());
    all.push_back(sandwich_preset());
    return all;
}

}  // namespace

const std::vector<Preset>& presets() {
    static const std::vector<Preset> all = make_presets();
    return all;
}

const Preset* find_preset(const std::string& name) {
    for (const Preset& p : presets())
        if (p.name == name) return &p;
    return nullptr;
}

const Preset* exact_preset(const Scenario& scenario) {
    const Preset* p = find_preset(scenario.name);
    return p != nullptr && reflect::equal(scenario, p->scenario) ? p : nullptr;
}

const char* default_preset_name() { return "dot-product-3-tokens"; }
const char* default_sentence_preset_name() { return "animal-was-tired"; }

}  // namespace attn
