#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>

#include "attention/engine.hpp"
#include "teaching/presets.hpp"
#include "tensor/reflect.hpp"
#include "attention/registry.hpp"
#include "attention/scenario_edits.hpp"
#include "attention/serialize.hpp"

using namespace attn;
using Catch::Matchers::Contains;

namespace {

std::string all_errors(const ScenarioLoad& load) {
    std::string s;
    for (auto& e : load.errors) s += e + "\n";
    return s;
}

}  // namespace

TEST_CASE("scenario JSON round trip gives the same trace") {
    for (const Preset& p : presets()) {
        INFO(p.name);
        Scenario s = p.scenario;
        s.w_q = resolved_weight(s.w_q, s.d_model, s.d_model, s.seed, 0);  // an explicit matrix too
        if (s.input == InputMode::Direct) s.w_q = SharedMatrix();
        const std::string text = scenario_to_json(s).dump();
        const ScenarioLoad back = scenario_from_text(text, "round-trip");
        REQUIRE(back.errors.empty());
        REQUIRE(back.scenario);
        CHECK(scenario_to_json(*back.scenario) == scenario_to_json(s));
        const Trace a = run(s), b = run(*back.scenario);
        REQUIRE(a.ok == b.ok);
        CHECK(trace_to_json(a) == trace_to_json(b));
    }
}

TEST_CASE("the fixed keys of the direct format") {
    const ScenarioLoad load = scenario_from_text(
        R"({"q": [[1,0],[0,1],[1,1]], "k": [[1,1],[1,0],[0,1]], "v": [[10,0],[0,10],[5,5]],
            "mask": "causal", "scale": false, "masked_fill": -1e9})", "t");
    REQUIRE(load.scenario);
    CHECK(load.scenario->input == InputMode::Direct);
    CHECK(load.scenario->mask == MaskKind::Causal);
    CHECK_FALSE(load.scenario->scale);
    CHECK(load.scenario->masked_fill == -1e9f);
}

TEST_CASE("the embedding format / with per-head weights") {
    const ScenarioLoad load = scenario_from_text(
        R"({"tokens": ["a","b"], "d_model": 2, "heads": 2,
            "w_q": [[[1],[0]], [[0],[1]]], "positional_encoding": "rope", "mask": "window", "window": 1})", "t");
    REQUIRE(load.errors.empty());
    const Scenario& s = *load.scenario;
    CHECK(s.w_q.rows() == 2);
    CHECK(s.w_q.cols() == 2);
    CHECK(s.w_q(0, 0) == 1.0f);
    CHECK(s.w_q(1, 1) == 1.0f);
    CHECK(s.positional == PositionalEncoding::Rotary);
    CHECK(s.mask == MaskKind::SlidingWindow);
    CHECK(run(s).ok);
}

TEST_CASE("a band mask reads and writes its half-width, 0 included, and a band without one is refused") {
    const ScenarioLoad load = scenario_from_text(
        R"({"q": [[1,0],[0,1],[1,1]], "k": [[1,1],[1,0],[0,1]], "v": [[10,0],[0,10],[5,5]], "mask": "band", "window": 0})", "t");
    REQUIRE(load.scenario);
    CHECK(load.scenario->mask == MaskKind::Band);
    CHECK(load.scenario->window == 0);
    const Trace t = run(*load.scenario);
    REQUIRE(t.ok);
    CHECK(t.output(1, 0) == Approx(0.0f).margin(1e-6));  // each query sees itself alone: its own value row
    CHECK(t.output(1, 1) == Approx(10.0f));
    const ScenarioLoad back = scenario_from_text(scenario_to_json(*load.scenario).dump(), "back");
    REQUIRE(back.scenario);
    CHECK(back.scenario->mask == MaskKind::Band);
    CHECK(back.scenario->window == 0);
    const auto missing = scenario_from_text(R"({"q": [[1]], "k": [[1]], "v": [[1]], "mask": "band"})", "t");
    CHECK_FALSE(missing.scenario);
    CHECK_THAT(all_errors(missing), Contains("\"band\" needs its half-width"));
    const auto closed = scenario_from_text(R"({"q": [[1]], "k": [[1]], "v": [[1]], "mask": "window", "window": 0})", "t");
    CHECK_FALSE(closed.scenario);
    CHECK_THAT(all_errors(closed), Contains("a sliding window holds at least 1 key"));
}

