// attnlab --model … --text "…" --generate N, driven in-process: the continuation equals the
// greedy choice of a full recompute at every step, a seed replays, the export holds each
// step's top 5 and what the sampler kept, a trained reverse model writes the reverse, and
// every bad value is refused with exit 2, naming the flag.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "bad_model_catalogue.hpp"
#include "cli_runner.hpp"
#include "hf_family_fixtures.hpp"
#include "model/language_model.hpp"

using namespace attn;
using Catch::Matchers::Contains;

namespace {

namespace fs = std::filesystem;
using Result = testing::CliResult;
using testing::run_cli;

fs::path scratch(const std::string& label) { return testing::scratch_folder("cli-generate", label); }
nlohmann::json read_json(const fs::path& path) { return testing::read_json_file(path); }

}  // namespace

TEST_CASE("option --generate writes greedily what a full recompute chooses at every step, and prints text then ids", "[cli][generate]") {
    const fs::path folder = scratch("gpt2");
    const std::string model_folder = (folder / "gpt2").string();
    testing::write_tiny_checkpoint(model_folder);
    const fs::path out = folder / "g.json";
    const Result r = run_cli({"--model", model_folder, "--text", "ab", "--generate", "6", "--export-json", out.string()});
    INFO(r.err);
    REQUIRE(r.code == 0);
    CHECK_THAT(r.out, Contains("continuation (6 tokens, greedy):"));
    CHECK_THAT(r.err, Contains("the 6 tokens written and each step's choice"));
    const nlohmann::json j = read_json(out);
    const std::vector<int> written = j["generated_ids"];
    REQUIRE(written.size() == 6);
    // The truth: the whole text run again from its first token at every step, its argmax taken.
    lm::ModelLoad load = lm::load_model(model_folder);
    REQUIRE(load.model);
    std::vector<int> ids = j["token_ids"];
    for (size_t t = 0; t < written.size(); ++t) {
        const ModelPass full = lm::forward_ids(*load.model, ids);
        REQUIRE(full.ok);
        CHECK(written[t] == stack::top_k(full.logits.bottomRows(1), 1).front());
        CHECK(j["generation"]["steps"][t]["top5"]["ids"][0] == written[t]);
        CHECK(j["generation"]["steps"][t]["kept"] == 1);
        ids.push_back(written[t]);
    }
    CHECK(j["generated_text"] == load.model->text_of(written));
    std::string printed_ids = "ids:";
    for (int id : written) printed_ids += " " + std::to_string(id);
    CHECK_THAT(r.out, Contains(printed_ids));
    fs::remove_all(folder);
}

TEST_CASE("option --generate with --temperature, --top-k and --top-p: a seed replays, every choice is in the kept set",
          "[cli][generate]") {
    const fs::path folder = scratch("llama");
    // The tiny Llama with a vocabulary as large as the byte-level tokenizer it ships with.
    testing::families::FamilyCheckpoint llama = testing::families::llama_checkpoint();
    llama.config["vocab_size"] = 408;
    testing::families::TensorMaker make(llama, 99);
    make("model.embed_tokens.weight", {408, 24}, 0.5);
    testing::families::write_family_checkpoint((folder / "llama").string(), llama);
    fs::copy_file(fs::path(ATTNLAB_TEST_DATA) / "tokenizers" / "bytelevel-roberta-prefix-space.json", folder / "llama" / "tokenizer.json");
    auto written = [&](const std::string& seed, const std::string& name) {
        const fs::path out = folder / name;
        const Result r = run_cli({"--model", (folder / "llama").string(), "--text", "the cat", "--generate", "8", "--temperature", "1.5", "--top-k",
                                  "20", "--top-p", "0.9", "--seed", seed, "--export-json", out.string()});
        INFO(r.err);
        REQUIRE(r.code == 0);
        return read_json(out);
    };
    const nlohmann::json a = written("7", "a.json"), b = written("7", "b.json"), c = written("8", "c.json");
    CHECK(a["generated_ids"] == b["generated_ids"]);
    CHECK(a["generated_ids"] != c["generated_ids"]);
    CHECK(a["generation"]["temperature"] == Approx(1.5));
    CHECK(a["generation"]["seed"] == 7);
    for (const nlohmann::json& step : a["generation"]["steps"]) {
        CHECK(step["kept"].get<int>() <= 20);
        CHECK(step["top_k_kept"] == 20);
        CHECK(step.contains("draw"));
        bool kept = false;
        for (const nlohmann::json& k : step["kept_top5"]) kept = kept || k["id"] == step["chosen_id"];
        if (step["kept"].get<int>() <= 5) CHECK(kept);
    }
    fs::remove_all(folder);
}

