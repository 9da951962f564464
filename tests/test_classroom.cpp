// Lessons, comparisons, hand checks, exports and undo: the classroom's core.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "attention/analysis.hpp"
#include "attention/engine.hpp"
#include "tensor/export.hpp"
#include "attention/history.hpp"
#include "tensor/reflect.hpp"
#include "interpret/head_roles.hpp"
#include "teaching/lesson.hpp"
#include "teaching/presets.hpp"
#include "attention/serialize.hpp"

using namespace attn;
using Catch::Matchers::Contains;

TEST_CASE("every shipped lesson loads and every step computes") {
    std::vector<std::string> errors;
    const auto lessons = load_lessons(ATTNLAB_LESSONS_DIR, errors);
    for (auto& e : errors) FAIL(e);
    REQUIRE(lessons.size() >= 6);
    for (const Lesson& lesson : lessons) {
        INFO(lesson.file);
        CHECK_FALSE(lesson.title.empty());
        REQUIRE_FALSE(lesson.steps.empty());
        for (int i = 0; i < static_cast<int>(lesson.steps.size()); ++i) {
            CHECK_FALSE(lesson.steps[static_cast<size_t>(i)].text.empty());
            CHECK(run(scenario_at_step(lesson, i)).ok);
        }
    }
}

TEST_CASE("the positional-encoding lesson shows what it claims") {
    const auto load = load_lesson_file(std::string(ATTNLAB_LESSONS_DIR) + "/05-positional-encoding.json");
    REQUIRE(load.lesson);
    const Lesson& l = *load.lesson;
    // Steps 1 and 2: no PE, "dog bites man" vs "man bites dog": the rows are only permuted.
    const Trace a = run(scenario_at_step(l, 0)), b = run(scenario_at_step(l, 1));
    CHECK((a.output.row(0) - b.output.row(2)).cwiseAbs().maxCoeff() < 1e-5f);
    CHECK((a.output.row(2) - b.output.row(0)).cwiseAbs().maxCoeff() < 1e-5f);
    // Steps 4 and 5: with PE, no longer a permutation.
    const Trace c = run(scenario_at_step(l, 3)), d = run(scenario_at_step(l, 4));
    CHECK((c.output.row(0) - d.output.row(2)).cwiseAbs().maxCoeff() > 1e-3f);
}

TEST_CASE("a malformed lesson names the file and the line") {
    SECTION("unknown stage") {
        const std::string text = "{\n  \"title\": \"t\",\n  \"preset\": \"dog-bites-man\",\n  \"steps\": [\n"
                                 "    {\"stage\": \"scores\", \"text\": \"a\"},\n    {\"stage\": \"wieghts\", \"text\": \"b\"}\n  ]\n}\n";
        const auto load = lesson_from_text(text, "bad-lesson.json");
        CHECK_FALSE(load.lesson);
        REQUIRE_FALSE(load.errors.empty());
        CHECK_THAT(load.errors[0], Contains("bad-lesson.json: line 6") && Contains("step 2") && Contains("wieghts"));
    }
    SECTION("not JSON") {
        const auto load = lesson_from_text("{\n\"title\": \"t\",\n\"steps\": [\n}", "broken.json");
        CHECK_THAT(load.errors.at(0), Contains("broken.json: line 4"));
    }
    SECTION("unknown preset") {
        const auto load = lesson_from_text(R"({"title": "t", "preset": "nope", "steps": [{"stage": "scores", "text": "x"}]})", "p.json");
        CHECK_THAT(load.errors.at(0), Contains("p.json: line 1") && Contains("unknown preset \"nope\""));
    }
    SECTION("a step whose toggles make the scenario impossible") {
        const auto load = lesson_from_text(
            R"({"title": "t", "preset": "dog-bites-man", "steps": [{"stage": "scores", "text": "x", "toggles": {"heads": 3}}]})", "h.json");
        CHECK_THAT(load.errors.at(0), Contains("h.json") && Contains("step 1") && Contains("not divisible by 3 heads"));
    }
}

TEST_CASE("scaling keeps the softmax soft as d_k grows, without it the softmax sharpens") {
    const auto points = softmax_sharpness({1, 4, 16, 64, 256}, 32, 200, 1);
    REQUIRE(points.size() == 5);
    CHECK(points[4].max_weight_unscaled > 0.8);
    CHECK(points[4].max_weight_unscaled > points[0].max_weight_unscaled + 0.4);
    CHECK(std::abs(points[4].max_weight_scaled - points[0].max_weight_scaled) < 0.1);
    CHECK(points[4].entropy_unscaled < 0.5 * points[4].entropy_scaled);
}

TEST_CASE("compare: the difference equals B − A cell for cell") {
    Scenario a = find_preset("animal-was-tired")->scenario;
    Scenario b = a;
    b.mask = MaskKind::Causal;
    const Trace ta = run(a), tb = run(b);
    const auto diffs = compare_traces(ta, tb);
    bool seen_weights = false;
    for (const auto& d : diffs) {
        const Matrix* ma = find_matrix(ta, d.name);
        const Matrix* mb = find_matrix(tb, d.name);
        REQUIRE(ma);
        REQUIRE(mb);
        for (Eigen::Index i = 0; i < ma->rows(); ++i)
            for (Eigen::Index j = 0; j < ma->cols(); ++j)
                if (std::isfinite((*mb)(i, j)) && std::isfinite((*ma)(i, j))) {
                    CHECK(d.difference(i, j) == (*mb)(i, j) - (*ma)(i, j));
                }
        if (d.name == "head0.weights") {
            seen_weights = true;
            CHECK(d.max_abs > 0.0f);
        }
        if (d.name == "x") CHECK(d.max_abs == 0.0f);
    }
    CHECK(seen_weights);
}