TEST_CASE("bad files say what and where") {
    SECTION("not JSON") {
        const auto load = scenario_from_text("{\"q\": [[1, 0],\n [0 1]]}", "bad.json");
        CHECK_FALSE(load.scenario);
        CHECK_THAT(all_errors(load), Contains("bad.json: line 2") && Contains("not valid JSON"));
    }
    SECTION("ragged matrix") {
        const auto load = scenario_from_text(R"({"q": [[1,0],[0,1,2]], "k": [[1,1],[1,0]], "v": [[1],[2]]})", "r.json");
        CHECK_THAT(all_errors(load), Contains("key 'q' row 2") && Contains("expected 2 numbers"));
    }
    SECTION("wrong type") {
        const auto load = scenario_from_text(R"({"tokens": ["a"], "heads": "two"})", "w.json");
        CHECK_THAT(all_errors(load), Contains("key 'heads'") && Contains("expected an integer"));
    }
    SECTION("unknown enum value") {
        const auto load = scenario_from_text(R"({"tokens": ["a"], "mask": "diagonal"})", "e.json");
        CHECK_THAT(all_errors(load), Contains("key 'mask'") && Contains("\"causal\""));
    }
    SECTION("unknown key") {
        const auto load = scenario_from_text(R"({"tokens": ["a"], "maks": "causal"})", "k.json");
        CHECK_THAT(all_errors(load), Contains("key 'maks'"));
    }
    SECTION("top level is not an object") {
        CHECK_THAT(all_errors(scenario_from_text("[1, 2]", "a.json")), Contains("expected a JSON object"));
    }
    SECTION("number outside float32") {
        CHECK_THAT(all_errors(scenario_from_text(R"({"q": [[1e39]], "k": [[1]], "v": [[1]]})", "f.json")),
                   Contains("float32"));
    }
    SECTION("missing file") {
        CHECK_THAT(all_errors(load_scenario_file("/nonexistent/x.json")), Contains("cannot open"));
    }
}

TEST_CASE("non-finite numbers travel as strings") {
    const auto load = scenario_from_text(R"({"q": [["nan", 1]], "k": [["-inf", 0]], "v": [["inf", 2]]})", "n.json");
    REQUIRE(load.scenario);
    CHECK(std::isnan(load.scenario->q(0, 0)));
    CHECK(load.scenario->k(0, 0) == -std::numeric_limits<float>::infinity());
    const auto j = scenario_to_json(*load.scenario);
    CHECK(j["q"][0][0] == "nan");
    CHECK(j["v"][0][0] == "inf");
}

TEST_CASE("trace JSON has the documented keys and equals the trace") {
    const Trace t = run(find_preset("dot-product-3-tokens")->scenario);
    const auto j = trace_to_json(t);
    for (const char* key : {"q", "k", "v", "scores", "scaled_scores", "masked_scores", "weights", "output"})
        CHECK(j["heads"][0].contains(key));
    CHECK(j["output"].size() == 3);
    CHECK(j["heads"][0]["weights"][0][2].get<float>() == t.head[0].weights(0, 2));
    CHECK(j["output"][2][1].get<float>() == t.output(2, 1));
}

