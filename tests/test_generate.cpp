// Writing (core/generate): the sampler's distribution, cuts and draws; the incremental decode
// against a full recompute of the whole text at every step, for every family the app opens
// and for a model trained in the app; the caches' windows; what a cache costs.
#include <catch2/catch.hpp>

#include <cmath>
#include <functional>
#include <map>
#include <set>

#include "every_family.hpp"
#include "hf_family_fixtures.hpp"
#include "generate/model_writers.hpp"
#include "generate/sampler.hpp"
#include "generate/writer.hpp"
#include "attention/engine.hpp"
#include "tensor/random.hpp"
#include "train/trainer.hpp"

using namespace attn;
using namespace attn::generate;

namespace {

Matrix row_of(std::initializer_list<float> values) {
    Matrix m(1, static_cast<Eigen::Index>(values.size()));
    Eigen::Index i = 0;
    for (float v : values) m(0, i++) = v;
    return m;
}

// Logits whose softmax is exactly the given probabilities (log p).
Matrix logits_of(std::initializer_list<float> probabilities) {
    Matrix m = row_of(probabilities);
    for (Eigen::Index i = 0; i < m.cols(); ++i) m(0, i) = std::log(m(0, i));
    return m;
}

// The largest |a − b| over the row, relative to the row's scale (at least 1).
float relative_gap(const Matrix& a, const Matrix& b) {
    const float scale = std::max(1.0f, b.cwiseAbs().maxCoeff());
    return (a - b).cwiseAbs().maxCoeff() / scale;
}

// The model's pass over ids as a plain loop in double on its family fixture's weights
// (hf_family_fixtures.hpp): what two float32 passes are both roundings of.
attn::testing::families::Reference generate_reference(const lm::Model& model, const std::string& label, const std::vector<int>& ids) {
    for (const attn::testing::families::FamilyCheckpoint& c : attn::testing::families::all_family_checkpoints())
        if (c.label == label) return attn::testing::families::reference_forward(model.opened().spec, c.tensors, ids);
    FAIL("no family fixture " << label);
    return {};
}

// The largest |row − the reference's last row|, relative to the reference's scale (at least 1).
float reference_gap(const Matrix& row, const std::vector<double>& reference) {
    double gap = 0, scale = 1;
    for (std::size_t j = 0; j < reference.size(); ++j) {
        gap = std::max(gap, std::abs(static_cast<double>(row(0, static_cast<Eigen::Index>(j))) - reference[j]));
        scale = std::max(scale, std::abs(reference[j]));
    }
    return static_cast<float>(gap / scale);
}

}  // namespace

TEST_CASE("sampler: greedy takes the most likely token, ties the smaller id", "[generate][sampler]") {
    std::string why;
    const std::optional<Sampled> s = sample(row_of({1.0f, 3.0f, 3.0f, 2.0f}), SamplerSettings{}, 0, &why);
    REQUIRE(s);
    CHECK(s->chosen == 1);
    CHECK(s->kept == std::vector<int>{1});
    CHECK(s->draw == 0.0f);  // greedy draws nothing
}