TEST_CASE("check my hand calculation") {
    const Trace t = run(find_preset("dot-product-3-tokens")->scenario);
    SECTION("right to the digits typed") {
        const auto c = check_hand_value(t, "head0.weights", 0, 0, 0.40, 2);
        CHECK(c.correct);
        CHECK_THAT(c.verdict, Contains("Right to 2 decimals: the value is 0.401, and 0.40 is within \xC2\xB1" "0.005 of it"));
        const auto coarse = check_hand_value(t, "head0.weights", 0, 0, 0.4, 1);
        CHECK(coarse.correct);
        CHECK_THAT(coarse.verdict, Contains("Right to 1 decimal") && Contains("\xC2\xB1" "0.05"));
    }
    SECTION("the article's 0.42 is wrong") {
        const auto c = check_hand_value(t, "head0.weights", 0, 0, 0.42, 2);
        CHECK_FALSE(c.correct);
        CHECK_THAT(c.verdict, Contains("0.401") && Contains("judged to 2 decimals: within \xC2\xB1" "0.005"));
    }
    SECTION("a raw score where the scaled one belongs") {
        const auto c = check_hand_value(t, "head0.scaled_scores", 2, 0, 2.0, 1);
        CHECK_FALSE(c.correct);
        CHECK_THAT(c.verdict, Contains("raw score") && Contains("√d_k"));
    }
    SECTION("the exponential without the division") {
        const auto c = check_hand_value(t, "head0.weights", 0, 0, 2.028, 3);
        CHECK_FALSE(c.correct);
        CHECK_THAT(c.verdict, Contains("exponential") && Contains("sum"));
    }
    SECTION("an output shows its terms") {
        const auto c = check_hand_value(t, "head0.output", 0, 1, 4.0, 0);
        CHECK_FALSE(c.correct);
        CHECK_THAT(c.verdict, Contains("0.198·5.000"));
    }
    SECTION("a cell that is not there is named as the user reads it, counted from 1") {
        const auto c = check_hand_value(t, "head0.weights", 5, 0, 0.5, 1);
        CHECK_FALSE(c.correct);
        CHECK(c.verdict == "There is no cell (6, 1) in head 1 \xC2\xB7 weights.");
        // The whole output shares its key with a head's: no head's steps are looked for in it.
        const auto whole = check_hand_value(t, "output", 0, 1, 4.0, 0);
        CHECK_FALSE(whole.correct);
        CHECK_THAT(whole.verdict, !Contains("\xCE\xA3_j"));
    }
}

TEST_CASE("CSV and JSON exports equal the trace") {
    const Trace t = run(find_preset("she-gave-her-dog-a-bone")->scenario);
    for (const std::string& name : matrix_names(t)) {
        INFO(name);
        const Matrix& m = *find_matrix(t, name);
        const Matrix back = matrix_from_csv(matrix_to_csv(m, t.query_tokens, {}), false, true);
        REQUIRE(back.rows() == m.rows());
        REQUIRE(back.cols() == m.cols());
        for (Eigen::Index i = 0; i < m.size(); ++i)
            if (std::isfinite(m.data()[i])) CHECK(back.data()[i] == m.data()[i]);  // 9 digits: exact for float32
    }
    const auto j = trace_to_json(t);
    CHECK(j["heads"][1]["weights"][2][3].get<float>() == t.head[1].weights(2, 3));
}

TEST_CASE("Markdown and LaTeX tables have the right shape and values") {
    Matrix m(2, 3);
    m << 0.25f, 0.5f, 0.25f, 1.0f, 0.0f, -INFINITY;
    const std::string md = matrix_to_markdown(m, {"I", "love"}, {"a", "b", "c"}, 2);
    CHECK(md == "| | a | b | c |\n|---|---:|---:|---:|\n| I | 0.25 | 0.50 | 0.25 |\n| love | 1.00 | 0.00 | -inf |\n");
    const std::string tex = matrix_to_latex(m, {"I", "lo_ve"}, {"a", "b", "c"}, 1);
    CHECK_THAT(tex, Contains("\\begin{tabular}{lrrr}") && Contains("lo\\_ve & 1.0 & 0.0 & $-\\infty$ \\\\"));
}

TEST_CASE("undo after N edits restores the original scenario exactly, redo replays them") {
    Scenario s = find_preset("bank-deposit")->scenario;
    s.target.embeddings = resolved_embeddings(s.target, s.d_model);
    const auto original = scenario_to_json(s);
    History history;
    std::vector<nlohmann::json> states;
    for (int i = 0; i < 20; ++i) {
        history.record(s);
        if (i % 3 == 0) s.target.embeddings(i % 7, i % 8) += 0.5f;
        else if (i % 3 == 1) s.heads = s.heads == 2 ? 4 : 2;
        else s.mask = s.mask == MaskKind::Causal ? MaskKind::None : MaskKind::Causal;
        states.push_back(scenario_to_json(s));
    }
    for (int i = 0; i < 20; ++i) REQUIRE(history.undo(s));
    CHECK_FALSE(history.undo(s));
    CHECK(scenario_to_json(s) == original);
    for (int i = 0; i < 20; ++i) REQUIRE(history.redo(s));
    CHECK(scenario_to_json(s) == states.back());
    history.undo(s);
    history.record(s);  // a new edit drops the redo branch
    CHECK_FALSE(history.can_redo());
}

