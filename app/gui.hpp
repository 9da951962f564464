#pragma once
#include "options.hpp"
#include "session_file.hpp"
#include "attention/scenario.hpp"

namespace attn::gui {

// Opens the window on the scenario and runs until it is closed; with
// options.screenshot set, renders a few frames, writes the PNG and returns.
// --screenshot and --bench-frames need no window: where none opens (no X server), they
// draw off-screen through a headless EGL context into a framebuffer of the --size.
// `session`: the models a session file kept beside the scenario (cli::load_scenario), opened
// again in the window. Returns the process exit code (non-zero when no window or GL context
// could be made).
int run(const cli::Options& options, Scenario scenario, const session_file::SessionLoad& session = {});

}  // namespace attn::gui
