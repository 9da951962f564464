// attnlab --model, driven in-process: the JSON holds the numbers the forward pass computes
// (GPT-2 folder and model file), and the flags' error paths.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <filesystem>
#include <functional>
#include <limits>
#include <sstream>

#include <sys/stat.h>

#include <nlohmann/json.hpp>

#include "bad_model_catalogue.hpp"
#include "cli.hpp"
#include "cli_runner.hpp"
#include "hf_family_fixtures.hpp"
#include "model/hf/model.hpp"
#include "model/language_model.hpp"
#include "train_fixtures.hpp"
#include "model/gpt2/checkpoint.hpp"
#include "train/model_file.hpp"
#include "train/tasks.hpp"

using namespace attn;
using Catch::Matchers::Contains;

namespace {

using Result = testing::CliResult;
using testing::run_cli;

nlohmann::json read_json(const std::string& path) {
    return nlohmann::json::parse(testing::read_file(path));
}

}  // namespace

TEST_CASE("option --model FOLDER --export-json writes every layer's trace and the top 5 of the forward pass", "[cli][model]") {
    const std::string folder = "test_cli_model_gpt2";
    testing::write_tiny_checkpoint(folder);
    const std::string text = " the cat sat";
    const Result r = run_cli({"--model", folder, "--text", text, "--export-json", "test_cli_model_gpt2.json"});
    INFO(r.err);
    REQUIRE(r.code == 0);
    const nlohmann::json j = read_json("test_cli_model_gpt2.json");

    // The export holds the engine's numbers exactly; those are checked against the plain-loop
    // reference of the family's formula (an independent oracle, in double).
    const lm::ModelLoad opened = lm::load_model(folder);
    REQUIRE(opened.model);
    const ModelPass pass = lm::forward_text(*opened.model, text);
    REQUIRE(pass.ok);
    const hf::OpenedModel& m = opened.model->opened();
    const testing::families::Reference reference =
        testing::families::reference_forward(m.spec, testing::families::read_tensors({folder + "/model.safetensors"}), pass.token_ids);
    CHECK(j["token_ids"].get<std::vector<int>>() == pass.token_ids);
    CHECK(j["tokens"].get<std::vector<std::string>>() == pass.tokens);
    CHECK(pass.tokens == std::vector<std::string>{"\xE2\x90\xA3the", "\xE2\x90\xA3", "c", "a", "t", "\xE2\x90\xA3", "s", "a", "t"});
    REQUIRE(j["layers"].size() == 2);
    for (size_t l = 0; l < 2; ++l)
        for (size_t h = 0; h < 2; ++h) {
            const auto weights = j["layers"][l]["heads"][h]["weights"].get<std::vector<std::vector<float>>>();
            const Matrix& expected = pass.layers[l].head[h].weights;
            REQUIRE(weights.size() == static_cast<size_t>(expected.rows()));
            for (size_t i = 0; i < weights.size(); ++i)
                for (size_t k = 0; k < weights[i].size(); ++k) {
                    CHECK(weights[i][k] == expected(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(k)));
                    CHECK(weights[i][k] == Approx(reference.attention[l][h][i][k]).margin(1e-5));
                }
        }
    // The weight matrices are named in the checkpoint, not copied.
    CHECK_FALSE(j["layers"][0].contains("w_q"));
    CHECK_FALSE(j["layers"][0]["block"].contains("w_1"));
    CHECK(j["layers"][1]["weights_in_checkpoint"]["w_v"] == "h.1.attn.c_attn.weight[:, 16:24]");
    CHECK(j["layers"][1]["block"]["output"][0].size() == 8);
    const auto& top = j["next_token_top5"];
    REQUIRE(top["ids"].size() == 5);
    double sum = 0;
    // The reference's softmax of the last row's logits, best first.
    const std::vector<double>& logits = reference.logits.back();
    const double largest = *std::max_element(logits.begin(), logits.end());
    double z = 0;
    for (double l : logits) z += std::exp(l - largest);
    for (size_t i = 0; i < 5; ++i) {
        const int id = pass.next_token_top5[i].id;
        CHECK(top["ids"][i] == id);
        CHECK(top["tokens"][i] == pass.next_token_top5[i].token);
        CHECK(top["probabilities"][i].get<float>() == pass.next_token_top5[i].probability);
        CHECK(pass.next_token_top5[i].probability == Approx(std::exp(logits[static_cast<size_t>(id)] - largest) / z).margin(1e-5));
        if (i > 0) CHECK(logits[static_cast<size_t>(id)] <= logits[static_cast<size_t>(pass.next_token_top5[i - 1].id)]);
        sum += top["probabilities"][i].get<double>();
    }
    CHECK(sum <= 1.0);
}

