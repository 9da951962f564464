#pragma once
// The command line run in-process, as main() runs it: parse, then the headless commands.
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli.hpp"

namespace attn::testing {

struct CliResult {
    int code;
    std::string out, err;
};

inline CliResult run_cli(std::vector<std::string> args) {
    args.insert(args.begin(), "attnlab");
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    std::ostringstream out, err;
    int code = 0;
    auto options = cli::parse(static_cast<int>(argv.size()), argv.data(), out, err, code);
    if (options) code = cli::run_headless(*options, out, err);
    return {code, out.str(), err.str()};
}

// An empty folder of its own under the temporary folder: attnlab-<prefix>-<label>.
inline std::filesystem::path scratch_folder(const std::string& prefix, const std::string& label) {
    const std::filesystem::path folder = std::filesystem::temp_directory_path() / ("attnlab-" + prefix + "-" + label);
    std::filesystem::remove_all(folder);
    std::filesystem::create_directories(folder);
    return folder;
}

// A JSON file the command line wrote.
inline nlohmann::json read_json_file(const std::filesystem::path& path) {
    std::ifstream in(path);
    return nlohmann::json::parse(in);
}

}  // namespace attn::testing