TEST_CASE("option --generate: a model trained to reverse writes the reverse", "[cli][generate][train]") {
    const fs::path folder = scratch("reverse");
    const fs::path model = folder / "reverse.json";
    const Result trained = run_cli({"--train", "reverse", "--steps", "300", "--save-model", model.string()});
    INFO(trained.err);
    REQUIRE(trained.code == 0);
    const Result r = run_cli({"--model", model.string(), "--text", "a b c d e f |", "--generate", "6"});
    INFO(r.err);
    REQUIRE(r.code == 0);
    CHECK_THAT(r.out, Contains("f e d c b a"));
    fs::remove_all(folder);
}

TEST_CASE("option --generate: bad values, flags that would be ignored and models that cannot write are refused, naming them",
          "[cli][generate]") {
    const fs::path folder = scratch("refusals");
    const std::string gpt2 = (folder / "gpt2").string();
    testing::write_tiny_checkpoint(gpt2);
    struct Case {
        std::vector<std::string> args;
        std::string said;
    };
    const std::vector<Case> cases{
        {{"--generate", "0"}, "--generate 0: the number of tokens to write must be 1 or more"},
        {{"--generate", "2", "--temperature", "-1"}, "--temperature -1: it must be 0 (greedy) or more"},
        {{"--generate", "2", "--temperature", "nan"}, "--temperature nan"},
        {{"--generate", "2", "--temperature", "1", "--top-p", "0"}, "--top-p 0: it must be in (0, 1]"},
        {{"--generate", "2", "--temperature", "1", "--top-p", "1.5"}, "--top-p 1.5"},
        {{"--generate", "2", "--temperature", "1", "--top-k", "0"}, "--top-k 0: it must be 1 or more"},
        {{"--generate", "2", "--top-k", "5"}, "greedy (temperature 0, the default) draws nothing"},
        {{"--top-p", "0.5"}, "--top-p shapes how --generate samples"},
        {{"--generate", "2", "--head-roles"}, "run them apart"},
        {{"--generate", "40"}, "the model reads at most 16"},
    };
    for (const Case& c : cases) {
        std::vector<std::string> args{"--model", gpt2, "--text", "ab"};
        if (std::find(c.args.begin(), c.args.end(), "--head-roles") != c.args.end()) args = {"--model", gpt2};
        args.insert(args.end(), c.args.begin(), c.args.end());
        const Result r = run_cli(args);
        INFO(c.said << "\n" << r.err);
        CHECK(r.code == 2);
        CHECK_THAT(r.err, Contains(c.said));
    }
    const Result no_model = run_cli({"--generate", "3", "--text", "ab"});
    CHECK(no_model.code == 2);
    CHECK_THAT(no_model.err, Contains("--generate makes a model write: give --model too"));
    // BERT reads the whole sentence at once: it does not write.
    const testing::families::FamilyCheckpoint bert = testing::families::bert_checkpoint();
    testing::families::write_family_checkpoint((folder / "bert").string(), bert);
    fs::copy_file(fs::path(ATTNLAB_TEST_DATA) / "tokenizers" / "bytelevel-roberta-prefix-space.json", folder / "bert" / "tokenizer.json");
    const Result b = run_cli({"--model", (folder / "bert").string(), "--text", "ab", "--generate", "2"});
    CHECK(b.code == 2);
    CHECK_THAT(b.err, Contains("masked language model"));
    fs::remove_all(folder);
}