TEST_CASE("undo history of a long scenario (65,536 tokens, 8,192 under the sanitizers) stays bounded: unchanged chunks are shared") {
#ifdef ATTNLAB_SANITIZED_BUILD
    constexpr int n = 8192;  // 270 edits scan the whole scenario each: minutes under AddressSanitizer at the full size
#else
    constexpr int n = 65536;
#endif
    Scenario s;
    s.input = InputMode::Embeddings;
    s.d_model = 64;
    s.heads = 4;
    for (int i = 0; i < n; ++i) s.target.tokens.push_back("token" + std::to_string(i));
    s.target.embeddings = Matrix::Random(n, 64);
    const size_t scenario_bytes = static_cast<size_t>(n) * 64 * sizeof(float);  // 16 MiB of embeddings alone (2 MiB sanitized)

    // One cell per edit: each step adds one 64 KiB chunk, not a 16 MiB copy.
    History history(256, size_t{64} << 20);
    constexpr int edits = 270;
    Scenario step_14;
    for (int i = 0; i < edits; ++i) {
        if (i == edits - 256) step_14 = s;
        history.record(s, "set X[" + std::to_string(i) + "]");
        s.target.embeddings((i * 977) % n, i % 64) += 1.0f;
    }
    CHECK(history.undo_depth() == 256);
    CHECK(history.undo_action() == "set X[269]");
    const size_t held = history.bytes();
    INFO("history holds " << held << " bytes");
    CHECK(held > scenario_bytes);                                        // one full copy is there
    CHECK(held < scenario_bytes + 256 * History::kChunkBytes + (size_t{8} << 20));  // and then a chunk per step
    // Every step comes back exactly.
    for (int i = 0; i < 256; ++i) REQUIRE(history.undo(s));
    CHECK_FALSE(history.undo(s));
    CHECK(reflect::equal(s, step_14));
    CHECK(history.redo_action() == "set X[14]");
    CHECK(history.bytes() < held + (size_t{8} << 20));  // the redo side shares the same chunks

    // Edits that change everything: the oldest steps go, the byte bound holds, and the newest
    // step always stays.
    const size_t budget = scenario_bytes * 5 / 2;  // 40 MiB: room for two copies, not three
    History small(256, budget);
    for (int i = 0; i < 6; ++i) {
        small.record(s, "scale X");
        s.target.embeddings *= 1.5f;
        CHECK(small.bytes() <= budget);
        CHECK(small.undo_depth() >= 1);
    }
    CHECK(small.undo_depth() < 6);
    History tiny(256, 1024);
    tiny.record(s, "too big to keep two");
    CHECK(tiny.undo_depth() == 1);
}

// [SECTION] Lessons that train: "What heads learn"

namespace {

// The mean weight a head puts, over `rows`, on each row's expected key.
double mass_on(const Trace& t, int head, const std::vector<std::pair<int, int>>& row_key) {
    double mass = 0.0;
    for (const auto& [row, key] : row_key) mass += t.head[static_cast<size_t>(head)].weights(row, key);
    return mass / static_cast<double>(std::max<size_t>(1, row_key.size()));
}

}  // namespace

TEST_CASE("the lesson 'What heads learn' trains each step and shows the pattern its text names") {
    const auto load = load_lesson_file(std::string(ATTNLAB_LESSONS_DIR) + "/07-what-heads-learn.json");
    for (const std::string& e : load.errors) FAIL(e);
    REQUIRE(load.lesson);
    const Lesson& l = *load.lesson;
    REQUIRE(l.steps.size() == 5);
    for (const LessonStep& s : l.steps) REQUIRE(s.train);

    // Reverse: 6 letters, |, the letters backwards; row 6+j must read key 5−j (the anti-diagonal).
    auto anti_diagonal = [](const Trace& t) {
        std::vector<std::pair<int, int>> rows;
        REQUIRE(t.query_tokens.size() == 12);
        CHECK(t.query_tokens[6] == "|");
        for (int j = 0; j < 6; ++j) {
            if (j < 5) CHECK(t.query_tokens[static_cast<size_t>(7 + j)] == t.query_tokens[static_cast<size_t>(5 - j)]);  // s | reverse(s)
            rows.emplace_back(6 + j, 5 - j);
        }
        return rows;
    };
    const Trace untrained = run(scenario_at_step(l, 0));
    const Trace trained = run(scenario_at_step(l, 1));
    REQUIRE(untrained.ok);
    REQUIRE(trained.ok);
    const int reverse_head = l.steps[1].train->head - 1;
    CHECK(mass_on(untrained, reverse_head, anti_diagonal(untrained)) < 0.3);
    CHECK(mass_on(trained, reverse_head, anti_diagonal(trained)) >= 0.9);
    // Deterministic: the step trains to the same weights every time it opens.
    CHECK(run(scenario_at_step(l, 1)).head[static_cast<size_t>(reverse_head)].weights ==
          trained.head[static_cast<size_t>(reverse_head)].weights);

    // Induction, layer 1: head on the previous token, rows 1 … m−1 of the first copy.
    const Trace layer1 = run(scenario_at_step(l, 3));
    REQUIRE(layer1.ok);
    std::vector<std::pair<int, int>> previous;
    for (int i = 1; i < 5; ++i) previous.emplace_back(i, i - 1);
    CHECK(mass_on(layer1, l.steps[3].train->head - 1, previous) > 0.7);
    // Layer 2: a row whose letter occurred before reads the key after that occurrence.
    const Trace layer2 = run(scenario_at_step(l, 4));
    REQUIRE(layer2.ok);
    const std::vector<std::string>& tokens = layer2.query_tokens;
    std::vector<std::pair<int, int>> induction;
    for (int i = 0; i < static_cast<int>(tokens.size()); ++i)
        for (int j = 0; j + 1 < i; ++j)
            if (tokens[static_cast<size_t>(j)] == tokens[static_cast<size_t>(i)]) induction.emplace_back(i, j + 1);
    REQUIRE(induction.size() >= 3);
    CHECK(mass_on(layer2, l.steps[4].train->head - 1, induction) >= 0.8);
}

