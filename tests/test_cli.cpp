// The command line, driven in-process: outputs and the error paths.
#include <catch2/catch.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "bad_input_catalogue.hpp"
#include "cli.hpp"
#include "cli_runner.hpp"
#include "attention/serialize.hpp"
#include "train/model_file.hpp"

using namespace attn;
using Catch::Matchers::Contains;

namespace {

using Result = testing::CliResult;
using testing::run_cli;

const std::string data = ATTNLAB_TEST_DATA;

}  // namespace

TEST_CASE("option --list-presets prints one name per line") {
    const Result r = run_cli({"--list-presets"});
    CHECK(r.code == 0);
    CHECK_THAT(r.out, Contains("dot-product-3-tokens\n") && Contains("dog-bites-man\n"));
}

TEST_CASE("option --print shows the 3-token example's weights and outputs") {
    const Result r = run_cli({"--preset", "dot-product-3-tokens", "--print"});
    CHECK(r.code == 0);
    CHECK_THAT(r.out, Contains("0.4011") && Contains("0.1978") && Contains("5.0000"));
}

TEST_CASE("option --print counts columns from 1, as the window does") {
    const Result r = run_cli({"--preset", "dog-bites-man", "--print"});
    CHECK(r.code == 0);
    CHECK_THAT(r.out, Contains(" d1 ") && Contains(" d8\n"));
    CHECK_THAT(r.out, !Contains(" d0 "));
}

TEST_CASE("option --scenario with toggles and --export-json") {
    const std::string out_path = "test_cli_trace.json";
    const Result r = run_cli({"--scenario", data + "/three_tokens.json", "--mask", "causal", "--export-json", out_path});
    CHECK(r.code == 0);
    std::ifstream in(out_path);
    const auto j = nlohmann::json::parse(in);
    CHECK(j["heads"][0]["weights"][0][1] == 0.0);  // causal: token 1 cannot see token 2
    CHECK(j["heads"][0]["weights"][0][0] == 1.0);
    std::remove(out_path.c_str());
}

TEST_CASE("option --check-articles reports MATCH and MISMATCH") {
    const Result r = run_cli({"--check-articles"});
    CHECK(r.code == 0);
    CHECK_THAT(r.out, Contains("MATCH") && Contains("MISMATCH") && Contains("5.3"));
}

TEST_CASE("errors exit non-zero and say what and where") {
    SECTION("unknown preset") {
        const Result r = run_cli({"--preset", "nope", "--print"});
        CHECK(r.code != 0);
        CHECK_THAT(r.err, Contains("unknown preset 'nope'"));
    }
    SECTION("malformed file") {
        const Result r = run_cli({"--scenario", data + "/malformed.json", "--print"});
        CHECK(r.code != 0);
        CHECK_THAT(r.err, Contains("malformed.json: line 3, column 19"));
    }
    SECTION("ragged file") {
        const Result r = run_cli({"--scenario", data + "/ragged.json", "--print"});
        CHECK(r.code != 0);
        CHECK_THAT(r.err, Contains("key 'k' row 2"));
    }
    SECTION("impossible scenario") {
        const Result r = run_cli({"--scenario", data + "/sentence.json", "--heads", "3", "--print"});
        CHECK(r.code != 0);
        CHECK_THAT(r.err, Contains("sentence.json") && Contains("not divisible by 3 heads"));
    }
    SECTION("bad toggle value") {
        const Result r = run_cli({"--preset", "dog-bites-man", "--mask", "diagonal", "--print"});
        CHECK(r.code != 0);
        CHECK_THAT(r.err, Contains("--mask diagonal"));
    }
    SECTION("bad size") {
        const Result r = run_cli({"--size", "huge", "--print"});
        CHECK(r.code != 0);
        CHECK_THAT(r.err, Contains("--size huge"));
    }
    SECTION("unwritable export path") {
        const Result r = run_cli({"--preset", "dog-bites-man", "--export-json", "/nonexistent-dir/t.json"});
        CHECK(r.code != 0);
        CHECK_THAT(r.err, Contains("/nonexistent-dir/t.json"));
    }
}

TEST_CASE("the catalogue of bad input: each exits non-zero naming the file and what was expected") {
    const std::filesystem::path folder = std::filesystem::temp_directory_path() / "attnlab-test-catalogue-cli";
    std::filesystem::create_directories(folder);
    for (const testing::BadInput& bad : testing::bad_input_catalogue()) {
        INFO(bad.item);
        const std::string path = (folder / bad.file).string();
        write_bad_input(bad, path);
        const Result r = run_cli({"--scenario", path, "--print"});
        INFO(r.err);
        CHECK(r.code != 0);
        CHECK(r.code == (bad.computes ? 5 : r.code));  // computed with NaN/∞: 5, after printing the trace
        CHECK((bad.computes ? !r.out.empty() : r.out.empty()));
        CHECK_THAT(r.err, Contains(path));
        for (const std::string& fragment : bad.says) CHECK_THAT(r.err, Contains(fragment));
        std::filesystem::remove_all(path);
    }
}