TEST_CASE("sampler: temperature reshapes the distribution, top-k and top-p cut it", "[generate][sampler]") {
    const Matrix logits = logits_of({0.05f, 0.5f, 0.15f, 0.3f});
    const int position = 7;  // the position drawn for
    std::string why;
    SamplerSettings settings;
    settings.temperature = 1.0f;
    std::optional<Sampled> s = sample(logits, settings, position, &why);
    REQUIRE(s);
    CHECK(s->kept == std::vector<int>{1, 3, 2, 0});
    CHECK(s->probability[1] == Approx(0.5f));
    CHECK(s->tempered == s->probability);

    settings.temperature = 2.0f;  // p_T ∝ p^(1/2)
    s = sample(logits, settings, position, &why);
    REQUIRE(s);
    const double z = std::sqrt(0.05) + std::sqrt(0.5) + std::sqrt(0.15) + std::sqrt(0.3);
    CHECK(s->tempered[1] == Approx(std::sqrt(0.5) / z).epsilon(1e-5));
    CHECK(s->probability[1] == Approx(0.5f));  // the model's own distribution is kept beside it
    CHECK(s->tempered[1] < s->probability[1]);

    settings.temperature = 1.0f;
    settings.top_k = 2;
    s = sample(logits, settings, position, &why);
    REQUIRE(s);
    CHECK(s->kept == std::vector<int>{1, 3});
    CHECK(s->top_k_cut == 2);
    CHECK(s->kept_probability[0] == Approx(0.5 / 0.8));

    settings.top_k = 0;
    settings.top_p = 0.7f;  // 0.5 < 0.7 ≤ 0.5 + 0.3: the token that crosses p is kept
    s = sample(logits, settings, position, &why);
    REQUIRE(s);
    CHECK(s->kept == std::vector<int>{1, 3});
    CHECK(s->top_p_cut == 2);
    settings.top_p = 0.9f;  // 0.8 < 0.9 ≤ 0.95
    s = sample(logits, settings, position, &why);
    REQUIRE(s);
    CHECK(s->kept == std::vector<int>{1, 3, 2});
    settings.top_p = 0.2f;  // the most likely token alone already reaches it
    s = sample(logits, settings, position, &why);
    REQUIRE(s);
    CHECK(s->kept == std::vector<int>{1});
    CHECK(s->chosen == 1);
}

TEST_CASE("sampler: every draw is in the allowed set, in proportion, and a seed replays", "[generate][sampler]") {
    const Matrix logits = logits_of({0.1f, 0.4f, 0.2f, 0.3f});
    SamplerSettings settings;
    settings.temperature = 1.0f;
    settings.top_k = 3;
    settings.top_p = 0.85f;  // of 0.4, 0.3, 0.2: 0.4 + 0.3 < 0.85 ≤ 0.9
    std::string why;
    std::map<int, int> counts;
    for (int i = 0; i < 4000; ++i) {
        const std::optional<Sampled> s = sample(logits, settings, i, &why);  // one draw per position
        REQUIRE(s);
        ++counts[s->chosen];
    }
    CHECK(counts.count(0) == 0);  // cut by top-k
    CHECK(counts[1] / 4000.0 == Approx(0.4 / 0.9).margin(0.03));
    CHECK(counts[3] / 4000.0 == Approx(0.3 / 0.9).margin(0.03));
    CHECK(counts[2] / 4000.0 == Approx(0.2 / 0.9).margin(0.03));

    auto draws = [&](std::uint64_t seed) {
        settings.seed = seed;
        std::vector<int> out;
        for (int i = 0; i < 50; ++i) out.push_back(sample(logits, settings, i, &why)->chosen);
        return out;
    };
    CHECK(draws(5) == draws(5));
    CHECK(draws(5) != draws(6));
}

TEST_CASE("sampler: bad settings and logits that are not all finite are refused, naming them", "[generate][sampler]") {
    const int position = 0;
    std::string why;
    SamplerSettings bad;
    bad.temperature = -1.0f;
    CHECK_FALSE(sample(row_of({1, 2}), bad, position, &why));
    CHECK_THAT(why, Catch::Contains("temperature is -1"));
    bad.temperature = std::nanf("");
    CHECK_FALSE(validate(bad).empty());
    bad = SamplerSettings{};
    bad.top_p = 0.0f;
    CHECK_THAT(validate(bad).front(), Catch::Contains("top-p is 0"));
    bad.top_p = 1.5f;
    CHECK_THAT(validate(bad).front(), Catch::Contains("(0, 1]"));
    bad = SamplerSettings{};
    bad.top_k = -2;
    CHECK_THAT(validate(bad).front(), Catch::Contains("top-k is -2"));
    CHECK_FALSE(sample(row_of({1.0f, std::nanf("")}), SamplerSettings{}, position, &why));
    CHECK_THAT(why, Catch::Contains("token 1 is nan"));
    CHECK_FALSE(choose(row_of({1, 2}), SamplerSettings{}, 2, &why));
    const std::optional<Sampled> forced = choose(row_of({1, 2}), SamplerSettings{}, 0, &why);
    REQUIRE(forced);
    CHECK(forced->chosen == 0);
    CHECK(forced->forced);
}