TEST_CASE("the lesson 'Find the induction head' computes what its text speaks of: the roles, the circuit, the accuracy without it") {
    const auto load = load_lesson_file(std::string(ATTNLAB_LESSONS_DIR) + "/10-find-the-induction-head.json");
    for (const std::string& e : load.errors) FAIL(e);
    REQUIRE(load.lesson);
    const Lesson& l = *load.lesson;
    REQUIRE(l.steps.size() == 5);
    auto facts_of = [&](int step) {
        LessonFacts facts;
        REQUIRE(l.steps[static_cast<size_t>(step)].train);
        const Scenario s = trained_lesson_scenario(*l.steps[static_cast<size_t>(step)].train, &facts);
        CHECK(run(s).ok);
        return facts;
    };
    auto best = [](const LessonFacts& f, interpret::Role role, int layer) {
        float top = 0.0f;
        for (const interpret::HeadRoles& h : f.roles)
            if (h.head.layer == layer) top = std::max(top, h.scores[role]);
        return top;
    };
    const LessonFacts untrained = facts_of(0);
    REQUIRE(untrained.roles.size() == 4);  // 2 layers × 2 heads
    CHECK(best(untrained, interpret::Role::PreviousToken, 0) < 0.3f);
    CHECK(best(untrained, interpret::Role::Induction, 1) < 0.3f);
    const LessonFacts trained = facts_of(1);
    CHECK(best(trained, interpret::Role::PreviousToken, 0) >= 0.5f);
    CHECK(best(trained, interpret::Role::Induction, 1) >= 0.5f);
    CHECK(trained.accuracy >= 0.95);
    CHECK_THAT(trained.sentence(), Contains("layer 2, head 1:") && Contains("\xE2\x86\x92 induction"));
    // Step 4 ablates the induction head: the accuracy falls far.
    const LessonFacts ablated = facts_of(3);
    REQUIRE(ablated.ablated_accuracy);
    CHECK(ablated.accuracy >= 0.95);
    CHECK(*ablated.ablated_accuracy < ablated.accuracy - 0.4);
    CHECK(ablated.roles.empty());
    CHECK_THAT(ablated.sentence(), Contains("with the step's heads ablated: "));
    // Steps 2 to 5 train the same model: kept, it trains once, and shows what training afresh shows.
    TrainedLessonModel kept;
    trained_lesson_scenario(*l.steps[1].train, nullptr, &kept);
    REQUIRE(kept.trainer);
    const train::Trainer* once = kept.trainer.get();
    const Scenario reused = trained_lesson_scenario(*l.steps[3].train, nullptr, &kept);
    CHECK(kept.trainer.get() == once);
    CHECK(reflect::equal(reused, trained_lesson_scenario(*l.steps[3].train)));
    trained_lesson_scenario(*l.steps[0].train, nullptr, &kept);  // 0 steps: another model
    CHECK(kept.trainer.get() != once);
}