TEST_CASE("trace JSON writes every matrix the registry names, once, where its name says, with its numbers") {
    // A block with every part (LayerNorm's γ and β, biases, the feed-forward), two heads, RoPE.
    Scenario s;
    s.target.tokens = {"the", "cat", "sat"};
    s.d_model = 4;
    s.heads = 2;
    s.positional = PositionalEncoding::Rotary;
    s.b_q = Matrix::Constant(1, 4, 0.25f);
    s.b_o = Matrix::Constant(1, 4, -0.5f);
    s.block.feed_forward = s.block.layer_norm = s.block.residual = true;
    s.block.d_ff = 3;
    // The modern blocks' matrices too: Gemma's sandwich (its two more norms, with β under
    // LayerNorm) with the gated feed-forward (W_gate, gate, up and their product), and the
    // parallel residual with RMSNorm.
    const int design = GENERATE(0, 1, 2);
    INFO("design " << design);
    if (design == 0) s.block.b_1 = Matrix::Constant(1, 3, 0.125f);
    if (design >= 1) s.block.norm = NormPlacement::Pre;
    if (design == 1) {
        s.block.sandwich_norm = s.block.gated = true;
        s.block.norm_post_attention.beta = Matrix::Constant(1, 4, 0.25f);
        s.block.norm_post_feed_forward.beta = Matrix::Constant(1, 4, -0.25f);
    }
    if (design == 2) {
        s.block.parallel_residual = true;
        s.block.norm_kind = NormKind::RMSNorm;
        s.block.gamma_plus_one = true;
    }
    const Trace t = run(s);
    REQUIRE(t.ok);
    const auto j = trace_to_json(t);
    CHECK(j["version"] == 2);
    size_t written = 0;
    const std::vector<std::string> names = matrix_names(t);
    REQUIRE(names.size() > 20);
    for (const std::string& name : names) {
        INFO(name);
        const auto ref = parse_matrix_name(name);
        REQUIRE(ref);
        const Matrix& m = *find_matrix(t, name);
        const std::string key = ref->entry->key;
        const nlohmann::json* at = ref->entry->per_head ? &j["heads"][static_cast<size_t>(ref->head)][key]
                                   : key.rfind("block.", 0) == 0 ? &j["block"][key.substr(6)]
                                                                 : &j[key];
        REQUIRE(at->is_array());
        const Eigen::Index last_row = m.rows() - 1, last_col = m.cols() - 1;
        const nlohmann::json& cell = is_vector(*ref->entry) ? (*at)[static_cast<size_t>(last_col)]
                                                            : (*at)[static_cast<size_t>(last_row)][static_cast<size_t>(last_col)];
        CHECK(cell.get<float>() == m(last_row, last_col));
        ++written;
    }
    // Nothing else holds a matrix: the keys beside them are the settings and the sizes.
    size_t arrays = 0;
    const auto count = [&](const nlohmann::json& object, std::initializer_list<const char*> not_matrices) {
        for (const auto& [key, value] : object.items())
            if (value.is_array() && std::find_if(not_matrices.begin(), not_matrices.end(), [&](const char* k) { return key == k; }) == not_matrices.end())
                ++arrays;
    };
    count(j, {"errors", "warnings", "query_tokens", "key_tokens", "visible", "heads"});
    for (const auto& head : j["heads"]) count(head, {"fully_masked_rows"});
    count(j["block"], {});
    CHECK(arrays == written);
}

TEST_CASE("atomic write replaces the file whole / and a failed write keeps the old one") {
    namespace fs = std::filesystem;
    const fs::path folder = fs::temp_directory_path() / "attnlab-test-atomic";
    fs::remove_all(folder);
    fs::create_directories(folder);
    const std::string path = (folder / "session.json").string();
    auto contents = [&] {
        std::ifstream in(path);
        return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    };
    std::string error;
    REQUIRE(write_file_atomic(path, "first", &error));
    REQUIRE(write_file_atomic(path, "second", &error));
    CHECK(contents() == "second");

    SECTION("disk full: the write fails with ENOSPC, the old file stays") {
        // The temporary file the write goes through, made a link to /dev/full: every write to it fails as on a full disk.
        const fs::path tmp = path + ".tmp." + std::to_string(::getpid());
        fs::create_symlink("/dev/full", tmp);
        CHECK_FALSE(write_file_atomic(path, "third", &error));
        CHECK_THAT(error, Contains(path) && Contains("the disk is full") && Contains("unchanged"));
        CHECK(contents() == "second");
        CHECK_FALSE(fs::exists(fs::symlink_status(tmp)));  // no temporary file left behind
    }
    SECTION("path missing: the folder is named") {
        const std::string missing = (folder / "no-such-folder" / "x.json").string();
        CHECK_FALSE(write_file_atomic(missing, "x", &error));
        CHECK_THAT(error, Contains(missing) && Contains("the folder " + (folder / "no-such-folder").string() + " does not exist"));
    }
    SECTION("permission denied") {
        std::string target;
        if (::geteuid() != 0) {  // a folder without write permission
            const fs::path locked = folder / "locked";
            fs::create_directories(locked);
            fs::permissions(locked, fs::perms::owner_read | fs::perms::owner_exec);
            target = (locked / "x.json").string();
        } else {  // root writes anywhere it has permissions for; sysfs refuses new files even to root
            target = "/sys/attnlab-test.json";
        }
        CHECK_FALSE(write_file_atomic(target, "x", &error));
        CHECK_THAT(error, Contains(target) && (Contains("permission denied") || Contains("read-only")));
        std::error_code ec;  // let remove_all in (the folder exists only when not root)
        fs::permissions(folder / "locked", fs::perms::owner_all, fs::perm_options::replace, ec);
    }
    fs::remove_all(folder);
}

