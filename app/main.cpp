// attnlab: the command line and the desktop app in one binary.
#include <iostream>

#include "cli.hpp"
#include "gpu/backend.hpp"
#include "gui.hpp"

int main(int argc, char** argv) {
    int exit_code = 0;
    auto options = attn::cli::parse(argc, argv, std::cout, std::cerr, exit_code);
    if (!options) return exit_code;
    if (!attn::cli::wants_window(*options)) {
        attn::cli::TraceRunner runner;  // null: the CPU engine
        if (options->backend == "gpu")
            runner = [](const attn::Scenario& s) { return attn::gpu::run_headless(s, attn::RunOptions{attn::Detail::OutputOnly}); };
        return attn::cli::run_headless(*options, std::cout, std::cerr, runner);
    }
    auto scenario = attn::cli::load_scenario(*options, std::cerr);
    if (!scenario) return 2;
    return attn::gui::run(*options, std::move(*scenario));
}