TEST_CASE("a malformed 'train' key in a lesson names the step, the key and the line") {
    struct Bad {
        const char* train;
        const char* says;
    };
    const std::vector<Bad> catalogue{
        {R"({"task": "fly"})", "step 1 'train.task': unknown task \"fly\"; expected one of copy, reverse"},
        {R"({"layers": 1})", "step 1 'train.task': missing"},
        {R"({"task": "reverse", "layers": 3})", "step 1 'train.layers': expected a whole number from 1 to 2, found 3"},
        {R"({"task": "reverse", "heads": "two"})", "step 1 'train.heads': expected a whole number from 1 to 4"},
        {R"({"task": "reverse", "heads": 3})", "d_model 32 is not divisible by 3 heads"},
        {R"({"task": "reverse", "steps": 5000})", "step 1 'train.steps': expected a whole number from 0 to 1000"},
        {R"({"task": "reverse", "seed": -1})", "step 1 'train.seed': expected a whole number 0 or more"},
        {R"({"task": "reverse", "layer": 2})", "step 1 'train.layer': layer 2 of a model with 1 layer"},
        {R"({"task": "reverse", "head": 3})", "step 1 'train.head': head 3 of a model with 2 heads"},
        {R"({"task": "reverse", "positional_encoding": "spiral"})", "step 1 'train.positional_encoding': expected none, sinusoidal"},
        {R"({"task": "reverse", "lr": 0.1})", "step 1 'train.lr': unknown key"},
        {R"({"task": "reverse", "ablate": [[2, 1]]})", "step 1 'train.ablate': head 1 of layer 2 is not in a model of 1 layers of 2 heads"},
        {R"({"task": "reverse", "ablate": [1, 1]})", "step 1 'train.ablate': expected a list of [layer, head] pairs"},
        {R"({"task": "reverse", "roles": 1})", "step 1 'train.roles': expected true or false"},
        {R"({"task": "reverse", "write": {"prompt": "a b z |"}})", "step 1 'train.write.prompt': 'z' is not a token of the reverse task"},
        {R"({"task": "reverse", "write": {"prompt": "a |", "tokens": 40}})", "step 1 'train.write.tokens': expected a whole number from 0 to 32"},
        {R"({"task": "reverse", "write": {"prompt": "a |", "top_p": 1.5}})", "step 1 'train.write': top-p is 1.5"},
        {R"({"task": "reverse", "write": {"prompt": "a |", "temperature": -1}})", "step 1 'train.write': temperature is -1"},
        {R"({"task": "reverse", "write": {"prompt": "a |", "beams": 2}})", "step 1 'train.write.beams': unknown key"},
        {R"({"task": "reverse", "costs": [{"name": "x", "heads": 6, "kv_heads": 4}]})", "'train.costs.kv_heads': x: 4 K/V heads do not divide 6"},
        {R"({"task": "reverse", "costs": [{"name": "x", "layers": 0}]})", "step 1 'train.costs.layers': expected a whole number from 1"},
        {R"("reverse")", "step 1 'train': expected an object"},
    };
    for (const Bad& bad : catalogue) {
        INFO(bad.train);
        const std::string text = std::string("{\n  \"title\": \"t\",\n  \"steps\": [\n    {\"stage\": \"weights\", \"text\": \"a\",\n") +
                                 "     \"train\": " + bad.train + "}\n  ]\n}\n";
        const auto load = lesson_from_text(text, "train-lesson.json");
        CHECK_FALSE(load.lesson);
        REQUIRE_FALSE(load.errors.empty());
        bool found = false;
        for (const std::string& e : load.errors) found = found || (e.find(bad.says) != std::string::npos && e.rfind("train-lesson.json: ", 0) == 0);
        INFO("first message: " << load.errors[0]);
        CHECK(found);
    }
    SECTION("the line of a wrong value") {
        const auto load = lesson_from_text("{\n\"title\": \"t\",\n\"steps\": [\n{\"stage\": \"weights\", \"text\": \"a\",\n"
                                           "\"train\": {\"task\": \"reverse\",\n\"steps\": 5000}}]}\n",
                                           "lined.json");
        REQUIRE_FALSE(load.errors.empty());
        CHECK_THAT(load.errors[0], Contains("lined.json: line 6: step 1 'train.steps'"));
    }
    SECTION("toggles beside 'train', and a step without 'train' in a lesson with no scenario") {
        auto load = lesson_from_text(R"({"title": "t", "steps": [{"stage": "weights", "text": "a", "train": {"task": "reverse"}, "toggles": {"heads": 1}}]})",
                                     "t.json");
        CHECK_THAT(load.errors.at(0), Contains("step 1 'toggles': a step with 'train' shows the trained model as it is"));
        load = lesson_from_text(R"({"title": "t", "steps": [{"stage": "weights", "text": "a", "train": {"task": "reverse"}}, {"stage": "scores", "text": "b"}]})",
                                "t.json");
        CHECK_THAT(load.errors.at(0), Contains("give exactly one of 'preset'"));
    }
}

TEST_CASE("the since-2017 lesson walks one sentence through the 2017, GPT-2, Llama, Gemma 2, Gemma 3, OLMo 2 and Phi-3 blocks, each step showing its change") {
    const auto load = load_lesson_file(std::string(ATTNLAB_LESSONS_DIR) + "/08-since-2017.json");
    for (const std::string& e : load.errors) INFO(e);
    REQUIRE(load.lesson);
    const Lesson& l = *load.lesson;
    REQUIRE(l.steps.size() == 16);
    const Scenario y2017 = scenario_at_step(l, 0), gpt2 = scenario_at_step(l, 3), llama = scenario_at_step(l, 5),
                   gemma = scenario_at_step(l, 8), gemma3 = scenario_at_step(l, 11);
    // The same sentence throughout.
    CHECK(gpt2.target.tokens == y2017.target.tokens);
    CHECK(gemma.target.tokens == y2017.target.tokens);
    const Trace a = run(y2017), b = run(gpt2), c = run(llama), d = run(gemma);
    REQUIRE((a.ok && b.ok && c.ok && d.ok));
    CHECK(a.head[0].weights(0, 5) > 0.0f);   // 2017: the first token sees the future
    CHECK(b.head[0].weights(0, 5) == 0.0f);  // GPT-2: causal
    CHECK(b.settings.block.norm == NormPlacement::Pre);
    CHECK(c.kv_heads == 2);                  // Llama: grouped-query
    CHECK(c.head[0].k == c.head[1].k);
    CHECK(c.head[0].q_unrotated.size() != 0);  // RoPE: q before and after
    CHECK(c.settings.block.norm_kind == NormKind::RMSNorm);
    CHECK(c.settings.block.gated);
    CHECK(d.head[0].capped_scores.size() != 0);   // Gemma 2: soft-capped
    CHECK(d.head[0].weights(8, 2) == 0.0f);       // outside the window of 4
    CHECK(d.head[0].weights(8, 6) > 0.0f);
    CHECK(d.settings.block.sandwich_norm);
    // Gemma 3: QK-norm in the (1 + w) form, no soft-cap, still the window and the sandwich norms.
    CHECK(gemma3.target.tokens == y2017.target.tokens);
    const Trace e = run(gemma3);
    REQUIRE(e.ok);
    CHECK(e.settings.qk_norm);
    CHECK(e.settings.qk_norm_plus_one);
    CHECK(e.head[0].q_normed.size() != 0);
    CHECK(e.head[0].q_normed != e.head[0].q_before_norm);
    CHECK(e.head[0].capped_scores.size() == 0);
    CHECK(e.head[0].weights(8, 2) == 0.0f);
    CHECK(e.settings.block.sandwich_norm);
    CHECK(scenario_at_step(l, 12).qk_norm);  // the step after keeps Gemma 3's block
    // OLMo 2: QK-norm over the whole projection, norms after the sublayers only
    const Trace olmo2 = run(scenario_at_step(l, 13));
    REQUIRE(olmo2.ok);
    CHECK(olmo2.settings.qk_norm_whole);
    CHECK(olmo2.q_projected.cols() == 16);
    CHECK_FALSE(scenario_at_step(l, 14).block.layer_norm);
    CHECK(scenario_at_step(l, 14).block.sandwich_norm);
    // Phi-3: the 11 tokens take LongRoPE's long factors (the second pair's is 9), cos and sin × 1.58
    const Trace phi3 = run(scenario_at_step(l, 15));
    REQUIRE(phi3.ok);
    CHECK(phi3.n_keys == 11);
    CHECK(phi3.settings.rope.scaling == RopeScalingKind::LongRope);
    CHECK(phi3.settings.rope.original_max_positions == 4);
    CHECK(phi3.settings.rope.long_factor(1) == 9.0f);
    CHECK(phi3.settings.rope.attention_factor == Approx(1.58).epsilon(0.005));
    Scenario longer_original = scenario_at_step(l, 15);
    longer_original.rope.original_max_positions = 11;  // "set L to 11": the short factors turn it
    CHECK((run(longer_original).head[0].q - phi3.head[0].q).cwiseAbs().maxCoeff() > 1e-3f);
    SECTION("a step naming a preset that does not exist is refused") {
        const std::string text = R"({"title": "t", "preset": "block-2017", "steps": [{"stage": "weights", "text": "a", "toggles": {"preset": "block-gpt3"}}]})";
        const auto bad = lesson_from_text(text, "bad.json");
        CHECK_FALSE(bad.lesson);
    }
}