TEST_CASE("writing: at every step of every family the cached logits equal a full recompute of the text",
          "[generate][families]") {
    for (auto& [label, model] : attn::testing::every_family("generate")) {
        INFO(label << " (" << model.family() << ")");
        const Writer w = writer(model);
        if (model.masked_lm()) {
            CHECK_THAT(write_faults(w).front(), Catch::Contains("masked language model"));
            continue;
        }
        REQUIRE(write_faults(w).empty());
        std::vector<stack::Ablation> ablations{stack::Ablation{}, stack::HeadSet{{0, 0}, {1, 1}}};
        // and an expert of the first mixture layer. Expert 3: with expert 2 instead, the Qwen3.5-MoE
        // fixture's 11th token meets a Gated DeltaNet head of layer 1 whose output nearly cancels
        // (|o| = 0.008 where |q|·|S| = 2.9: float32's rounding × 360), which the per-head gated RMSNorm
        // scales back to unit size; the cache and the recompute then differ by 4e-5, a property of
        // that token's sums, not of the cache (its states agree to 1e-7).
        for (int l = 0; l < model.shape().layers; ++l)
            if (model.experts_in_layer(l) > 2) {
                ablations.push_back(stack::Ablation{{{0, 0}}, {{l, 2}}});
                break;
            }
        for (const stack::Ablation& ablated : ablations) {
            INFO(ablated.heads.size() << " heads and " << ablated.experts.size() << " experts ablated");
            const std::vector<int> prompt{3, 1, 4, 1, 5};
            const ModelPass pass = lm::forward_ids(model, prompt, ablated);
            REQUIRE(pass.ok);
            Writing writing;
            std::string why;
            REQUIRE(prefill(w, pass, prompt, writing, &why));
            CHECK(relative_gap(writing.logits, pass.logits.bottomRows(1)) < 1e-5f);
            Writing stepped;
            REQUIRE(prefill_by_steps(w, prompt, ablated, stepped, &why));
            CHECK(relative_gap(stepped.logits, pass.logits.bottomRows(1)) < 1e-5f);
            for (int t = 0; t < 6; ++t) {
                const int next = (stack::top_k(writing.logits, 2)[1] + t) % w.vocab_size;  // not always the greedy one
                StepAttention rows;
                REQUIRE(step(w, writing, next, &rows, &why));
                const ModelPass full = lm::forward_ids(model, writing.ids, ablated);
                REQUIRE(full.ok);
                INFO("step " << t + 1 << ", " << writing.ids.size() << " tokens");
                // Two float32 passes, their sums in different orders: within 1e-5 of each other,
                // except at a token whose sums round badly. There the cache must be no farther
                // from the plain loop in double than the recompute is (Phi-3's 11th token here, in
                // the Release build with AVX2: the recompute's logits are 1.2e-5 from the plain
                // loop's, the cache's 3.4e-6, and some weights of the two differ by 2e-5; in the
                // sanitized build, without AVX2, the logits agree and some weights differ by 1e-5).
                // The same for each head's weights below. The plain loop is run when first needed,
                // for a family fixture run whole.
                std::optional<attn::testing::families::Reference> reference;
                auto plain_loop = [&]() -> const attn::testing::families::Reference* {
                    if (label == "gpt2" || !ablated.heads.empty() || !ablated.experts.empty()) return nullptr;
                    if (!reference) reference = generate_reference(model, label, writing.ids);
                    return &*reference;
                };
                const float gap = relative_gap(writing.logits, full.logits.bottomRows(1));
                if (const attn::testing::families::Reference* truth = gap >= 1e-5f ? plain_loop() : nullptr) {
                    const float cached = reference_gap(writing.logits, truth->logits.back());
                    const float recomputed = reference_gap(full.logits.bottomRows(1), truth->logits.back());
                    INFO("cached " << cached << " and recomputed " << recomputed << " from the plain loop in double");
                    CHECK(cached <= recomputed);
                } else {
                    CHECK(gap < 1e-5f);
                }
                // The new row of every head is the full run's last row of its weights.
                const int n = static_cast<int>(writing.ids.size());
                for (int l = 0; l < model.shape().layers; ++l) {
                    const DecodedAttention& a = rows[static_cast<size_t>(l)];
                    const LayerCache& cache = writing.cache[static_cast<size_t>(l)];
                    CHECK(cache.end_position() == n);
                    if (cache.is_linear()) {
                        // Gated DeltaNet (Qwen3-Next): no row kept, and no weights drawn; each head's state and the
                        // convolution's rows are the full pass's
                        const Trace& t = full.layers[static_cast<size_t>(l)];
                        CHECK(cache.rows() == 0);
                        CHECK(cache.bytes() == static_cast<double>(cache.linear_numbers()) * sizeof(float));
                        CHECK(relative_gap(cache.conv_rows(), t.linear.mixed.bottomRows(cache.conv_rows().rows())) < 1e-5f);
                        CHECK(cache.conv_rows().rows() == std::min(n, t.linear.conv_kernel - 1));
                        for (int h = 0; h < t.heads; ++h) {
                            CHECK(relative_gap(cache.state(h), t.head[static_cast<size_t>(h)].state) < 1e-4f);
                            CHECK(a.weights[static_cast<size_t>(h)].size() == 0);
                        }
                        continue;
                    }
                    const int window = model.window(l);
                    // a window's last W rows; a chunked layer's (Llama 4) the current chunk's
                    CHECK(cache.rows() == (cache.chunk() > 0 ? (n - 1) % cache.chunk() + 1 : window > 0 ? std::min(window, n) : n));
                    for (int h = 0; h < model.shape().heads; ++h) {
                        const Matrix& weights = full.layers[static_cast<size_t>(l)].head[static_cast<size_t>(h)].weights;
                        const Vector& row = a.weights[static_cast<size_t>(h)];
                        REQUIRE(row.cols() == cache.rows());
                        for (int j = 0; j < n; ++j) {
                            const float cached = j >= a.first_position ? row(j - a.first_position) : 0.0f;
                            const bool apart = std::abs(cached - weights(n - 1, j)) >= 1e-5f;
                            if (const attn::testing::families::Reference* plain = apart ? plain_loop() : nullptr) {
                                const double truth =
                                    plain->attention[static_cast<size_t>(l)][static_cast<size_t>(h)][static_cast<size_t>(n - 1)][static_cast<size_t>(j)];
                                INFO("layer " << l + 1 << ", head " << h + 1 << ", key " << j + 1 << ": the plain loop's weight " << truth);
                                CHECK(std::abs(cached - truth) <= std::max(1e-5, std::abs(weights(n - 1, j) - truth)));
                            } else {
                                CHECK(std::abs(cached - weights(n - 1, j)) < 1e-5f);
                            }
                        }
                    }
                }
            }
        }
    }
}

