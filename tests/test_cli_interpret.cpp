// attnlab --model … --head-roles, --logit-lens and --ablation-sweep, driven in-process: the
// exports hold what the engine computes (the scores recomputed from the probe's own exported
// traces, the lens's last layer equal to the prediction, one entry per layer × head counted
// from 1), and each flag that would be ignored is refused, naming it.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "bad_model_catalogue.hpp"
#include "cli_runner.hpp"
#include "hf_family_fixtures.hpp"

using namespace attn;
using Catch::Matchers::Contains;

namespace {

namespace fs = std::filesystem;
using Result = testing::CliResult;
using testing::run_cli;

fs::path interpret_scratch(const std::string& label) { return testing::scratch_folder("cli-interpret", label); }
nlohmann::json interpret_json(const fs::path& path) { return testing::read_json_file(path); }

// The mean of A[i, i − offset] over rows first … n−1, from a head's exported weights.
double diagonal_mean(const nlohmann::json& weights, int first, int offset, bool column_zero = false) {
    const int n = static_cast<int>(weights.size());
    double sum = 0;
    for (int i = first; i < n; ++i) sum += weights[static_cast<size_t>(i)][static_cast<size_t>(column_zero ? 0 : i - offset)].get<double>();
    return sum / (n - first);
}

}  // namespace

TEST_CASE("option --head-roles exports the probe's traces and every head's five scores, recomputable from them", "[cli][interpret]") {
    const fs::path folder = interpret_scratch("gpt2");
    testing::write_tiny_checkpoint((folder / "gpt2").string());
    const fs::path out = folder / "roles.json";
    const Result r = run_cli({"--model", (folder / "gpt2").string(), "--head-roles", "--probe-seed", "5", "--export-json", out.string()});
    INFO(r.err);
    REQUIRE(r.code == 0);
    CHECK_THAT(r.err, Contains("of the probe and every head's role scores"));
    const nlohmann::json j = interpret_json(out);
    CHECK_FALSE(j.contains("text"));
    CHECK_FALSE(j.contains("next_token_top5"));  // the probe's prediction means nothing
    const nlohmann::json& roles = j["head_roles"];
    const int L = roles["repeat_length"];
    CHECK(L == 8);  // n_positions 16 holds a block of 8 twice
    CHECK(roles["seed"] == 5);
    CHECK(roles["bos"] == false);  // GPT-2 adds none
    CHECK(roles["probe_ids"] == j["token_ids"]);
    const auto ids = roles["probe_ids"].get<std::vector<int>>();
    REQUIRE(ids.size() == 16);
    for (int i = 0; i < L; ++i) CHECK(ids[static_cast<size_t>(i)] == ids[static_cast<size_t>(i + L)]);
    REQUIRE(roles["heads"].size() == 4);  // 2 layers × 2 heads
    for (const nlohmann::json& h : roles["heads"]) {
        const int layer = h["layer"], head = h["head"];
        INFO("layer " << layer << " head " << head);
        REQUIRE(layer >= 1);
        REQUIRE(head >= 1);
        const nlohmann::json& weights = j["layers"][static_cast<size_t>(layer - 1)]["heads"][static_cast<size_t>(head - 1)]["weights"];
        const int n = static_cast<int>(weights.size());
        CHECK(h["previous_token"].get<double>() == Approx(diagonal_mean(weights, 1, 1)).margin(1e-6));
        CHECK(h["first_token"].get<double>() == Approx(diagonal_mean(weights, 1, 0, true)).margin(1e-6));
        CHECK(h["self"].get<double>() == Approx(diagonal_mean(weights, 0, 0)).margin(1e-6));
        CHECK(h["duplicate_token"].get<double>() == Approx(diagonal_mean(weights, n - L, L)).margin(1e-6));
        CHECK(h["induction"].get<double>() == Approx(diagonal_mean(weights, n - L, L - 1)).margin(1e-6));
    }
    CHECK(roles["heads"][3]["layer"] == 2);
    CHECK(roles["heads"][3]["head"] == 2);
    // --print: the probe and the table.
    const Result printed = run_cli({"--model", (folder / "gpt2").string(), "--head-roles", "--probe-length", "5", "--print"});
    INFO(printed.err);
    REQUIRE(printed.code == 0);
    CHECK_THAT(printed.out, Contains("probe: 10 tokens (a block of 5 random tokens, then the same block again; seed 1)") &&
                                Contains("layer  head  previous_token  first_token  self  duplicate_token  induction") &&
                                Contains("\n    2     2  "));
    fs::remove_all(folder);
}

