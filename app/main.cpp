// attnlab: the command line and the desktop app in one binary.
#include <iostream>

#include "cli.hpp"
#include "cli_backend.hpp"
#include "gui.hpp"

int main(int argc, char** argv) {
    int exit_code = 0;
    auto options = attn::cli::parse(argc, argv, std::cout, std::cerr, exit_code);
    if (!options) return exit_code;
    if (!attn::cli::wants_window(*options))
        return attn::cli::run_headless(*options, std::cout, std::cerr, attn::cli::backend_runner(options->backend, std::cerr));
    attn::session_file::SessionLoad session;  // a session file's models beside its scenario
    auto scenario = attn::cli::load_scenario(*options, std::cerr, &session);
    if (!scenario) return 2;
    return attn::gui::run(*options, std::move(*scenario), session);
}