TEST_CASE("option --export-scenario writes a file that loads back to the same trace") {
    const std::string path = "test_cli_scenario.json";
    const Result r = run_cli({"--preset", "animal-was-tired", "--heads", "4", "--mask", "causal", "--export-scenario", path});
    REQUIRE(r.code == 0);
    const Result a = run_cli({"--scenario", path, "--print"});
    const Result b = run_cli({"--preset", "animal-was-tired", "--heads", "4", "--mask", "causal", "--print"});
    CHECK(a.code == 0);
    CHECK(a.out == b.out);
    CHECK_THAT(a.out, Contains("head 4"));
    std::remove(path.c_str());
}

TEST_CASE("option --train writes the curve, the probe and every layer's trace, and the saved model loads and predicts the same") {
    const std::string report_path = "test_cli_train.json", model_path = "test_cli_train_model.json";
    const Result r = run_cli({"--train", "reverse", "--layers", "2", "--steps", "150", "--seed", "3", "--export-json", report_path,
                              "--save-model", model_path});
    INFO(r.err);
    REQUIRE(r.code == 0);
    CHECK_THAT(r.err, Contains("step   150/150") && Contains("final held-out accuracy"));
    std::ifstream in(report_path);
    const auto j = nlohmann::json::parse(in);
    CHECK(j["format"] == "attnlab-training");
    CHECK(j["steps"] == 150);
    CHECK(j["curve"]["steps"].size() == 150);
    CHECK(j["curve"]["evaluations"].size() == 6);  // every 25 steps
    CHECK(j["final"]["accuracy"].get<double>() >= 0.99);
    CHECK(j["final"]["accuracy"].get<double>() ==
          Approx(j["final"]["correct"].get<double>() / j["final"]["scored"].get<double>()));
    REQUIRE(j["layers"].size() == 2);
    // The probe: reverse reads s | reverse(s); the scored rows' targets are s read backwards.
    const auto& probe = j["probe"];
    const std::vector<std::string> tokens = probe["tokens"], targets = probe["targets"], predictions = probe["predictions"];
    REQUIRE(tokens.size() == 12);
    CHECK(tokens[6] == "|");
    for (size_t i = 6; i < 12; ++i) {
        CHECK(targets[i] == tokens[11 - i]);
        CHECK(probe["scored"][i] == true);
    }
    // The saved model, loaded, computes the report's predictions and traces exactly.
    const train::ModelFileLoad load = train::load_model_file(model_path);
    INFO((load.errors.empty() ? std::string() : load.errors[0]));
    REQUIRE(load.file);
    CHECK(load.file->steps == 150);
    CHECK(load.file->settings.seed == 3);
    CHECK(load.file->model.config.layers == 2);
    std::string error;
    train::ModelInput input;
    input.tokens = train::token_ids(load.file->model, tokens, &error);
    REQUIRE(error.empty());
    const train::ForwardPass f = train::forward(load.file->model, input);
    REQUIRE(f.ok);
    const std::vector<int> predicted = train::argmax_rows(f.logits);
    for (size_t i = 0; i < predicted.size(); ++i) CHECK(load.file->model.vocabulary[static_cast<size_t>(predicted[i])] == predictions[i]);
    for (size_t l = 0; l < 2; ++l)
        CHECK(nlohmann::json::parse(dump_json(trace_to_json(f.layers[l]), 1)) == j["layers"][l]);
    std::remove(report_path.c_str());
    std::remove(model_path.c_str());
}

TEST_CASE("option --train refuses bad values and flags it would ignore, exit 2") {
    struct Bad {
        std::vector<std::string> args;
        const char* says;
    };
    const std::vector<Bad> bad{
        {{"--train", "fly", "--export-json", "x.json"}, "--train fly: unknown task (expected one of copy, reverse"},
        {{"--train", "reverse", "--heads", "3", "--export-json", "x.json"}, "d_model 32 is not divisible by 3 heads"},
        {{"--train", "reverse", "--layers", "5", "--export-json", "x.json"}, "layers"},
        {{"--train", "reverse", "--d-model", "4", "--export-json", "x.json"}, "d_model"},
        {{"--train", "reverse", "--pe", "spiral", "--export-json", "x.json"}, "--pe spiral"},
        {{"--train", "reverse", "--lr", "-1", "--export-json", "x.json"}, "learning_rate"},
        {{"--train", "reverse", "--steps", "0", "--export-json", "x.json"}, "--steps 0"},
        {{"--train", "reverse"}, "give --export-json"},
        {{"--train", "reverse", "--text", "a b", "--export-json", "x.json"}, "--text does not apply to --train"},
        {{"--layers", "2", "--print"}, "--layers applies only with --train"},
    };
    for (const Bad& b : bad) {
        INFO(b.args[0] << " " << (b.args.size() > 1 ? b.args[1] : std::string()) << " …");
        const Result r = run_cli(b.args);
        INFO(r.err);
        CHECK(r.code == 2);
        CHECK_THAT(r.err, Contains(b.says));
        CHECK_FALSE(std::filesystem::exists("x.json"));
    }
}

