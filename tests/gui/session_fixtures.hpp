#pragma once
// Shared by the window-less GUI tests: a small scenario, a session that has run, and
// temporary paths.
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>

#include "edits.hpp"
#include "teaching/presets.hpp"

namespace attn::testing {

inline Scenario preset_scenario(const char* name) {
    const Preset* p = find_preset(name);
    REQUIRE(p != nullptr);
    return p->scenario;
}

// An embedding-mode scenario with d_model = 8, two heads and four tokens.
inline Scenario sentence_scenario() {
    Scenario s;
    s.name = "test";
    s.target.tokens = {"the", "cat", "sat", "down"};
    s.d_model = 8;
    s.heads = 2;
    s.seed = 7;
    return s;
}

// A session whose trace has been computed (nothing pending, not dirty).
inline edits::Session ready(Scenario s) {
    edits::Session session;
    session.scenario = std::move(s);
    REQUIRE(edits::update(session));
    REQUIRE(session.trace.ok);
    REQUIRE_FALSE(session.dirty);
    return session;
}

inline std::string temp_path(const std::string& name) {
    return (std::filesystem::temp_directory_path() / ("attnlab-test-" + name)).string();
}

// A fresh, empty folder under the temporary directory.
inline std::string temp_folder(const std::string& name) {
    const std::filesystem::path p = std::filesystem::temp_directory_path() / ("attnlab-test-" + name);
    std::filesystem::remove_all(p);
    std::filesystem::create_directories(p);
    return p.string();
}

}  // namespace attn::testing