TEST_CASE("writing: a Phi-3 text that grows past LongRoPE's original length turns every cached key with the long factors",
          "[generate][families]") {
    // phi3_checkpoint: the short factors up to 4 tokens, the long ones from 5 on
    const std::string folder = (std::filesystem::temp_directory_path() / ("attnlab-test-longrope-" + std::to_string(getpid()))).string();
    attn::testing::families::write_family_checkpoint(folder, attn::testing::families::phi3_checkpoint());
    attn::testing::written_folders().paths.push_back(folder);
    hf::OpenedModelLoad load = hf::open_model(folder, false);
    REQUIRE(load.model);
    const lm::Model model(std::move(*load.model));
    const Writer w = writer(model);
    REQUIRE(write_faults(w).empty());
    // The switch is real: the fourth token's query, turned, differs once a fifth joins the text
    const std::vector<int> four{3, 1, 4, 1}, five{3, 1, 4, 1, 5};
    const ModelPass short_pass = lm::forward_ids(model, four), long_pass = lm::forward_ids(model, five);
    REQUIRE(short_pass.ok);
    REQUIRE(long_pass.ok);
    const Matrix& q4 = short_pass.layers[0].head[0].q;
    const Matrix& q5 = long_pass.layers[0].head[0].q;
    REQUIRE(q4.rows() == 4);
    REQUIRE(q5.rows() == 5);
    CHECK(relative_gap(q4.row(3), q5.row(3)) > 1e-3f);
    Writing writing;
    std::string why;
    const std::vector<int> prompt{3, 1, 4};
    REQUIRE(prefill(w, lm::forward_ids(model, prompt), prompt, writing, &why));
    for (int id : {1, 5, 9, 2}) {  // 4 tokens (short), then 5, 6, 7 (long)
        REQUIRE(step(w, writing, id, nullptr, &why));
        INFO(writing.ids.size() << " tokens");
        const ModelPass full = lm::forward_ids(model, writing.ids);
        REQUIRE(full.ok);
        CHECK(relative_gap(writing.logits, full.logits.bottomRows(1)) < 1e-5f);
    }
    // Step by step from the first token: the same
    Writing stepped;
    REQUIRE(prefill_by_steps(w, writing.ids, {}, stepped, &why));
    CHECK(relative_gap(stepped.logits, writing.logits) < 1e-5f);
}