TEST_CASE("option --head-roles finds the trained induction circuit: a previous-token head in layer 1, an induction head in layer 2",
          "[cli][interpret][train]") {
    const fs::path folder = interpret_scratch("induction");
    const fs::path model = folder / "induction.json";
    const Result trained = run_cli({"--train", "induction", "--layers", "2", "--steps", "300", "--save-model", model.string()});
    INFO(trained.err);
    REQUIRE(trained.code == 0);
    const fs::path out = folder / "roles.json";
    const Result r = run_cli({"--model", model.string(), "--head-roles", "--export-json", out.string()});
    INFO(r.err);
    REQUIRE(r.code == 0);
    const nlohmann::json roles = interpret_json(out)["head_roles"];
    CHECK(roles["repeat_length"] == 6);  // the task's content length
    double previous = 0, induction = 0;
    for (const nlohmann::json& h : roles["heads"]) {
        if (h["layer"] == 1) previous = std::max(previous, h["previous_token"].get<double>());
        if (h["layer"] == 2) induction = std::max(induction, h["induction"].get<double>());
    }
    CHECK(previous >= 0.5);
    CHECK(induction >= 0.5);
    fs::remove_all(folder);
}

TEST_CASE("options --logit-lens and --ablation-sweep: the lens's last layer is the prediction, the sweep one value per head",
          "[cli][interpret]") {
    const fs::path folder = interpret_scratch("lens");
    testing::write_tiny_checkpoint((folder / "gpt2").string());
    const fs::path out = folder / "lens.json";
    const Result r = run_cli({"--model", (folder / "gpt2").string(), "--text", " the cat", "--logit-lens", "--ablation-sweep", "--export-json",
                              out.string()});
    INFO(r.err);
    REQUIRE(r.code == 0);
    CHECK_THAT(r.err, Contains(", the logit lens, the ablation sweep"));
    const nlohmann::json j = interpret_json(out);
    const size_t n = j["token_ids"].size();
    REQUIRE(j["logit_lens"].size() == 2);
    for (size_t l = 0; l < 2; ++l) {
        CHECK(j["logit_lens"][l]["layer"] == l + 1);
        REQUIRE(j["logit_lens"][l]["positions"].size() == n);
    }
    const nlohmann::json& last = j["logit_lens"][1]["positions"][n - 1];
    CHECK(last["position"] == n);
    CHECK(last["top5"]["ids"] == j["next_token_top5"]["ids"]);
    for (size_t k = 0; k < 5; ++k)
        CHECK(last["top5"]["probabilities"][k].get<double>() == Approx(j["next_token_top5"]["probabilities"][k].get<double>()).margin(1e-6));
    const nlohmann::json& sweep = j["ablation_sweep"];
    CHECK(sweep["target_id"] == j["next_token_top5"]["ids"][0]);
    CHECK(sweep["log_probability"].get<double>() == Approx(std::log(j["next_token_top5"]["probabilities"][0].get<double>())).margin(1e-5));
    REQUIRE(sweep["delta_log_probability"].size() == 2);
    CHECK(sweep["delta_log_probability"][1].size() == 2);
    // A token chosen by id, and --print's tables.
    const Result printed = run_cli({"--model", (folder / "gpt2").string(), "--text", " the cat", "--logit-lens", "--ablation-sweep",
                                    "--sweep-token", "66", "--print"});
    INFO(printed.err);
    REQUIRE(printed.code == 0);
    CHECK_THAT(printed.out, Contains("logit lens: after each layer") && Contains("\nlayer 2:") &&
                                Contains("ablation sweep: log p(c | the sentence) = "));
    fs::remove_all(folder);
}

TEST_CASE("the interpretability flags refuse what they would ignore, naming the flag", "[cli][interpret]") {
    const fs::path folder = interpret_scratch("refusals");
    const std::string gpt2 = (folder / "gpt2").string();
    testing::write_tiny_checkpoint(gpt2);
    struct Case {
        std::vector<std::string> args;
        int code;
        std::string says;
    };
    const std::vector<Case> cases = {
        {{"--head-roles", "--print"}, 2, "--head-roles reads a model: give --model too"},
        {{"--model", gpt2, "--head-roles", "--text", "x", "--print"}, 2, "--head-roles runs its own probe of random tokens: --text reads a sentence"},
        {{"--model", gpt2, "--head-roles", "--logit-lens", "--print"}, 2, "--logit-lens reads a sentence"},
        {{"--model", gpt2, "--text", "x", "--probe-length", "5", "--print"}, 2, "--probe-length shapes the probe of --head-roles"},
        {{"--model", gpt2, "--text", "x", "--sweep-token", "5", "--print"}, 2, "--sweep-token chooses the token --ablation-sweep measures"},
        {{"--model", gpt2, "--head-roles"}, 2, "--head-roles runs without the window: give --print or --export-json"},
        {{"--model", gpt2, "--head-roles", "--probe-length", "3", "--print"}, 2, "--head-roles: the probe repeats a block of at least 4 tokens, not 3"},
        {{"--model", gpt2, "--head-roles", "--probe-length", "9", "--print"}, 2, "a block of 9 twice is 18 tokens; the model reads at most 16"},
        {{"--model", gpt2, "--text", "x", "--ablation-sweep", "--sweep-token", "9999", "--print"}, 2, "--sweep-token 9999 is not a token of the model's 260"},
    };
    for (const Case& c : cases) {
        const Result r = run_cli(c.args);
        INFO(r.err);
        CHECK(r.code == c.code);
        CHECK_THAT(r.err, Contains(c.says));
    }
    fs::remove_all(folder);
}
