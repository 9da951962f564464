// What each head does (core/interpret): the role scores against hand-built attention
// matrices and against a plain loop over the exported traces of every family, the probe, the
// logit lens against the model's own prediction, the ablation sweep against a full ablated
// run, and the trained induction circuit found by its scores.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <set>

#include "bad_model_catalogue.hpp"
#include "every_family.hpp"
#include "hf_family_fixtures.hpp"
#include "interpret/ablation_sweep.hpp"
#include "interpret/head_roles.hpp"
#include "interpret/logit_lens.hpp"
#include "interpret/model_roles.hpp"
#include "model/language_model.hpp"
#include "attention/serialize.hpp"
#include "train/trainer.hpp"

using namespace attn;
using namespace attn::interpret;
using attn::testing::families::FamilyCheckpoint;

namespace {

std::string interpret_folder(const std::string& label) {
    return (std::filesystem::temp_directory_path() / ("attnlab-test-interpret-" + label)).string();
}

std::vector<std::pair<std::string, lm::Model>> every_family() { return attn::testing::every_family("interpret"); }

// A matrix whose row i puts all its weight on key key_of(i).
template <typename F>
Matrix one_hot_rows(int n, F key_of) {
    Matrix a = Matrix::Zero(n, n);
    for (int i = 0; i < n; ++i) a(i, key_of(i)) = 1.0f;
    return a;
}

// The definitions, as plain loops over weights read back from a trace's JSON.
RoleScores plain_scores(const nlohmann::json& weights, int L) {
    const int n = static_cast<int>(weights.size());
    auto at = [&](int i, int j) { return weights[static_cast<size_t>(i)][static_cast<size_t>(j)].get<double>(); };
    double previous = 0, first = 0, self = 0, duplicate = 0, induction = 0;
    for (int i = 0; i < n; ++i) self += at(i, i) / n;
    for (int i = 1; i < n; ++i) {
        previous += at(i, i - 1) / (n - 1);
        first += at(i, 0) / (n - 1);
    }
    for (int i = n - L; i < n; ++i) {
        duplicate += at(i, i - L) / L;
        induction += at(i, i - L + 1) / L;
    }
    RoleScores s;
    s[Role::PreviousToken] = static_cast<float>(previous);
    s[Role::FirstToken] = static_cast<float>(first);
    s[Role::Self] = static_cast<float>(self);
    s[Role::DuplicateToken] = static_cast<float>(duplicate);
    s[Role::Induction] = static_cast<float>(induction);
    return s;
}

}  // namespace