TEST_CASE("the since-2024 lesson goes on with the latent cache, chunks, an encoder's band, sinks, the output gate, Gated DeltaNet, NoPE and its temperature, five routers and differential pairs, each step showing its change") {
    const auto load = load_lesson_file(std::string(ATTNLAB_LESSONS_DIR) + "/12-since-2024.json");
    for (const std::string& e : load.errors) INFO(e);
    REQUIRE(load.lesson);
    const Lesson& l = *load.lesson;
    REQUIRE(l.steps.size() == 13);
    // DiffLlama: 4 heads in 2 pairs, each head reading its pair's two values, the pairs normed before W_O
    const Trace pairs = run(scenario_at_step(l, 12));
    REQUIRE(pairs.ok);
    CHECK(pairs.settings.differential);
    CHECK(pairs.differential.pairs == 2);
    CHECK(pairs.d_v == 2 * pairs.d_k);
    CHECK(pairs.differential.lambda > 0.2f);  // λ_init 0.2 and exp(0.25) − exp(−0.01): about 0.49
    CHECK(pairs.differential.normed.cols() == pairs.heads * pairs.d_k);
    CHECK(pairs.query_tokens == run(find_preset("block-2017")->scenario).query_tokens);
    // SmolLM3's NoPE layer: Llama's block with nothing turned, no step before RoPE
    const Trace nope = run(scenario_at_step(l, 6));
    REQUIRE(nope.ok);
    CHECK(nope.settings.positional == PositionalEncoding::None);
    CHECK(nope.kv_heads == 2);
    CHECK(nope.head[0].q_unrotated.size() == 0);
    // Qwen3-MoE: the same sentence, each token routed to 2 of 4 experts, their weights summing to 1
    const Trace moe = run(scenario_at_step(l, 8));
    REQUIRE(moe.ok);
    CHECK(moe.query_tokens == run(find_preset("block-2017")->scenario).query_tokens);
    CHECK(moe.settings.block.moe.experts == 4);
    REQUIRE(moe.block.routing.cols() == 4);
    for (Eigen::Index i = 0; i < moe.block.routing.rows(); ++i) {
        CHECK((moe.block.routing.row(i).array() > 0.0f).count() == 2);
        CHECK(moe.block.routing.row(i).sum() == Approx(1.0f).epsilon(1e-5));
    }
    // Qwen2-MoE: the same routing, not renormalised, and a shared expert every token takes a gated share of
    const Trace shared = run(scenario_at_step(l, 9));
    REQUIRE(shared.ok);
    CHECK(shared.query_tokens == moe.query_tokens);
    REQUIRE(shared.block.shared_gate_values.rows() == shared.n_queries);
    CHECK(shared.block.shared_output.rows() == shared.n_queries);
    for (Eigen::Index i = 0; i < shared.block.routing.rows(); ++i) {
        CHECK((shared.block.routing.row(i).array() > 0.0f).count() == 2);
        CHECK(shared.block.routing.row(i).sum() < 1.0f);
        CHECK(shared.block.shared_gate_values(i, 0) > 0.0f);
        CHECK(shared.block.shared_gate_values(i, 0) < 1.0f);
    }
    // gpt-oss: sinks take a share of each row, a window of 4, YaRN, the top 2 logits softmaxed
    const Trace oss = run(scenario_at_step(l, 3));
    REQUIRE(oss.ok);
    CHECK(oss.query_tokens == moe.query_tokens);
    CHECK(oss.settings.rope.scaling == RopeScalingKind::Yarn);
    CHECK(oss.head[3].weights.row(8).sum() < 0.9f);   // the sink logit 3 takes most of a row
    CHECK(oss.head[0].weights(8, 2) == 0.0f);          // outside the window of 4
    CHECK(oss.block.router_probabilities.size() == 0);  // no softmax over all four
    for (Eigen::Index i = 0; i < oss.block.routing.rows(); ++i) {
        CHECK((oss.block.routing.row(i).array() > 0.0f).count() == 2);
        CHECK(oss.block.routing.row(i).sum() == Approx(1.0f).epsilon(1e-5));
    }
    // DeepSeek-V3: every head's k and v from a latent of 8 and a rotary key of 2 shared by the heads
    const Trace mla = run(scenario_at_step(l, 0));
    REQUIRE(mla.ok);
    CHECK(mla.query_tokens == moe.query_tokens);
    CHECK(mla.latent.latent.cols() == 8);
    CHECK(mla.d_k == 6);
    CHECK(mla.d_v == 4);
    CHECK(mla.head[0].k.rightCols(2) == mla.head[3].k.rightCols(2));
    CHECK(mla.head[0].k.leftCols(4) != mla.head[3].k.leftCols(4));
    // and its router: σ scores, the choice 0 outside each token's 2 kept groups, weights summing to 2.5
    const Trace grouped = run(scenario_at_step(l, 10));
    REQUIRE(grouped.ok);
    for (Eigen::Index i = 0; i < grouped.block.routing.rows(); ++i) {
        CHECK((grouped.block.router_choice.row(i).array() != 0.0f).count() == 4);
        CHECK((grouped.block.routing.row(i).array() > 0.0f).count() == 2);
        CHECK(grouped.block.routing.row(i).sum() == Approx(2.5f).epsilon(1e-5));
    }
    // ModernBERT's local layer: a band of ±2, keys after the query seen as well as before
    const Trace band = run(scenario_at_step(l, 2));
    REQUIRE(band.ok);
    CHECK(band.query_tokens == moe.query_tokens);
    CHECK(band.settings.mask == MaskKind::Band);
    CHECK(band.head[0].weights(4, 6) > 0.0f);
    CHECK(band.head[0].weights(4, 2) > 0.0f);
    CHECK(band.head[0].weights(4, 7) == 0.0f);
    CHECK(band.head[0].weights(4, 1) == 0.0f);
    // Llama 4: chunks of 4 (the fifth token sees itself alone), then its global NoPE layer's τ, then its router
    const Trace chunked = run(scenario_at_step(l, 1));
    REQUIRE(chunked.ok);
    CHECK(chunked.query_tokens == moe.query_tokens);
    CHECK(chunked.settings.mask == MaskKind::Chunked);
    CHECK(chunked.head[0].weights(4, 4) == Approx(1.0f));
    CHECK(chunked.head[0].weights(7, 3) == 0.0f);
    CHECK(chunked.head[0].weights(7, 4) > 0.0f);
    const Trace tempered = run(scenario_at_step(l, 7));
    REQUIRE(tempered.ok);
    CHECK(tempered.settings.positional == PositionalEncoding::None);
    CHECK(tempered.temperature(1, 0) == 1.0f);
    CHECK(tempered.temperature(10, 0) > tempered.temperature(2, 0));
    const Trace llama4 = run(scenario_at_step(l, 11));
    REQUIRE(llama4.ok);
    CHECK(llama4.settings.block.moe.router_kind == RouterKind::TopKThenSigmoid);
    for (Eigen::Index i = 0; i < llama4.block.routing.rows(); ++i) CHECK((llama4.block.routing.row(i).array() > 0.0f).count() == 2);
    // Qwen3-Next: the output gate, head 2's nearly shut
    const Trace gate = run(scenario_at_step(l, 4));
    REQUIRE(gate.ok);
    CHECK(gate.settings.output_gate);
    CHECK(gate.output_gate.rightCols(4).maxCoeff() < gate.output_gate.leftCols(4).maxCoeff());
    // Qwen3-Next's Gated DeltaNet: no softmax; head 1's implied weights hug the diagonal, head 2's reach back
    const Trace linear = run(scenario_at_step(l, 5));
    REQUIRE(linear.ok);
    CHECK(linear.settings.delta_net);
    CHECK(linear.head[0].weights.size() == 0);
    const Matrix& fast = linear.head[0].implied_weights;
    const Matrix& slow = linear.head[1].implied_weights;
    REQUIRE(fast.rows() == 10);
    const auto off_diagonal = [](const Matrix& a) { return a.cwiseAbs().sum() - a.diagonal().cwiseAbs().sum(); };
    CHECK(off_diagonal(fast) < 0.2f * fast.diagonal().cwiseAbs().sum());
    CHECK(off_diagonal(slow) > off_diagonal(fast));
    CHECK(std::abs(slow(9, 0)) > 10.0f * std::abs(fast(9, 0)));
    CHECK((fast * linear.head[0].v - linear.head[0].output).cwiseAbs().maxCoeff() < 1e-5f);
}