TEST_CASE("writing: an edit of layer ℓ refills the caches from ℓ on and writing goes on from there", "[generate]") {
    const lm::Model model = attn::testing::gpt2_model(attn::testing::tiny_checkpoint(), "generate");
    Writer w = writer(model);
    const std::vector<int> prompt{5, 6, 7};
    ModelPass pass = lm::forward_ids(model, prompt);
    Writing writing;
    std::string why;
    REQUIRE(prefill(w, pass, prompt, writing, &why));
    REQUIRE(step(w, writing, 9, nullptr, &why));
    // Layer 2's W_V scaled: the pass recomputed from layer 2, the caches from layer 2 refilled.
    Scenario edited = model.layer_scenario(pass.tokens, 1, pass.layers[1].x_pe, {});
    ModelPass full = lm::forward_ids(model, writing.ids);
    edited = model.layer_scenario(full.tokens, 1, full.layers[1].x_pe, {});
    edited.w_v = SharedMatrix(Matrix(edited.w_v.get() * 2.0f));
    REQUIRE(lm::recompute_from(model, 1, full, &edited));
    w.edited.emplace(1, edited);
    REQUIRE(prefill(w, full, writing.ids, writing, &why, 1));
    CHECK(relative_gap(writing.logits, full.logits.bottomRows(1)) < 1e-5f);
    REQUIRE(step(w, writing, 11, nullptr, &why));
    ModelPass after = lm::forward_ids(model, writing.ids);
    Scenario edited_after = model.layer_scenario(after.tokens, 1, after.layers[1].x_pe, {});
    edited_after.w_v = edited.w_v;
    REQUIRE(lm::recompute_from(model, 1, after, &edited_after));
    CHECK(relative_gap(writing.logits, after.logits.bottomRows(1)) < 1e-5f);
}

TEST_CASE("writing: the model's positions bound the text, and a token outside the vocabulary is refused", "[generate]") {
    const lm::Model model = attn::testing::gpt2_model(attn::testing::tiny_checkpoint(), "generate");
    const Writer w = writer(model);
    REQUIRE(w.max_positions > 0);
    std::vector<int> prompt(static_cast<size_t>(w.max_positions), 1);
    const ModelPass pass = lm::forward_ids(model, prompt);
    REQUIRE(pass.ok);
    Writing writing;
    std::string why;
    REQUIRE(prefill(w, pass, prompt, writing, &why));
    REQUIRE(step(w, writing, 1, nullptr, &why));  // the last token it can write, unread
    CHECK(writing.full());
    CHECK(writing.ids.size() == static_cast<size_t>(w.max_positions + 1));
    CHECK_FALSE(step(w, writing, 1, nullptr, &why));
    CHECK_THAT(why, Catch::Contains("reads at most " + std::to_string(w.max_positions)));
    CHECK_FALSE(step(w, writing, w.vocab_size, nullptr, &why));
    CHECK_THAT(why, Catch::Contains("not one of the model's"));
}