TEST_CASE("option --model FILE runs a model trained in the app: every layer and the predictions per row", "[cli][model]") {
    const train::ModelFile file = testing::untrained_model_file(3);
    std::string error;
    REQUIRE(train::save_model_file("test_cli_model_file.json", file, &error));
    const Result r = run_cli({"--model", "test_cli_model_file.json", "--text", "a c b |", "--export-json", "test_cli_model_file_trace.json"});
    INFO(r.err);
    REQUIRE(r.code == 0);
    const nlohmann::json j = read_json("test_cli_model_file_trace.json");
    CHECK(j["token_ids"] == std::vector<int>{0, 2, 1, 8});
    CHECK(j["tokens"] == std::vector<std::string>{"a", "c", "b", "|"});

    train::ModelInput input;
    input.tokens = {0, 2, 1, 8};
    const train::ForwardPass pass = train::forward(file.model, input);
    REQUIRE(pass.ok);
    REQUIRE(j["layers"].size() == 2);
    CHECK(j["layers"][1]["heads"][1]["weights"][3][0].get<float>() == pass.layers[1].head[1].weights(3, 0));
    // Predictions: an independent softmax of each row's logits.
    REQUIRE(j["predictions"].size() == 4);
    for (size_t row = 0; row < 4; ++row) {
        const auto& p = j["predictions"][row];
        CHECK(p["row"] == row + 1);
        const auto logits = pass.logits.row(static_cast<Eigen::Index>(row));
        double z = 0;
        for (Eigen::Index t = 0; t < logits.size(); ++t) z += std::exp(double(logits(t)) - logits.maxCoeff());
        const int best = p["ids"][0];
        Eigen::Index argmax = 0;
        logits.maxCoeff(&argmax);
        CHECK(best == argmax);
        CHECK(p["probabilities"][0].get<double>() == Approx(1.0 / z).epsilon(1e-5));
        CHECK(p["tokens"][0] == file.model.vocabulary[static_cast<size_t>(best)]);
    }
    CHECK(j["next_token_top5"] == nlohmann::json({{"ids", j["predictions"][3]["ids"]},
                                                   {"tokens", j["predictions"][3]["tokens"]},
                                                   {"probabilities", j["predictions"][3]["probabilities"]}}));
}

TEST_CASE("option --model refuses what it would ignore or cannot find, naming it", "[cli][model]") {
    testing::write_tiny_checkpoint("test_cli_model_errors");
    CHECK_THAT(run_cli({"--model", "test_cli_model_errors", "--print"}).err, Contains("--model needs --text"));
    {
        train::ModelFile file;
        file.settings = train::fitted(train::TrainSettings{});
        file.model = train::init_model(file.settings.model, train::task_vocabulary(file.settings.task), 1);
        std::string error;
        REQUIRE(train::save_model_file("test_cli_model_errors.json", file, &error));
        CHECK_THAT(run_cli({"--model", "test_cli_model_errors.json", "--text", "a"}).err,
                   Contains("the window opens checkpoint folders; a model file opens in View"));
    }
    CHECK_THAT(run_cli({"--model", "test_cli_model_errors", "--text", "x", "--print", "--screenshot", "x.png"}).err,
               Contains("--screenshot is the window's"));
    CHECK_THAT(run_cli({"--model", "test_cli_model_errors", "--text", "x", "--layer", "1", "--print"}).err,
               Contains("--layer needs --head"));
    CHECK_THAT(run_cli({"--model", "test_cli_model_errors", "--text", "x", "--layer", "1", "--head", "1", "--export-json", "x.json"}).err,
               Contains("give --print"));
    CHECK_THAT(run_cli({"--model", "test_cli_model_errors", "--text", "x", "--layer", "0", "--head", "1", "--print"}).err,
               Contains("count from 1"));
    CHECK_THAT(run_cli({"--model", "test_cli_model_errors", "--text", "x", "--print", "--preset", "dog-bites-man"}).err,
               Contains("--preset does not apply with --model"));
    CHECK_THAT(run_cli({"--model", "test_cli_model_errors", "--export-json", "x.json", "--train", "reverse"}).err,
               Contains("--train does not apply with --model"));
    const Result missing = run_cli({"--model", "test_cli_model_errors/nothing", "--text", "x", "--print"});
    CHECK(missing.code == 2);
    CHECK_THAT(missing.err, Contains("nothing: no such folder or file"));
    // The hint names every family the app reads, not GPT-2 alone.
    CHECK_THAT(missing.err, Contains("--model takes a checkpoint folder of GPT-2, Llama, DiffLlama, Mistral, Ministral, Qwen2, Qwen3, Gemma 2, Gemma 3, OLMo 2, Phi-3, SmolLM3, Qwen3-MoE, Qwen2-MoE, Qwen3-Next, Qwen3.5, Qwen3.5-MoE, Mixtral, gpt-oss, DeepSeek-V3, Llama 4, GPT-NeoX (Pythia), BERT and ModernBERT"));
    std::filesystem::remove("test_cli_model_errors/vocab.json");
    const Result no_vocab = run_cli({"--model", "test_cli_model_errors", "--text", "x", "--print"});
    CHECK(no_vocab.code == 2);
    CHECK_THAT(no_vocab.err, Contains("vocab.json"));
    CHECK(run_cli({"--layer", "1", "--head", "1", "--print"}).code == 2);
    // The scenario commands still work beside the new flags.
    CHECK(run_cli({"--preset", "dot-product-3-tokens", "--print"}).code == 0);
}