TEST_CASE("the attention-sinks lesson shows a head parking on the first token with a short value, then gpt-oss's sink") {
    const auto load = load_lesson_file(std::string(ATTNLAB_LESSONS_DIR) + "/09-attention-sinks.json");
    for (const std::string& e : load.errors) INFO(e);
    REQUIRE(load.lesson);
    const Lesson& l = *load.lesson;
    REQUIRE(l.steps.size() == 4);
    const Trace parked = run(scenario_at_step(l, 0));
    REQUIRE(parked.ok);
    const Matrix& w = parked.head[0].weights;
    for (Eigen::Index i = 1; i < w.rows(); ++i) CHECK(w(i, 0) > 0.5f);   // every row's most on <s>
    CHECK(parked.head[1].weights(3, 0) < 0.5f);                           // head 2 does not
    const Matrix& v = parked.head[0].v;
    for (Eigen::Index j = 1; j < v.rows(); ++j) CHECK(v.row(0).norm() < 0.5f * v.row(j).norm());  // <s>'s value is short
    const Trace sink = run(scenario_at_step(l, 3));
    REQUIRE(sink.ok);
    CHECK(sink.settings.sinks);
    CHECK(sink.head[0].weights.row(5).sum() < 0.5f);  // the sink took most of the row
}

TEST_CASE("the lesson 'How a model writes' computes what its text speaks of: the cache, the reverse written, the cuts, the loop") {
    const auto load = load_lesson_file(std::string(ATTNLAB_LESSONS_DIR) + "/11-how-a-model-writes.json");
    for (const std::string& e : load.errors) FAIL(e);
    REQUIRE(load.lesson);
    const Lesson& l = *load.lesson;
    REQUIRE(l.steps.size() >= 8);
    TrainedLessonModel kept;
    std::vector<LessonFacts> facts(l.steps.size());
    for (size_t k = 0; k < l.steps.size(); ++k) {
        REQUIRE(l.steps[k].train);
        const Scenario s = trained_lesson_scenario(*l.steps[k].train, &facts[k], &kept);
        CHECK(run(s).ok);
        UNSCOPED_INFO("step " << k + 1 << ": " << facts[k].sentence());
        CHECK_FALSE(facts[k].writing.empty());
    }
    // The prompt's pass alone: 7 tokens, the layer shown on them; one step: 8.
    CHECK(trained_lesson_scenario(*l.steps[0].train).target.tokens.size() == 7);
    CHECK(trained_lesson_scenario(*l.steps[1].train).target.tokens.size() == 8);
    CHECK_THAT(facts[0].sentence(), Contains("After the prompt \"a b c d e f |\", the next token: f "));
    CHECK_THAT(facts[1].sentence(), Contains("Written (greedy): a b c d e f | \xE2\x86\x92 f\n"));
    CHECK_THAT(facts[2].sentence(), Contains("Written (greedy): a b c d e f | \xE2\x86\x92 f e d c b a"));
    // The costs: Llama 3.2 1B's 32 KiB a token against multi-head attention's 128 KiB (4 GiB and 16 GiB at 128k).
    REQUIRE(facts[3].costs.size() == 3);
    CHECK_THAT(facts[3].costs[0], Contains("K and V 32.0 KiB") && Contains("128k tokens 4.0 GiB (multi-head attention 16.0 GiB)"));
    CHECK_THAT(facts[3].costs[2], Contains("K and V 4.0 KiB"));
    // A window keeps its cache from growing: Gemma 3's shape costs less at 128k than its all-global twin.
    REQUIRE(facts[4].costs.size() == 3);
    CHECK(facts[4].costs[0] != facts[4].costs[1]);
    // Top-k 2: never more than 2 kept; greedy keeps 1.
    CHECK_THAT(facts[6].sentence(), Contains("2 kept") && !Contains("3 kept"));
    CHECK_THAT(facts[2].sentence(), Contains("1 kept") && !Contains("2 kept"));
    // The induction model loops: what it writes after "a b c d e f a" continues b c d e f a …
    CHECK_THAT(facts.back().sentence(), Contains("c a f c a f c \xE2\x86\x92 a f c a f c a f c"));
    CHECK(l.steps[5].train->write->sampler.temperature > 1.0f);
}

