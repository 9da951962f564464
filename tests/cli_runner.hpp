#pragma once
// The command line run in-process, as main() runs it: parse, then the headless commands.
#include <sstream>
#include <string>
#include <vector>

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

}  // namespace attn::testing