TEST_CASE("role scores of hand-built attention: each pattern scores 1 on its own diagonal", "[interpret]") {
    const int L = 4, n = 1 + 2 * L;  // BOS, a block of 4, the block again
    SECTION("previous-token: row i on key i−1 (row 0 on itself)") {
        const RoleScores s = score_weights(one_hot_rows(n, [](int i) { return std::max(i - 1, 0); }), L);
        CHECK(s[Role::PreviousToken] == Approx(1.0));
        CHECK(s[Role::FirstToken] == Approx(1.0 / 8));  // row 1's previous token is the first
        CHECK(s[Role::Self] == Approx(1.0 / 9));        // row 0 has only itself
        CHECK(s[Role::DuplicateToken] == Approx(0.0));
        CHECK(s[Role::Induction] == Approx(0.0));
        CHECK(strongest_role(s, 0.5f) == Role::PreviousToken);
    }
    SECTION("first-token: every row on key 0") {
        const RoleScores s = score_weights(one_hot_rows(n, [](int) { return 0; }), L);
        CHECK(s[Role::FirstToken] == Approx(1.0));
        CHECK(s[Role::PreviousToken] == Approx(1.0 / 8));
        CHECK(strongest_role(s, 0.5f) == Role::FirstToken);
    }
    SECTION("self") {
        const RoleScores s = score_weights(Matrix::Identity(n, n), L);
        CHECK(s[Role::Self] == Approx(1.0));
        CHECK(s[Role::PreviousToken] == Approx(0.0));
    }
    SECTION("duplicate-token and induction: the second copy's rows on i−L and on i−L+1") {
        const RoleScores duplicate = score_weights(one_hot_rows(n, [&](int i) { return i >= n - L ? i - L : i; }), L);
        CHECK(duplicate[Role::DuplicateToken] == Approx(1.0));
        CHECK(duplicate[Role::Induction] == Approx(0.0));
        const RoleScores induction = score_weights(one_hot_rows(n, [&](int i) { return i >= n - L ? i - L + 1 : i; }), L);
        CHECK(induction[Role::Induction] == Approx(1.0));
        CHECK(induction[Role::DuplicateToken] == Approx(0.0));
        CHECK(induction[Role::Self] == Approx(5.0 / 9));  // the first copy's rows (and the BOS) on themselves
        CHECK(strongest_role(induction, 0.5f) == Role::Induction);  // the highest of those at or above the threshold
    }
    SECTION("uniform causal attention: row i gives each key 1/(i+1)") {
        Matrix a = Matrix::Zero(n, n);
        for (int i = 0; i < n; ++i) a.row(i).head(i + 1).setConstant(1.0f / static_cast<float>(i + 1));
        const RoleScores s = score_weights(a, L);
        double mean = 0;
        for (int i = 1; i < n; ++i) mean += 1.0 / (i + 1) / (n - 1);
        CHECK(s[Role::PreviousToken] == Approx(mean));
        CHECK(s[Role::FirstToken] == Approx(mean));
        CHECK_FALSE(strongest_role(s, 0.5f));
    }
    SECTION("a NaN row makes the scores that read it NaN") {
        Matrix a = Matrix::Identity(n, n);
        a(3, 2) = std::nanf("");
        const RoleScores s = score_weights(a, L);
        CHECK(std::isnan(s[Role::PreviousToken]));
        CHECK(s[Role::Self] == Approx(1.0));
    }
}

TEST_CASE("the probe: BOS, a block of distinct drawable tokens, the same block again, refused where it cannot fit", "[interpret]") {
    ProbeVocabulary v;
    v.size = 50;
    v.excluded = {0, 1, 2, 49};
    v.bos = 1;
    v.max_positions = 64;
    std::string why;
    const std::optional<Probe> p = make_probe(v, 10, 7, &why);
    INFO(why);
    REQUIRE(p);
    REQUIRE(p->ids.size() == 21);
    CHECK(p->ids[0] == 1);
    std::set<int> block;
    for (int i = 1; i <= 10; ++i) {
        const int id = p->ids[static_cast<size_t>(i)];
        CHECK(id == p->ids[static_cast<size_t>(i + 10)]);
        CHECK(id >= 3);
        CHECK(id < 49);
        block.insert(id);
    }
    CHECK(block.size() == 10);
    CHECK(make_probe(v, 10, 7, nullptr)->ids == p->ids);  // the same seed, the same probe
    CHECK(make_probe(v, 10, 8, nullptr)->ids != p->ids);
    CHECK(default_repeat_length(v) == 20);
    v.max_positions = 16;
    CHECK(default_repeat_length(v) == 7);  // 1 + 2·7 = 15 ≤ 16
    CHECK_FALSE(make_probe(v, 8, 1, &why));
    CHECK(why == "a block of 8 twice after the BOS is 17 tokens; the model reads at most 16");
    CHECK_FALSE(make_probe(v, 3, 1, &why));
    CHECK(why == "the probe repeats a block of at least 4 tokens, not 3");
    v.max_positions = 0;
    v.size = 8;  // 5 drawable: 3 … 7
    CHECK_FALSE(make_probe(v, 6, 1, &why));
    CHECK(why == "a block of 6 distinct tokens needs that many tokens; the vocabulary has 5 that are not special");
    CHECK(make_probe(v, 5, 1, &why)->ids.size() == 11);
}

