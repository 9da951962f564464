// The catalogue of bad input: each gets a message naming the file, the key or cell, and
// what was expected; nothing crashes.
#include <catch2/catch.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>

#include "attention/engine.hpp"
#include "teaching/lesson.hpp"
#include "attention/serialize.hpp"

using namespace attn;
using Catch::Matchers::Contains;

namespace {

std::string errors_of(const ScenarioLoad& load) {
    std::string s;
    for (auto& e : load.errors) s += e + "\n";
    return s;
}

}  // namespace

TEST_CASE("a file larger than the limit is refused before it is read") {
    const std::string path = "test_huge_scenario.json";
    {
        std::ofstream out(path, std::ios::binary);
        out << "{\"tokens\": [\"a\"], \"name\": \"";
        const std::string chunk(1 << 20, 'x');
        for (int i = 0; i < 65; ++i) out << chunk;
        out << "\"}";
    }
    const auto load = load_scenario_file(path);
    CHECK_FALSE(load.scenario);
    CHECK_THAT(errors_of(load), Contains(path) && Contains("at most"));
    std::remove(path.c_str());
}

TEST_CASE("deeply nested JSON is an error / not a stack overflow") {
    const std::string deep = std::string(200000, '[') + std::string(200000, ']');
    const auto load = scenario_from_text(deep, "deep.json");
    CHECK_FALSE(load.scenario);
    CHECK_FALSE(load.errors.empty());
    const auto nested_q = scenario_from_text("{\"q\": " + std::string(1000, '[') + std::string(1000, ']') + "}", "q.json");
    CHECK_THAT(errors_of(nested_q), Contains("(inside 'q[1][1][1][1][1]…')") && Contains("nested deeper than 16 levels"));
}

TEST_CASE("invalid UTF-8 in token text") {
    SECTION("in a file: a parse error with the position") {
        const auto load = scenario_from_text("{\"tokens\": [\"ok\", \"bad\xff\"]}", "utf.json");
        CHECK_FALSE(load.scenario);
        CHECK_THAT(errors_of(load), Contains("utf.json: line 1"));
    }
    SECTION("typed or passed on the command line: replaced by U+FFFD and still exportable") {
        Scenario s;
        s.target.tokens = tokenize("caf\xe9 ok \xc3\xa9t\xc3\xa9");
        REQUIRE(s.target.tokens.size() == 3);
        CHECK(s.target.tokens[0] == "caf\xEF\xBF\xBD");
        CHECK(s.target.tokens[2] == "\xc3\xa9t\xc3\xa9");  // valid UTF-8 is kept
        const Trace t = run(s);
        REQUIRE(t.ok);
        CHECK_NOTHROW(dump_json(trace_to_json(t)));
        nlohmann::json j;
        j["token"] = std::string("x\xff");
        CHECK(dump_json(j) == "{\"token\":\"x\xEF\xBF\xBD\"}");
    }
}

TEST_CASE("absurd sizes are refused with the numbers") {
    CHECK_THAT(errors_of(scenario_from_text(R"({"tokens": ["a"], "d_model": 1000000000})", "d.json")),
               Contains("key 'd_model'") && Contains("1 to 8192"));
    CHECK_THAT(errors_of(scenario_from_text(R"({"tokens": ["a"], "d_model": -4})", "d.json")), Contains("key 'd_model'"));
    CHECK_THAT(errors_of(scenario_from_text(R"({"tokens": ["a"], "heads": 0})", "h.json")), Contains("key 'heads'"));
    const auto empty = scenario_from_text(R"({"tokens": []})", "e.json");
    REQUIRE(empty.scenario);
    const Trace t = run(*empty.scenario);
    CHECK_FALSE(t.ok);
    CHECK_THAT(t.errors.at(0), Contains("no tokens"));
}

TEST_CASE("1e38 in a cell is accepted, the overflow it causes is located") {
    const auto load = scenario_from_text(R"({"q": [[1e38, 1e38]], "k": [[1e38, 1e38]], "v": [[1, 2]]})", "big.json");
    REQUIRE(load.scenario);
    const Trace t = run(*load.scenario);
    REQUIRE(t.ok);
    CHECK(t.non_finite_inputs.empty());          // the inputs are finite
    CHECK_FALSE(t.head[0].scores.allFinite());   // 1e38·1e38 overflows float32
}

TEST_CASE("wrong types everywhere name the key") {
    const char* cases[][2] = {
        {R"({"tokens": "a b"})", "key 'tokens'"},
        {R"({"tokens": ["a", 3]})", "key 'tokens' entry 2"},
        {R"({"tokens": ["a"], "scale": "yes"})", "key 'scale'"},
        {R"({"tokens": ["a"], "padding": [2]})", "key 'padding' entry 1"},
        {R"({"tokens": ["a"], "embeddings": [[1, "x"]]})", "key 'embeddings' row 1 column 2"},
        {R"({"tokens": ["a"], "block": {"residual": 1}})", "key 'block.residual'"},
        {R"({"tokens": ["a"], "custom_mask": [[2]]})", "key 'custom_mask' row 1 column 1"},
        {R"({"q": [[1]], "k": [[1]]})", "key 'v'"},
        {R"({"tokens": ["a"], "attention": "cross"})", "key 'attention'"},
        {R"(42)", "top level"},
        {R"(not json at all)", "not valid JSON"},
        {"", "not valid JSON"},
    };
    for (auto& c : cases) {
        INFO(c[0]);
        const auto load = scenario_from_text(c[0], "f.json");
        CHECK_FALSE(load.scenario);
        CHECK_THAT(errors_of(load), Contains("f.json") && Contains(c[1]));
    }
}

TEST_CASE("every input the fuzzers ever crashed on loads without a crash") {
    namespace fs = std::filesystem;
    int files = 0;
    auto read = [](const fs::path& p) {
        std::ifstream in(p, std::ios::binary);
        return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    };
    auto is_input = [](const fs::directory_entry& e) { return e.path().filename() != "README.md"; };
    for (const auto& entry : fs::directory_iterator(fs::path(ATTNLAB_FUZZ_REGRESSIONS) / "scenario")) {
        if (!is_input(entry)) continue;
        INFO(entry.path().string());
        const auto load = scenario_from_text(read(entry.path()), entry.path().filename().string());
        if (load.scenario) CHECK_NOTHROW(run(*load.scenario));
        else CHECK_FALSE(load.errors.empty());
        ++files;
    }
    for (const auto& entry : fs::directory_iterator(fs::path(ATTNLAB_FUZZ_REGRESSIONS) / "lesson")) {
        if (!is_input(entry)) continue;
        INFO(entry.path().string());
        const auto load = lesson_from_text(read(entry.path()), entry.path().filename().string());
        if (load.lesson) {
            for (int step = 0; step < static_cast<int>(load.lesson->steps.size()); ++step)
                CHECK_NOTHROW(run(scenario_at_step(*load.lesson, step)));
        } else {
            CHECK_FALSE(load.errors.empty());
        }
        ++files;
    }
    CHECK(files >= 1);
}

TEST_CASE("a number too large for a double is a message") {
    const auto load = scenario_from_text("{\"q\": [[1e999999]]}", "o.json");
    CHECK_FALSE(load.scenario);
    CHECK_THAT(errors_of(load), Contains("o.json") && Contains("not valid JSON"));
}