namespace {

// The tiny checkpoint (bad_model_catalogue.hpp) with `spoil` applied, written to `folder`.
std::string write_spoiled(const std::string& folder, const std::function<void(gpt2::Checkpoint&)>& spoil) {
    gpt2::Checkpoint c = testing::tiny_checkpoint();
    spoil(c);
    std::filesystem::remove_all(folder);
    std::string error;
    REQUIRE(gpt2::write_checkpoint(folder, c, gpt2::CheckpointWriteOptions{}, &error));
    return folder;
}

}  // namespace

TEST_CASE("option --model exits 5 when NaN or ∞ arises after the last layer, naming the folder and where", "[cli][model][non-finite]") {
    const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
    struct Fault {
        std::string item, folder;
        std::function<void(gpt2::Checkpoint&)> spoil;
        std::vector<std::string> says;
    };
    // " the cat" is ids 258, 220, 66, 64, 83: no token uses wte rows 120 or 259.
    const std::vector<Fault> faults = {
        {"NaN in ln_f's γ", "test_cli_model_nan_ln_f", [&](gpt2::Checkpoint& c) { c.ln_f_gamma(3) = nan; },
         {"first in ln_f: ln_f.weight[3] is nan"}},
        {"NaN in a row of wte no token uses", "test_cli_model_nan_wte", [&](gpt2::Checkpoint& c) { c.wte.edit()(259, 6) = nan; },
         {"first in the logits: the last token's logit for id 259 is nan, from wte.weight[259, 6] = nan"}},
        {"∞ in a row of wte no token uses", "test_cli_model_inf_wte", [&](gpt2::Checkpoint& c) { c.wte.edit()(120, 0) = -inf; },
         {"first in the logits", "wte.weight[120, 0] = -inf"}},
        {"a finite row of wte at 3e38 that overflows in the logits", "test_cli_model_huge_wte",
         [](gpt2::Checkpoint& c) { c.wte.edit().row(120).setConstant(3e38f); },
         {"first in the logits: the last token's logit for id 120", "from finite values", "beyond the float range"}},
    };
    for (const Fault& fault : faults) {
        INFO(fault.item);
        write_spoiled(fault.folder, fault.spoil);
        const Result r = run_cli({"--model", fault.folder, "--text", " the cat", "--print", "--export-json", fault.folder + ".json"});
        INFO(r.err);
        CHECK(r.code == 5);
        CHECK_THAT(r.err, Contains(fault.folder + ": NaN or \xC2\xB1\xE2\x88\x9E reached the prediction"));
        for (const std::string& fragment : fault.says) CHECK_THAT(r.err, Contains(fragment));
        CHECK_THAT(r.out, Contains("next token, top 5:"));  // printed and exported first, as a scenario's trace is
        CHECK(read_json(fault.folder + ".json")["next_token_top5"]["ids"].size() == 5);
    }
    // The same folder unspoiled: every value finite, exit 0.
    write_spoiled("test_cli_model_finite", [](gpt2::Checkpoint&) {});
    CHECK(run_cli({"--model", "test_cli_model_finite", "--text", " the cat", "--print"}).code == 0);
}

TEST_CASE("option --model FILE exits 5 when the unembedding overflows the logits, naming the row and the token", "[cli][model][non-finite]") {
    // A model file's parameters are finite (the loader refuses others): 3e38 is, and overflows.
    train::ModelFile file = testing::untrained_model_file(3);
    file.model.params.unembedding.col(2).setConstant(3e38f);  // token 'c'
    std::string error;
    REQUIRE(train::save_model_file("test_cli_model_huge_unembedding.json", file, &error));
    const Result r = run_cli({"--model", "test_cli_model_huge_unembedding.json", "--text", "a c b |", "--print"});
    INFO(r.err);
    CHECK(r.code == 5);
    CHECK_THAT(r.err, Contains("test_cli_model_huge_unembedding.json: NaN or \xC2\xB1\xE2\x88\x9E reached the prediction, first in the "
                               "logits: row "));
    CHECK_THAT(r.err, Contains("the logit of 'c' (id 2) is") && Contains("from finite values: h \xC2\xB7 unembedding column 2"));
}