TEST_CASE("every family's head roles equal the definitions recomputed from the exported traces of its probe", "[interpret][families]") {
    for (const auto& [label, model] : every_family()) {
        INFO("family " << label);
        std::string why;
        const std::optional<RolesRun> roles = run_head_roles(model, 0, 3, &why);
        INFO(why);
        REQUIRE(roles);
        const int L = roles->probe.repeat_length;
        CHECK(L >= kMinRepeatLength);
        CHECK(static_cast<int>(roles->probe.ids.size()) == 2 * L + (roles->probe.bos ? 1 : 0));
        // Gated DeltaNet layers (Qwen3-Next) have no softmax weights to score: every other layer's heads
        int scored = 0;
        for (const Trace& t : lm::forward_ids(model, roles->probe.ids).layers)
            if (!t.settings.delta_net) scored += static_cast<int>(t.head.size());
        CHECK(scored < model.shape().layers * model.shape().heads + (label == "qwen3_next" ? 0 : 1));
        REQUIRE(static_cast<int>(roles->heads.size()) == scored);
        // The same probe run again gives the same traces (the scores read nothing else).
        const ModelPass again = lm::forward_ids(model, roles->probe.ids);
        REQUIRE(again.ok);
        for (const HeadRoles& h : roles->heads) {
            INFO("layer " << h.head.layer + 1 << " head " << h.head.head + 1);
            const nlohmann::json exported = trace_to_json(again.layers[static_cast<size_t>(h.head.layer)]);
            const nlohmann::json& weights = exported["heads"][static_cast<size_t>(h.head.head)]["weights"];
            const RoleScores plain = plain_scores(weights, L);
            for (Role r : kRoles) {
                INFO(role_key(r));
                CHECK(h.scores[r] == Approx(plain[r]).margin(1e-6));
                CHECK(h.scores[r] >= 0.0f);
                CHECK(h.scores[r] <= 1.0f + 1e-6f);
            }
        }
    }
}

TEST_CASE("a tokenizer's BOS leads the probe and its special tokens are never drawn", "[interpret][tokenizer]") {
    namespace fs = std::filesystem;
    const std::string folder = interpret_folder("gemma3-tokenizer");
    attn::testing::families::write_gemma3_with_image_token(folder, (fs::path(ATTNLAB_TEST_DATA) / "tokenizers" / "bytelevel-roberta-prefix-space.json").string());
    hf::OpenedModelLoad load = hf::open_model(folder);
    for (const std::string& e : load.errors) INFO(e);
    REQUIRE(load.model);
    const tok::TokenizerJson tokenizer = *load.model->tokenizer;
    const lm::Model model(std::move(*load.model));
    const ProbeVocabulary v = probe_vocabulary(model);
    CHECK(v.size == 402);  // the embedding's rows: the tokenizer's 403rd token has none
    const std::vector<int> with = tokenizer.encode("a"), without = tokenizer.encode_without_special_tokens("a");
    REQUIRE(with.size() > without.size());
    REQUIRE(v.bos);
    CHECK(*v.bos == with.front());
    std::string why;
    const std::optional<Probe> probe = make_probe(v, 40, 11, &why);
    INFO(why);
    REQUIRE(probe);
    CHECK(probe->ids.front() == *v.bos);
    for (size_t i = 1; i < probe->ids.size(); ++i) {
        CHECK_FALSE(tokenizer.is_special(probe->ids[i]));
        CHECK(probe->ids[i] < 402);
    }
}

TEST_CASE("the logit lens's last layer is the model's own prediction, for every causal family, and BERT's is refused", "[interpret][families]") {
    for (const auto& [label, model] : every_family()) {
        INFO("family " << label);
        const std::vector<int> ids = {3, 9, 4, 7, 2, 8};
        const ModelPass pass = lm::forward_ids(model, ids);
        REQUIRE(pass.ok);
        const stack::Stack stack = lm::model_stack(model, pass);
        std::string why;
        const std::optional<LogitLens> lens = logit_lens(stack, pass, 5, &why);
        if (model.masked_lm()) {
            CHECK_FALSE(lens);
            CHECK_THAT(why, Catch::Contains("masked LM"));
            continue;
        }
        INFO(why);
        REQUIRE(lens);
        REQUIRE(static_cast<int>(lens->layers.size()) == model.shape().layers);
        for (const auto& cells : lens->layers) CHECK(cells.size() == ids.size());
        const LensCell& last = lens->layers.back().back();
        REQUIRE(last.ids.size() == pass.next_token_top5.size());
        for (size_t k = 0; k < last.ids.size(); ++k) {
            CHECK(last.ids[k] == pass.next_token_top5[k].id);
            CHECK(last.probabilities[k] == Approx(pass.next_token_top5[k].probability).margin(1e-6));
        }
        // An earlier layer reads its own stream: not, in general, the last layer's answer.
        float total = 0;
        for (float p : lens->layers.front().front().probabilities) total += p;
        CHECK(total <= 1.0f + 1e-5f);
    }
}