TEST_CASE("writing: a model trained to reverse, given a b c |, writes c b a", "[generate][train]") {
    train::TrainSettings s;
    s.task.kind = train::TaskKind::Reverse;
    s.task.length = 3;
    s.task.symbols = 12;  // 1,728 distinct examples: a quarter may be held out
    s.model.d_model = 32;
    s.model.heads = 2;
    s.model.layers = 1;
    s.seed = 1;
    s.evaluate_every = 0;
    std::vector<std::string> errors;
    auto trainer = train::Trainer::create(s, errors);
    for (const std::string& e : errors) UNSCOPED_INFO(e);
    REQUIRE(trainer);
    trainer->run(200);
    const train::Model& model = trainer->model();
    const Writer w = writer(model);
    REQUIRE(write_faults(w).empty());
    std::string error;
    const std::vector<int> prompt = train::token_ids(model, {"a", "b", "c", "|"}, &error);
    REQUIRE(error.empty());
    Writing writing;
    std::string why;
    REQUIRE(prefill_by_steps(w, prompt, {}, writing, &why));
    std::vector<std::string> written;
    for (int t = 0; t < 3; ++t) {
        const std::optional<Sampled> next = sample(writing.logits, SamplerSettings{}, static_cast<int>(writing.ids.size()), &why);
        REQUIRE(next);
        written.push_back(model.vocabulary[static_cast<size_t>(next->chosen)]);
        REQUIRE(step(w, writing, next->chosen, nullptr, &why));
        if (writing.full()) break;  // "a b c | c b a" is one more than the 6 positions it reads
        train::ModelInput input;
        input.tokens = writing.ids;
        const train::ForwardPass full = train::forward(model, input);
        REQUIRE(full.ok);
        CHECK(relative_gap(writing.logits, full.logits.bottomRows(1)) < 1e-5f);
    }
    CHECK(written == std::vector<std::string>{"c", "b", "a"});
}

TEST_CASE("cache cost: grouped-query attention and windows against multi-head attention", "[generate]") {
    // Llama 3.2 1B: 16 layers, 32 query heads on 8 K/V heads of 64, BF16.
    const std::vector<LayerCacheShape> llama(16, LayerCacheShape{8, 64, 64, 0});
    const CacheCost one = cache_cost(llama, 32, 2.0, 1);
    CHECK(one.bytes_per_token == 32 * 1024);
    CHECK(one.multi_head_bytes == 128 * 1024);
    CHECK(cache_cost(llama, 32, 2.0, 4096).bytes == 4096.0 * 32 * 1024);
    // A sliding-window layer stops growing at its window.
    const std::vector<LayerCacheShape> mixed{{1, 4, 4, 3}, {1, 4, 4, 0}};
    CHECK(cache_cost(mixed, 2, 4.0, 2).bytes == 2 * 2 * 32.0);
    CHECK(cache_cost(mixed, 2, 4.0, 10).bytes == 3 * 32.0 + 10 * 32.0);
    CHECK(cache_cost(mixed, 2, 4.0, 10).bytes_per_token == 32.0);
    // A chunked layer (Llama 4) keeps the current chunk's rows: 10 tokens in chunks of 4 keep 2.
    const std::vector<LayerCacheShape> chunked{{1, 4, 4, 0, 0, 4}};
    CHECK(cache_cost(chunked, 2, 4.0, 10).bytes == 2 * 32.0);
    CHECK(cache_cost(chunked, 2, 4.0, 8).bytes == 4 * 32.0);
    CHECK(cache_cost(chunked, 2, 4.0, 9).bytes == 1 * 32.0);
    // DeepSeek-V3's latent attention: 512 + 64 numbers a token, against 128 heads' k (192) and v (128).
    const std::vector<LayerCacheShape> latent{{128, 192, 128, 0, 576}};
    const CacheCost mla = cache_cost(latent, 128, 2.0, 1);
    CHECK(mla.bytes_per_token == 576 * 2);
    CHECK(mla.multi_head_bytes == 128 * 320 * 2);
}