TEST_CASE("option --model says 1 layer, 1 head and 1 token in the singular", "[cli][model]") {
    gpt2::Config config = testing::tiny_config();
    config.n_layer = 1;
    config.n_head = 1;
    const gpt2::Checkpoint c = gpt2::random_checkpoint(config, 2, testing::tiny_checkpoint().tokenizer);
    std::filesystem::remove_all("test_cli_model_one_head");
    std::string error;
    REQUIRE(gpt2::write_checkpoint("test_cli_model_one_head", c, gpt2::CheckpointWriteOptions{}, &error));
    const Result r = run_cli({"--model", "test_cli_model_one_head", "--text", "x", "--print"});
    INFO(r.err);
    REQUIRE(r.code == 0);
    CHECK_THAT(r.out, Contains("1 token:  x (") && Contains("\n1 layer of 1 head; weights F32, 12 KiB read in place from the file\n"));
    const Result head = run_cli({"--model", "test_cli_model_one_head", "--text", "x", "--layer", "1", "--head", "1", "--print"});
    CHECK_THAT(head.out, Contains("layer 1, head 1: 1 token, d_k = 8"));
    const Result missing = run_cli({"--model", "test_cli_model_one_head", "--text", "x", "--layer", "2", "--head", "1", "--print"});
    CHECK(missing.code == 2);
    CHECK_THAT(missing.err, Contains("the model has 1 layer of 1 head\n"));
}

TEST_CASE("option --model on a FIFO, a device or a symbolic link loop says which, without opening it", "[cli][model]") {
    namespace fs = std::filesystem;
    fs::remove("test_cli_model_fifo");
    REQUIRE(::mkfifo("test_cli_model_fifo", 0600) == 0);  // opening it would wait for a writer forever
    const Result fifo = run_cli({"--model", "test_cli_model_fifo", "--text", "x", "--print"});
    CHECK(fifo.code == 2);
    CHECK_THAT(fifo.err, Contains("test_cli_model_fifo: is a FIFO (named pipe), not a checkpoint folder or a model file"));
    fs::remove("test_cli_model_fifo");

    const Result device = run_cli({"--model", "/dev/zero", "--text", "x", "--export-json", "x.json"});
    CHECK(device.code == 2);
    CHECK_THAT(device.err, Contains("/dev/zero: is a character device, not a checkpoint folder or a model file"));

    fs::remove("test_cli_model_loop_a");
    fs::remove("test_cli_model_loop_b");
    fs::create_symlink("test_cli_model_loop_b", "test_cli_model_loop_a");
    fs::create_symlink("test_cli_model_loop_a", "test_cli_model_loop_b");
    const Result loop = run_cli({"--model", "test_cli_model_loop_a", "--text", "x", "--print"});
    CHECK(loop.code == 2);
    CHECK_THAT(loop.err, Contains("test_cli_model_loop_a: too many levels of symbolic links"));
    fs::remove("test_cli_model_loop_a");
    fs::remove("test_cli_model_loop_b");
}

TEST_CASE("option --text with bytes that are not UTF-8 is refused with --model too, naming the byte", "[cli][model]") {
    testing::write_tiny_checkpoint("test_cli_model_utf8");
    const Result r = run_cli({"--model", "test_cli_model_utf8", "--text", "the \xC3(cat", "--print"});
    CHECK(r.code == 2);
    CHECK_THAT(r.err, Contains("--text: not valid UTF-8 at byte 4 (0xC3)"));
    CHECK(r.out.empty());
}

TEST_CASE("option --model NAME opens a model from the Hugging Face cache, and says where it looked when it is not there", "[cli][model][hf-cache]") {
    namespace fs = std::filesystem;
    const fs::path cache = fs::temp_directory_path() / "attnlab-cli-hf-cache";
    fs::remove_all(cache);
    const std::string commit = "89abcdef0123456789abcdef0123456789abcdef";
    fs::create_directories(cache / "models--org--tiny-gpt2" / "refs");
    { std::ofstream(cache / "models--org--tiny-gpt2" / "refs" / "main") << commit; }
    const std::string snapshot = (cache / "models--org--tiny-gpt2" / "snapshots" / commit).string();
    testing::write_tiny_checkpoint(snapshot);
    const char* old = std::getenv("HF_HUB_CACHE");
    const std::optional<std::string> saved = old ? std::optional<std::string>(old) : std::nullopt;
    ::setenv("HF_HUB_CACHE", cache.c_str(), 1);

    const Result by_name = run_cli({"--model", "org/tiny-gpt2", "--text", " the cat", "--export-json", "test_cli_model_hf.json"});
    const Result by_folder = run_cli({"--model", snapshot, "--text", " the cat", "--export-json", "test_cli_model_hf_folder.json"});
    const Result missing = run_cli({"--model", "org/absent", "--text", " the cat"});
    if (saved) ::setenv("HF_HUB_CACHE", saved->c_str(), 1);
    else ::unsetenv("HF_HUB_CACHE");

    INFO(by_name.err);
    REQUIRE(by_name.code == 0);
    REQUIRE(by_folder.code == 0);
    const nlohmann::json a = read_json("test_cli_model_hf.json"), b = read_json("test_cli_model_hf_folder.json");
    CHECK(a["token_ids"] == b["token_ids"]);
    CHECK(a["next_token_top5"] == b["next_token_top5"]);
    CHECK(missing.code == 2);
    CHECK_THAT(missing.err, Contains("org/absent: no such folder or file, and org/absent is not in the Hugging Face cache (" + cache.string()) &&
                                Contains("no folder models--org--absent"));
    fs::remove_all(cache);
}