TEST_CASE("the ablation sweep's value for each head equals a full run with that head ablated", "[interpret][families]") {
    for (const auto& [label, model] : every_family()) {
        if (model.masked_lm()) continue;
        INFO("family " << label);
        const std::vector<int> ids = {5, 2, 8, 3, 6};
        const ModelPass pass = lm::forward_ids(model, ids);
        REQUIRE(pass.ok);
        const stack::Stack stack = lm::model_stack(model, pass);
        const int target = pass.next_token_top5.front().id;
        std::string why;
        int calls = 0;
        const std::optional<AblationSweep> sweep = ablation_sweep(stack, pass, target, &why, [&](int, int) { return ++calls > 0; });
        INFO(why);
        REQUIRE(sweep);
        CHECK(calls == model.shape().layers * model.shape().heads + 1);
        CHECK(sweep->log_probability == Approx(std::log(pass.next_token_top5.front().probability)).margin(1e-5));
        for (int l = 0; l < model.shape().layers; ++l)
            for (int h = 0; h < model.shape().heads; ++h) {
                INFO("layer " << l + 1 << " head " << h + 1);
                const ModelPass ablated = lm::forward_ids(model, ids, stack::HeadSet{{l, h}});
                REQUIRE(ablated.ok);
                const float full = log_probability(ablated.logits.bottomRows(1), target) - log_probability(pass.logits.bottomRows(1), target);
                CHECK(sweep->delta(l, h) == Approx(full).margin(1e-5));
            }
        // A head the pass already ablates stays ablated, and its own change is 0.
        const ModelPass with_one = lm::forward_ids(model, ids, stack::HeadSet{{0, 0}});
        const stack::Stack again = lm::model_stack(model, with_one);
        const std::optional<AblationSweep> on_ablated = ablation_sweep(again, with_one, target, &why);
        REQUIRE(on_ablated);
        CHECK(on_ablated->delta(0, 0) == 0.0f);
        // Stopped: none, and why.
        CHECK_FALSE(ablation_sweep(stack, pass, target, &why, [](int done, int) { return done < 1; }));
        CHECK(why == "cancelled");
        CHECK_FALSE(ablation_sweep(stack, pass, -1, &why));
        CHECK_THAT(why, Catch::Contains("not in the vocabulary"));
    }
}

TEST_CASE("induction trained in 2 layers: a previous-token head in layer 1 and an induction head in layer 2, none after one step",
          "[interpret][train]") {
    train::TrainSettings s;
    s.task.kind = train::TaskKind::Induction;
    s.model.d_model = 32;
    s.model.heads = 2;
    s.model.layers = 2;
    s.seed = 1;
    s.evaluate_every = 0;
    std::vector<std::string> errors;
    auto trainer = train::Trainer::create(s, errors);
    REQUIRE(trainer);
    auto best = [&](Role role, int layer) {
        std::string why;
        const std::optional<RolesRun> roles = run_head_roles(trainer->model(), s.task, 0, 1, &why);
        INFO(why);
        REQUIRE(roles);
        float top = 0.0f;
        for (const HeadRoles& h : roles->heads)
            if (h.head.layer == layer) top = std::max(top, h.scores[role]);
        return top;
    };
    trainer->run(1);
    CHECK(best(Role::PreviousToken, 0) < 0.3f);
    CHECK(best(Role::Induction, 1) < 0.3f);
    CHECK(best(Role::PreviousToken, 1) < 0.3f);
    CHECK(best(Role::Induction, 0) < 0.3f);
    trainer->run(299);
    // The probe's block is the task's 6 letters (a block longer than it trained on asks about
    // positions it never saw).
    CHECK(best(Role::PreviousToken, 0) >= 0.5f);
    CHECK(best(Role::Induction, 1) >= 0.5f);
}