TEST_CASE("option --lesson with --print and --export-json shows that lesson step's scenario", "[lesson]") {
    // 03-masks: animal-was-tired with 1 head; step 1 no mask, step 2 the causal mask.
    const Result step_2 = run_cli({"--lesson", "03-masks", "--step", "2", "--export-json", "test_cli_lesson_step2.json"});
    INFO(step_2.err);
    REQUIRE(step_2.code == 0);
    const Result same = run_cli({"--preset", "animal-was-tired", "--heads", "1", "--mask", "causal", "--export-json", "test_cli_lesson_preset.json"});
    REQUIRE(same.code == 0);
    const auto lesson = nlohmann::json::parse(std::ifstream("test_cli_lesson_step2.json"));
    const auto preset = nlohmann::json::parse(std::ifstream("test_cli_lesson_preset.json"));
    CHECK(lesson["heads"].size() == 1);
    CHECK(lesson["heads"][0]["weights"] == preset["heads"][0]["weights"]);
    CHECK(lesson["heads"][0]["weights"][0][1] == 0.0);  // causal
    const Result step_1 = run_cli({"--lesson", "masks", "--print"});  // step 1 by default; the name without its number
    REQUIRE(step_1.code == 0);
    const Result unmasked = run_cli({"--preset", "animal-was-tired", "--heads", "1", "--mask", "none", "--print"});
    CHECK(step_1.out == unmasked.out);

    // A lesson file of one's own, with a toggle on top.
    std::ofstream("test_cli_lesson.json") << R"({"title": "Two steps", "preset": "dog-bites-man", "steps": [)"
                                             R"({"stage": "weights", "title": "one", "text": "a"},)"
                                             R"({"stage": "weights", "title": "two", "text": "b", "toggles": {"heads": 2}}]})";
    const Result own = run_cli({"--lesson", "test_cli_lesson.json", "--step", "2", "--pe", "sinusoidal", "--print"});
    INFO(own.err);
    CHECK(own.code == 0);
    CHECK(own.out == run_cli({"--preset", "dog-bites-man", "--heads", "2", "--pe", "sinusoidal", "--print"}).out);
}

TEST_CASE("option --lesson: a missing or bad lesson, or a step it does not have, exits 2 naming it", "[lesson]") {
    const Result missing = run_cli({"--lesson", "test_cli_no_such_lesson.json", "--print"});
    CHECK(missing.code == 2);
    CHECK(missing.out.empty());
    CHECK_THAT(missing.err, Contains("--lesson test_cli_no_such_lesson.json: no such lesson file, and no lesson of that name in") &&
                                Contains("03-masks"));
    std::ofstream("test_cli_bad_lesson.json") << "{\"title\": \"x\", \"steps\": [";
    const Result bad = run_cli({"--lesson", "test_cli_bad_lesson.json", "--export-json", "x.json"});
    CHECK(bad.code == 2);
    CHECK_THAT(bad.err, Contains("test_cli_bad_lesson.json"));
    const Result past = run_cli({"--lesson", "03-masks", "--step", "40", "--print"});
    CHECK(past.code == 2);
    CHECK_THAT(past.err, Contains("--step 40: ") && Contains("03-masks.json has ") && Contains(" steps"));
    CHECK(run_cli({"--step", "2", "--print"}).code == 2);
    const Result both = run_cli({"--lesson", "03-masks", "--preset", "dog-bites-man", "--print"});
    CHECK(both.code == 2);
    CHECK_THAT(both.err, Contains("give one of --lesson, --preset"));
}

TEST_CASE("option --text with bytes that are not UTF-8 exits 2 naming the flag and the byte", "[text]") {
    const Result r = run_cli({"--text", "dog \xFF" "bites", "--print"});
    CHECK(r.code == 2);
    CHECK(r.out.empty());
    CHECK_THAT(r.err, Contains("--text: not valid UTF-8 at byte 4 (0xFF)"));
    // A sequence cut short, an overlong form, a surrogate: each named at its first byte.
    CHECK_THAT(run_cli({"--text", "caf\xC3", "--print"}).err, Contains("at byte 3 (0xC3)"));
    CHECK_THAT(run_cli({"--text", "a\xC0\xAF", "--print"}).err, Contains("at byte 1 (0xC0)"));
    CHECK_THAT(run_cli({"--text", "ab\xED\xA0\x80", "--print"}).err, Contains("at byte 2 (0xED)"));
    // Valid UTF-8 of every length still runs.
    CHECK(run_cli({"--text", "caf\xC3\xA9 \xE2\x88\x9E \xF0\x9F\x90\x95", "--print"}).code == 0);
}