TEST_CASE("the text a user reads is UTF-8 written once: no character encoded twice in the sources, lessons and docs") {
    // A character's UTF-8 bytes read as Latin-1 and encoded again ("σ" CF 83 → "Ï\u0083" C3 8F C2 83)
    // always start with C3 xx C2 xx: a lead byte (C0–FF) then a continuation byte (80–BF), each as a
    // two-byte character. No word of the app's own text has that pair.
    namespace fs = std::filesystem;
    const fs::path root = fs::path(ATTNLAB_LESSONS_DIR).parent_path().parent_path();
    int files = 0;
    for (const char* folder : {"app", "core", "assets/lessons", "docs", "shaders"}) {
        for (const fs::directory_entry& entry : fs::recursive_directory_iterator(root / folder)) {
            const std::string ext = entry.path().extension().string();
            if (!entry.is_regular_file() || (ext != ".cpp" && ext != ".hpp" && ext != ".json" && ext != ".md" && ext != ".glsl" && ext != ".comp"))
                continue;
            std::ifstream in(entry.path(), std::ios::binary);
            const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
            ++files;
            for (size_t i = 0; i + 3 < text.size(); ++i) {
                const auto b = [&](size_t k) { return static_cast<unsigned char>(text[i + k]); };
                if (b(0) == 0xC3 && b(1) >= 0x80 && b(1) <= 0xBF && b(2) == 0xC2 && b(3) >= 0x80 && b(3) <= 0xBF) {
                    INFO(entry.path().string() << ", line " << std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(i), '\n') + 1);
                    FAIL_CHECK("a character encoded twice");
                    break;
                }
            }
        }
    }
    CHECK(files > 200);  // the folders were found and read
}