TEST_CASE("decode_layer: one row against the cache equals the last row of the engine's full run, rule by rule", "[generate]") {
    // A scenario for every rule the families above do not all reach: sinks, ALiBi, the sinusoid
    // and the engine's seeded learned table, the default (interleaved) RoPE, a post-norm block
    // with its feed-forward, a custom scale, a soft-cap, a finite fill, the naive softmax, a window.
    struct Case {
        const char* name;
        std::function<void(Scenario&)> set;
    };
    const std::vector<Case> cases{
        {"sinks", [](Scenario& s) { s.sinks = Vector::Constant(s.heads, 0.7f); }},
        {"ALiBi", [](Scenario& s) { s.positional = PositionalEncoding::ALiBi; }},
        {"sinusoid", [](Scenario& s) { s.positional = PositionalEncoding::Sinusoidal; }},
        {"learned table", [](Scenario& s) { s.positional = PositionalEncoding::Learned; }},
        {"RoPE, interleaved", [](Scenario& s) { s.positional = PositionalEncoding::Rotary; }},
        {"post-norm block", [](Scenario& s) {
             s.block.residual = s.block.layer_norm = s.block.feed_forward = true;
             s.block.norm = NormPlacement::Post;
         }},
        {"scale, soft-cap, finite fill, window", [](Scenario& s) {
             s.score_scale = 0.3f;
             s.softcap = 2.0f;
             s.masked_fill = -1e9f;
             s.mask = MaskKind::SlidingWindow;
             s.window = 3;
         }},
        {"naive softmax, grouped-query, QK-norm", [](Scenario& s) {
             s.softmax = SoftmaxKind::Naive;
             s.kv_heads = 1;
             s.qk_norm = true;
         }},
        {"latent attention, queries' low rank, RoPE on k_rope", [](Scenario& s) {
             s.positional = PositionalEncoding::Rotary;
             s.latent = LatentAttention{};
             s.latent.kv_rank = 4;
             s.latent.q_rank = 3;
             s.latent.nope_dim = 2;
             s.latent.rope_dim = 4;
             s.latent.v_dim = 3;
             s.latent.b_kv_a = normal_matrix(1, 8, 21).row(0);
             s.latent.kv_a_norm = normal_matrix(1, 4, 22).row(0);
         }},
        {"chunked mask of 3 (the last token starts a chunk), query temperature", [](Scenario& s) {
             s.mask = MaskKind::Chunked;
             s.chunk = 3;
             s.temperature = {2.0f, 0.5f};
         }},
        {"chunked mask of 4, RoPE, QK-norm, a block with Llama 4's router", [](Scenario& s) {
             s.mask = MaskKind::Chunked;
             s.chunk = 4;
             s.positional = PositionalEncoding::Rotary;
             s.qk_norm = true;
             s.block.residual = s.block.layer_norm = s.block.feed_forward = s.block.gated = true;
             s.block.norm = NormPlacement::Pre;
             s.block.norm_kind = NormKind::RMSNorm;
             s.block.activation = Activation::SiLU;
             s.block.d_ff = 6;
             s.block.moe.experts = 4;
             s.block.moe.top_k = 2;
             s.block.moe.router_kind = RouterKind::TopKThenSigmoid;
             s.block.moe.weight_input = true;
             s.block.moe.shared_d_ff = 5;
         }},
        {"Gated DeltaNet, two value heads on one key head, b_o, a block", [](Scenario& s) {
             s.delta_net.on = true;
             s.delta_net.key_heads = 1;
             s.delta_net.key_dim = 3;
             s.delta_net.conv_kernel = 3;
             s.block.epsilon = 1e-6f;
             s.b_o = normal_matrix(1, 8, 23).row(0);
             s.block.residual = s.block.layer_norm = s.block.feed_forward = true;
             s.block.norm = NormPlacement::Pre;
             s.block.norm_kind = NormKind::RMSNorm;
         }},
        {"latent attention, W_Q, rotate-half, a block", [](Scenario& s) {
             s.positional = PositionalEncoding::Rotary;
             s.rope.pairing = RopePairing::RotateHalf;
             s.latent.kv_rank = 5;
             s.latent.nope_dim = 4;
             s.latent.rope_dim = 2;
             s.latent.v_dim = 2;
             s.block.residual = s.block.layer_norm = s.block.feed_forward = true;
             s.block.norm = NormPlacement::Pre;
             s.block.norm_kind = NormKind::RMSNorm;
         }},
    };
    for (const Case& c : cases) {
        INFO(c.name);
        Scenario s;
        s.d_model = 8;
        s.heads = 2;
        s.mask = MaskKind::Causal;
        s.seed = 5;
        c.set(s);
        const int n = 7;
        s.target.embeddings = normal_matrix(n, s.d_model, 11);
        s.target.tokens.assign(static_cast<size_t>(n), "t");
        REQUIRE(decode_faults(s).empty());
        LayerCache cache = empty_cache(s);
        Matrix last;
        DecodedAttention attention;
        for (int t = 0; t < n; ++t) last = decode_layer(s, t, s.target.embeddings.row(t), cache, &attention);
        // a chunked layer keeps the last token's chunk only: position 6 starts one of 3, is the third of one of 4
        if (s.mask == MaskKind::Chunked) CHECK(cache.rows() == (n - 1) % s.chunk + 1);
        const Trace full = run(s);
        REQUIRE(full.ok);
        const Matrix& out = full.has_block ? full.block.output : full.output;
        CHECK((last - out.bottomRows(1)).cwiseAbs().maxCoeff() < 1e-5f);
        for (int h = 0; h < s.heads; ++h) {
            if (s.delta_net.on) {  // a linear layer draws no weights for the new row, and keeps each head's state
                CHECK(attention.weights[static_cast<size_t>(h)].size() == 0);
                CHECK((cache.state(h) - full.head[static_cast<size_t>(h)].state).cwiseAbs().maxCoeff() < 1e-5f);
                continue;
            }
            const Matrix& w = full.head[static_cast<size_t>(h)].weights;
            for (int j = attention.first_position; j < n; ++j)
                CHECK(std::abs(attention.weights[static_cast<size_t>(h)](j - attention.first_position) - w(n - 1, j)) < 1e-5f);
            if (s.sinks.size() != 0) CHECK(std::abs(attention.sink[static_cast<size_t>(h)] - full.head[static_cast<size_t>(h)].sink_weights(n - 1, 0)) < 1e-5f);
        }
    }
    // A long context: the heads' rows are shared among the threads (8 query heads, 2 K/V heads,
    // 400 cached rows), each head reading its K/V head's block.
    {
        Scenario s;
        s.d_model = 256;
        s.heads = 8;
        s.kv_heads = 2;
        s.positional = PositionalEncoding::Rotary;
        s.qk_norm = true;
        s.mask = MaskKind::Causal;
        s.seed = 9;
        const int n = 400;
        s.target.embeddings = normal_matrix(n, s.d_model, 13);
        s.target.tokens.assign(static_cast<size_t>(n), "t");
        LayerCache cache = empty_cache(s);
        Matrix last;
        DecodedAttention attention;
        for (int t = 0; t < n; ++t) last = decode_layer(s, t, s.target.embeddings.row(t), cache, &attention);
        CHECK(cache.rows() == n);
        CHECK(cache.k().cols() == 2 * 32);
        const Trace full = run(s);
        REQUIRE(full.ok);
        CHECK((last - full.output.bottomRows(1)).cwiseAbs().maxCoeff() < 1e-5f);
        for (int h = 0; h < s.heads; ++h) {
            INFO("head " << h);
            const Matrix& w = full.head[static_cast<size_t>(h)].weights;
            CHECK((attention.weights[static_cast<size_t>(h)] - w.row(n - 1)).cwiseAbs().maxCoeff() < 1e-5f);
            // The cache keeps K as the head read it: K/V head h / 4's block.
            CHECK((cache.k(h / 4) - full.head[static_cast<size_t>(h)].k).cwiseAbs().maxCoeff() < 1e-4f);
        }
    }
    // A mask that lets a token see later ones cannot be decoded: refused, saying why.
    Scenario open;
    open.mask = MaskKind::None;
    CHECK_THAT(decode_faults(open).front(), Catch::Contains("writing needs a causal, sliding-window or chunked mask"));
}