namespace {

// A scenario with every kind of number a checkpoint's layer has: X, the weights (shared
// holders, as a model's), biases, a block with its norms and feed-forward.
Scenario layer_like() {
    Scenario s;
    s.name = "a layer";
    s.target.tokens = {"the", "cat", "sat"};
    s.d_model = 8;
    s.heads = 2;
    s.target.embeddings = Matrix::Random(3, 8);
    s.w_q = Matrix::Random(8, 8);
    s.w_k = Matrix::Random(8, 8);
    s.w_v = Matrix::Random(8, 8);
    s.w_o = Matrix::Random(8, 8);
    s.b_q = Vector::Random(8);
    s.mask = MaskKind::Causal;
    s.block.residual = s.block.layer_norm = s.block.feed_forward = true;
    s.block.norm = NormPlacement::Pre;
    s.block.d_ff = 16;
    s.block.w_1 = Matrix::Random(8, 16);
    s.block.w_2 = Matrix::Random(16, 8);
    s.block.b_1 = Vector::Random(16);
    s.block.norm_1.gamma = Vector::Random(8);
    s.block.norm_1.beta = Vector::Random(8);
    return s;
}

}  // namespace

TEST_CASE("a scenario kept as its edits of another: the cells and settings changed, applied back to the same scenario") {
    const Scenario base = layer_like();
    Scenario edited = base;
    edited.w_q.edit()(2, 5) = 7.5f;
    edited.block.w_2.edit()(15, 0) = std::numeric_limits<float>::quiet_NaN();
    edited.target.embeddings(1, 3) = -0.0f;
    edited.block.norm_1.gamma(4) = std::numeric_limits<float>::infinity();
    edited.mask = MaskKind::SlidingWindow;
    edited.window = 3;
    edited.block.epsilon = 1e-3f;
    const nlohmann::json edits = scenario_edits_to_json(base, edited);
    CHECK(edits["cells"]["w_q"] == nlohmann::json::parse("[[2, 5, 7.5]]"));
    CHECK(edits["cells"]["block.w_2"] == nlohmann::json::parse(R"([[15, 0, "nan"]])"));
    CHECK(edits["cells"]["block.norm_1.gamma"] == nlohmann::json::parse(R"([[4, "inf"]])"));
    REQUIRE(edits["cells"]["embeddings"].size() == 1);
    CHECK_FALSE(edits["cells"].contains("w_k"));  // shared with the base: not even read
    CHECK(edits["settings"] == nlohmann::json::parse(R"({"mask": "window", "window": 3, "block": {"epsilon": 0.0010000000474974513}})"));
    CHECK(edited_cell_count(edits) == 4);
    const ScenarioLoad back = apply_scenario_edits(base, edits, "s.json: key 'model.layer_edits");
    INFO(all_errors(back));
    REQUIRE(back.scenario);
    CHECK(reflect::equal(*back.scenario, edited));
    CHECK(back.scenario->w_k.shares(base.w_k));   // an unedited weight is the base's, not a copy
    CHECK_FALSE(back.scenario->w_q.shares(base.w_q));
    CHECK(base.w_q(2, 5) != 7.5f);                // the base's weights stay as they were
    // Nothing edited: nothing written, and the base back.
    const nlohmann::json none = scenario_edits_to_json(base, base);
    CHECK(none == nlohmann::json::parse(R"({"cells": {}, "settings": {}})"));
    REQUIRE(apply_scenario_edits(base, none, "s").scenario);
    CHECK(reflect::equal(*apply_scenario_edits(base, none, "s").scenario, base));
}