TEST_CASE("a Llama folder with its tokenizer.json opens with --model, and --export-json writes the ids, every layer's heads and the top 5", "[cli][families]") {
    namespace fs = std::filesystem;
    const fs::path folder = fs::temp_directory_path() / "attnlab-cli-llama";
    fs::remove_all(folder);
    // The tiny Llama with a vocabulary as large as the byte-level tokenizer it ships with.
    testing::families::FamilyCheckpoint c = testing::families::llama_checkpoint();
    c.config["vocab_size"] = 408;
    testing::families::TensorMaker make(c, 99);
    make("model.embed_tokens.weight", {408, 24}, 0.5);
    testing::families::write_family_checkpoint(folder.string(), c);
    fs::copy_file(fs::path(ATTNLAB_TEST_DATA) / "tokenizers" / "bytelevel-roberta-prefix-space.json", folder / "tokenizer.json");
    const fs::path out = folder / "trace.json";
    const Result r = run_cli({"--model", folder.string(), "--text", "the cat sat", "--export-json", out.string()});
    INFO(r.err);
    REQUIRE(r.code == 0);
    std::ifstream in(out);
    const nlohmann::json j = nlohmann::json::parse(in);
    CHECK(j["kind"] == "llama");
    REQUIRE(j["token_ids"].size() >= 3);
    REQUIRE(j["layers"].size() == 2);
    CHECK(j["layers"][0]["heads"].size() == 6);  // every query head's weights
    CHECK(j["layers"][0]["heads"][5].contains("weights"));
    CHECK(j["layers"][1]["settings"]["kv_heads"] == 2);
    // The weights are named where the checkpoint stores them, not copied into the export.
    CHECK_FALSE(j["layers"][1].contains("w_q"));
    CHECK_FALSE(j["layers"][1]["block"].contains("w_gate"));
    CHECK(j["layers"][1]["weights_in_checkpoint"]["w_q"] == "model.layers.1.self_attn.q_proj.weight.T");
    CHECK(j["layers"][1]["weights_in_checkpoint"]["block.w_gate"] == "model.layers.1.mlp.gate_proj.weight.T");
    CHECK(j["layers"][1]["block"].contains("ffn_gate"));
    // The fixture is BF16 (SmolLM2's dtype): its weights stay BF16, read where the file has them.
    const Result printed = run_cli({"--model", folder.string(), "--text", "the cat sat", "--print"});
    CHECK_THAT(printed.out, Catch::Matchers::Contains("2 layers of 6 heads; weights BF16, ") &&
                                Catch::Matchers::Contains("read in place from the file"));
    CHECK(j["next_token_top5"]["ids"].size() == 5);
    // The same ids as the tokenizer gives, and what the engine computes for them.
    const hf::OpenedModelLoad load = hf::open_model(folder.string());
    REQUIRE(load.model);
    const ModelPass pass = hf::forward_text(*load.model, "the cat sat");
    REQUIRE(pass.ok);
    CHECK(j["token_ids"].get<std::vector<int>>() == pass.token_ids);
    CHECK(j["next_token_top5"]["ids"][0] == pass.next_token_top5[0].id);
    // A family the app does not read is refused, naming it and what is read.
    testing::families::FamilyCheckpoint falcon = testing::families::llama_checkpoint();
    falcon.config["model_type"] = "falcon";
    const fs::path falcon_folder = fs::temp_directory_path() / "attnlab-cli-falcon";
    fs::remove_all(falcon_folder);
    testing::families::write_family_checkpoint(falcon_folder.string(), falcon);
    const Result refused = run_cli({"--model", falcon_folder.string(), "--text", "the cat", "--print"});
    CHECK(refused.code == 2);
    CHECK_THAT(refused.err, Catch::Matchers::Contains("falcon") && Catch::Matchers::Contains("llama"));
    fs::remove_all(folder);
    fs::remove_all(falcon_folder);
}