TEST_CASE("a scenario's edits of another: a weight replaced whole (the seed changed) is a setting, a removed one null") {
    const Scenario base = layer_like();
    Scenario edited = base;
    edited.w_v = SharedMatrix();  // seeded from the scenario's seed again
    edited.block.w_1 = Matrix::Random(8, 4);
    edited.block.d_ff = 4;
    edited.block.w_2 = Matrix::Random(4, 8);
    edited.block.b_1 = Vector();
    const nlohmann::json edits = scenario_edits_to_json(base, edited);
    CHECK(edits["settings"]["w_v"].is_null());
    CHECK(edits["settings"]["block"]["w_1"].size() == 8);
    CHECK(edits["settings"]["block"]["b_1"].is_null());
    const ScenarioLoad back = apply_scenario_edits(base, edits, "s");
    INFO(all_errors(back));
    REQUIRE(back.scenario);
    CHECK(reflect::equal(*back.scenario, edited));
}

TEST_CASE("a scenario's edits that do not fit are refused naming the key and the cell") {
    const Scenario base = layer_like();
    const std::string where = "s.json: key 'model.layer_edits";
    auto first_error = [&](const char* text) {
        const ScenarioLoad l = apply_scenario_edits(base, nlohmann::json::parse(text), where);
        CHECK_FALSE(l.scenario);
        return l.errors.empty() ? std::string() : l.errors.front();
    };
    CHECK(first_error(R"({"cells": {"w_q": [[8, 0, 1.0]]}})") == where + ".cells.w_q': cell [8,0,1.0] is outside w_q's 8 \xC3\x97 8");
    CHECK(first_error(R"({"cells": {"b_q": [[9, 1.0]]}})") == where + ".cells.b_q': cell [9,1.0] is outside b_q's 1 \xC3\x97 8");
    CHECK(first_error(R"({"cells": {"w_x": [[0, 0, 1.0]]}})") == where + ".cells.w_x': unknown matrix");
    CHECK(first_error(R"({"cells": {"w_q": [[0, 1.0]]}})").find(where + ".cells.w_q': entry 1: expected [row, column, value]") == 0);
    CHECK(first_error(R"({"cells": {"w_q": [[-1, 0, 1.0]]}})").find(where + ".cells.w_q': entry 1: expected") == 0);
    CHECK(first_error(R"({"cells": {"w_q": [[0, 0, "one"]]}})").find(where + ".cells.w_q': entry 1: expected") == 0);
    CHECK(first_error(R"({"cells": {}, "colour": 1})") == where + ".colour': unknown key");
    CHECK(first_error(R"({"settings": {"colour": 1}})").find("colour") != std::string::npos);
    CHECK(first_error(R"({"settings": {"mask": "diagonal"}})").find("mask") != std::string::npos);
}

TEST_CASE("dump_json_rows writes a matrix's rows one a line, objects indented, and reads back the same") {
    const nlohmann::json j = nlohmann::json::parse(R"({"name": "a\u00e9", "w": [[1.5, -2], [3, 4]], "v": [1, 2, 3], "empty": [], "o": {},
        "list": [{"k": [1, 2]}, {"k": "x"}], "nested": {"deep": [[true, null]]}})");
    const std::string text = dump_json_rows(j, 1);
    CHECK(nlohmann::json::parse(text) == j);
    CHECK(text.find("\n  [1.5,-2],\n  [3,4]\n") != std::string::npos);  // a matrix: a row a line
    CHECK(text.find("\"v\": [1,2,3]") != std::string::npos);       // a vector on one line
    CHECK(text.find("\"k\": [1,2]") != std::string::npos);
    CHECK(std::count(text.begin(), text.end(), '\n') == 22);
}