TEST_CASE("option --model on a Qwen3-MoE, Qwen2-MoE or gpt-oss folder: --print prints a mixture layer's routing, --export-json its router's matrices and where its experts are stored",
          "[cli][families][moe]") {
    namespace fs = std::filesystem;
    const fs::path folder = fs::temp_directory_path() / "attnlab-cli-qwen3-moe";
    fs::remove_all(folder);
    // The tiny Qwen3-MoE with the byte-level tokenizer's 402 tokens in its embedding and head.
    testing::families::write_with_tokenizer(folder.string(), testing::families::qwen3_moe_checkpoint(), 402, 16, 1.0,
                                            (fs::path(ATTNLAB_TEST_DATA) / "tokenizers" / "bytelevel-roberta-prefix-space.json").string());
    const Result printed = run_cli({"--model", folder.string(), "--text", "the cat", "--layer", "1", "--head", "1", "--print"});
    INFO(printed.err);
    REQUIRE(printed.code == 0);
    CHECK_THAT(printed.out, Catch::Matchers::Contains("layer 1: router probabilities") &&
                                Catch::Matchers::Contains("layer 1: routing: each token's top 3 of 8 experts, renormalised to sum 1"));
    const Result dense = run_cli({"--model", folder.string(), "--text", "the cat", "--layer", "2", "--head", "1", "--print"});
    CHECK(dense.code == 0);
    CHECK_THAT(dense.out, !Catch::Matchers::Contains("routing"));  // layer 2 is in mlp_only_layers
    const fs::path out = folder / "trace.json";
    REQUIRE(run_cli({"--model", folder.string(), "--text", "the cat", "--export-json", out.string()}).code == 0);
    std::ifstream in(out);
    const nlohmann::json j = nlohmann::json::parse(in);
    const nlohmann::json& block = j["layers"][0]["block"];
    REQUIRE(block.contains("routing"));
    for (const auto& row : block["routing"]) {
        int kept = 0;
        double sum = 0.0;
        for (const auto& w : row) {
            kept += w.get<double>() > 0.0;
            sum += w.get<double>();
        }
        CHECK(kept == 3);
        CHECK(sum == Approx(1.0).epsilon(1e-5));
    }
    CHECK(block.contains("router_logits"));
    CHECK_FALSE(j["layers"][1]["block"].contains("routing"));
    CHECK(j["layers"][0]["weights_in_checkpoint"]["block.moe.router"] == "model.layers.0.mlp.gate.weight.T");
    CHECK(j["layers"][2]["weights_in_checkpoint"]["block.moe.experts.7.w_2"] == "model.layers.2.mlp.experts.7.down_proj.weight.T");
    fs::remove_all(folder);

    // gpt-oss: its router never forms a softmax over all experts; the logits are printed and exported
    const fs::path oss = fs::temp_directory_path() / "attnlab-cli-gpt-oss";
    fs::remove_all(oss);
    testing::families::write_with_tokenizer(oss.string(), testing::families::gpt_oss_checkpoint(), 402, 16, 1.0,
                                            (fs::path(ATTNLAB_TEST_DATA) / "tokenizers" / "bytelevel-roberta-prefix-space.json").string());
    const Result oss_printed = run_cli({"--model", oss.string(), "--text", "the cat", "--layer", "2", "--head", "1", "--print"});
    INFO(oss_printed.err);
    REQUIRE(oss_printed.code == 0);
    CHECK_THAT(oss_printed.out, Catch::Matchers::Contains("layer 2: router logits, x\xC2\xB7W_router + b_router") &&
                                    Catch::Matchers::Contains("layer 2: routing: each token's top 2 of 4 logits, softmax over those 2") &&
                                    !Catch::Matchers::Contains("router probabilities"));
    const fs::path oss_out = oss / "trace.json";
    REQUIRE(run_cli({"--model", oss.string(), "--text", "the cat", "--export-json", oss_out.string()}).code == 0);
    std::ifstream oss_in(oss_out);
    const nlohmann::json k = nlohmann::json::parse(oss_in);
    CHECK(k["layers"][0]["block"].contains("router_logits"));
    CHECK_FALSE(k["layers"][0]["block"].contains("router_probabilities"));
    CHECK(k["layers"][0]["settings"]["block"]["moe"]["router_kind"] == "top_k_then_softmax");
    CHECK(k["layers"][1]["weights_in_checkpoint"]["block.moe.experts.3.w_gate"] == "model.layers.1.mlp.experts.gate_up_proj[3][:, 0::2]");
    fs::remove_all(oss);

    // Qwen2-MoE: the shared expert's gate printed beside the routing; its output, gate and tensors exported
    const fs::path qwen2 = fs::temp_directory_path() / "attnlab-cli-qwen2-moe";
    fs::remove_all(qwen2);
    testing::families::write_with_tokenizer(qwen2.string(), testing::families::qwen2_moe_checkpoint(), 402, 16, 1.0,
                                            (fs::path(ATTNLAB_TEST_DATA) / "tokenizers" / "bytelevel-roberta-prefix-space.json").string());
    const Result shared_printed = run_cli({"--model", qwen2.string(), "--text", "the cat", "--layer", "1", "--head", "1", "--print"});
    INFO(shared_printed.err);
    REQUIRE(shared_printed.code == 0);
    CHECK_THAT(shared_printed.out, Catch::Matchers::Contains("layer 1: routing: each token's top 2 of 6 experts") &&
                                       Catch::Matchers::Contains("layer 1: the shared expert's gate, \xCF\x83(x\xC2\xB7g), on every token (width 20)"));
    const fs::path qwen2_out = qwen2 / "trace.json";
    REQUIRE(run_cli({"--model", qwen2.string(), "--text", "the cat", "--export-json", qwen2_out.string()}).code == 0);
    std::ifstream qwen2_in(qwen2_out);
    const nlohmann::json q = nlohmann::json::parse(qwen2_in);
    const nlohmann::json& sparse = q["layers"][0]["block"];
    REQUIRE(sparse.contains("shared_gate_values"));
    for (const auto& row : sparse["shared_gate_values"]) {
        REQUIRE(row.size() == 1);
        CHECK(row[0].get<double>() > 0.0);
        CHECK(row[0].get<double>() < 1.0);
    }
    CHECK(sparse.contains("shared_output"));
    CHECK_FALSE(q["layers"][1]["block"].contains("shared_output"));  // the dense layer
    CHECK(q["layers"][0]["settings"]["block"]["moe"]["shared_d_ff"] == 20);
    CHECK(q["layers"][2]["weights_in_checkpoint"]["block.moe.shared_weights.w_2"] == "model.layers.2.mlp.shared_expert.down_proj.weight.T");
    CHECK(q["layers"][0]["weights_in_checkpoint"]["block.moe.shared_gate"] == "model.layers.0.mlp.shared_expert_gate.weight.T");
    fs::remove_all(qwen2);

    // DeepSeek-V3: latent attention's d_v and scale printed, its steps exported; the router's σ scores,
    // choice and scaled routing printed, the multi-token prediction layer read past
    const fs::path deepseek = fs::temp_directory_path() / "attnlab-cli-deepseek-v3";
    fs::remove_all(deepseek);
    testing::families::write_with_tokenizer(deepseek.string(), testing::families::deepseek_v3_checkpoint(), 402, 16, 1.0,
                                            (fs::path(ATTNLAB_TEST_DATA) / "tokenizers" / "bytelevel-roberta-prefix-space.json").string());
    const Result latent_printed = run_cli({"--model", deepseek.string(), "--text", "the cat sat", "--layer", "2", "--head", "1", "--print"});
    INFO(latent_printed.err);
    REQUIRE(latent_printed.code == 0);
    CHECK_THAT(latent_printed.out, Catch::Matchers::Contains("d_k = 8, d_v = 3, scale ") && Catch::Matchers::Contains("(not 1/√8)") &&
                                       Catch::Matchers::Contains("layer 2: router scores, \xCF\x83(x\xC2\xB7W_router)") &&
                                       Catch::Matchers::Contains("layer 2: router choice, \xCF\x83 + b_choice in the 2 best of 4 groups") &&
                                       Catch::Matchers::Contains("their \xCF\x83 renormalised \xC3\x97 2.5"));
    const fs::path deepseek_out = deepseek / "trace.json";
    REQUIRE(run_cli({"--model", deepseek.string(), "--text", "the cat", "--export-json", deepseek_out.string()}).code == 0);
    std::ifstream deepseek_in(deepseek_out);
    const nlohmann::json ds = nlohmann::json::parse(deepseek_in);
    REQUIRE(ds["layers"][0].contains("latent"));
    CHECK(ds["layers"][0]["latent"]["latent"][0].size() == 8);
    CHECK(ds["layers"][0]["latent"]["k_rope"][0].size() == 4);
    CHECK(ds["layers"][0]["settings"]["latent"]["kv_rank"] == 8);
    CHECK(ds["layers"][0]["d_v"] == 3);
    CHECK_FALSE(ds["layers"][0]["block"].contains("routing"));  // the dense first layer
    CHECK(ds["layers"][1]["block"].contains("router_choice"));
    CHECK(ds["layers"][1]["settings"]["block"]["moe"]["router_kind"] == "sigmoid_grouped");
    CHECK(ds["layers"][0]["weights_in_checkpoint"]["latent.w_kv_b"] == "model.layers.0.self_attn.kv_b_proj.weight.T");
    CHECK(ds["layers"][2]["weights_in_checkpoint"]["block.moe.shared_weights.w_1"] == "model.layers.2.mlp.shared_experts.up_proj.weight.T");
    fs::remove_all(deepseek);
}

TEST_CASE("options --ablate L:H and --ablate-expert L:E run the pass, the prediction and the writing without them, and what the model lacks exits 2 naming it",
          "[cli][families][moe]") {
    namespace fs = std::filesystem;
    const fs::path folder = fs::temp_directory_path() / "attnlab-cli-qwen3-moe-ablate";
    fs::remove_all(folder);
    testing::families::write_with_tokenizer(folder.string(), testing::families::qwen3_moe_checkpoint(), 402, 16, 1.0,
                                            (fs::path(ATTNLAB_TEST_DATA) / "tokenizers" / "bytelevel-roberta-prefix-space.json").string());
    const lm::ModelLoad load = lm::load_model(folder.string());
    REQUIRE(load.model);
    auto exported = [&](std::vector<std::string> extra) {
        const fs::path out = folder / "trace.json";
        std::vector<std::string> args{"--model", folder.string(), "--text", "the cat sat on the mat", "--export-json", out.string()};
        args.insert(args.end(), extra.begin(), extra.end());
        const Result r = run_cli(args);
        INFO(r.err);
        REQUIRE(r.code == 0);
        std::ifstream in(out);
        return nlohmann::json::parse(in);
    };
    const nlohmann::json intact = exported({});
    CHECK_FALSE(intact.contains("ablated"));
    // Layer 1's busiest expert, and head 2 of layer 3.
    const ModelPass pass = lm::forward_text(*load.model, "the cat sat on the mat");
    REQUIRE(pass.ok);
    Eigen::Index busiest = 0;
    (pass.layers[0].block.routing.array() != 0.0f).cast<int>().colwise().sum().maxCoeff(&busiest);
    const std::string expert = "1:" + std::to_string(busiest + 1);
    const nlohmann::json j = exported({"--ablate-expert", expert, "--ablate", "3:2"});
    CHECK(j["ablated"] == nlohmann::json{{"heads", {{3, 2}}}, {"experts", {{1, busiest + 1}}}});
    CHECK(j["layers"][0]["settings"]["block"]["moe"]["ablated"] == nlohmann::json{busiest});
    CHECK(j["layers"][0]["block"]["routing"] == intact["layers"][0]["block"]["routing"]);  // the router's choice unchanged
    const ModelPass ablated = lm::forward_text(*load.model, "the cat sat on the mat", stack::Ablation{{{2, 1}}, {{0, static_cast<int>(busiest)}}});
    REQUIRE(ablated.ok);
    REQUIRE(j["next_token_top5"]["ids"].size() == 5);
    for (size_t i = 0; i < 5; ++i) {
        CHECK(j["next_token_top5"]["ids"][i] == ablated.next_token_top5[i].id);
        CHECK(j["next_token_top5"]["probabilities"][i].get<double>() == Approx(ablated.next_token_top5[i].probability).epsilon(1e-6));
    }
    CHECK(j["next_token_top5"] != intact["next_token_top5"]);
    // --print says what was ablated; --generate writes with it
    const Result printed = run_cli({"--model", folder.string(), "--text", "the cat", "--ablate-expert", "3:2", "--print"});
    CHECK(printed.code == 0);
    CHECK_THAT(printed.out, Catch::Matchers::Contains("ablated: expert 2 of layer 3 (an expert's output dropped, the routing kept)"));
    CHECK(exported({"--ablate-expert", expert, "--generate", "3"})["generated_ids"].size() == 3);
    // What the model does not have, or a malformed pair, is refused, exit 2, naming it
    for (const auto& [args, said] : std::vector<std::pair<std::vector<std::string>, std::string>>{
             {{"--ablate-expert", "1:9"}, ": --ablate-expert 1:9: the model has no expert 9 of layer 1 (layer 1's mixture has 8 experts)"},
             {{"--ablate-expert", "2:1"}, ": --ablate-expert 2:1: the model has no expert 1 of layer 2 (layer 2's feed-forward is not a mixture of experts)"},
             {{"--ablate-expert", "4:1"}, ": --ablate-expert 4:1: the model has no expert 1 of layer 4 (3 layers)"},
             {{"--ablate", "1:5"}, ": --ablate 1:5: the model has no head 5 of layer 1 (3 layers of 4 heads)"}}) {
        std::vector<std::string> full{"--model", folder.string(), "--text", "the cat", "--print"};
        full.insert(full.end(), args.begin(), args.end());
        const Result r = run_cli(full);
        CHECK(r.code == 2);
        CHECK(r.err == folder.string() + said + "\n");
    }
    for (const std::string bad : {"1", "0:1", "1:0", "1:2:3", "a:b", "1:2x"}) {
        const Result r = run_cli({"--model", folder.string(), "--text", "the cat", "--print", "--ablate-expert", bad});
        CHECK(r.code == 2);
        CHECK_THAT(r.err, Catch::Matchers::Contains("--ablate-expert " + bad + ": expected L:E, the layer and the expert counted from 1"));
    }
    const Result no_text = run_cli({"--model", folder.string(), "--head-roles", "--print", "--ablate", "1:1"});
    CHECK(no_text.code == 2);
    CHECK_THAT(no_text.err, Catch::Matchers::Contains("--ablate changes the pass of --text"));
    fs::remove_all(folder);
}

TEST_CASE("option --model on Gemma 3 as published (a tokenizer.json token beyond the embedding): a text without it runs, one with it exits 2 naming it",
          "[cli][model]") {
    const std::string folder = "test_cli_model_gemma3_image_token";
    testing::families::write_gemma3_with_image_token(folder, std::string(ATTNLAB_TEST_DATA) + "/tokenizers/bytelevel-roberta-prefix-space.json");
    const Result runs = run_cli({"--model", folder, "--text", "the cat sat", "--export-json", "test_cli_model_gemma3_image_token.json"});
    INFO(runs.err);
    CHECK(runs.code == 0);
    const Result refused = run_cli({"--model", folder, "--text", "the cat <image_soft_token> sat", "--export-json",
                                    "test_cli_model_gemma3_image_token.json"});
    CHECK(refused.code == 2);
    CHECK(refused.err == folder + ": token 402 `<image_soft_token>` at character 9 of the sentence is beyond the model's embedding of 402 rows\n");
    std::filesystem::remove_all(folder);
    std::filesystem::remove("test_cli_model_gemma3_image_token.json");
}
