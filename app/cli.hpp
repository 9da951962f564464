#pragma once
// The command line: flags, the headless commands (no display needed) and the toggles
// that can be applied to any scenario before it is printed, exported or shown.
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "options.hpp"
#include "attention/scenario.hpp"
#include "session_file.hpp"
#include "attention/trace.hpp"

namespace attn::cli {


// A backend for the headless commands: the CPU engine by default; main() passes the GPU
// one when --backend asks for it.
using TraceRunner = std::function<Trace(const Scenario&)>;

// Parses argv. On --help or a bad flag, returns nullopt and sets exit_code
// (0 for --help) after writing the message to out/err.
std::optional<Options> parse(int argc, char** argv, std::ostream& out, std::ostream& err,
                             int& exit_code);

// Loads the scenario the options name (preset, file, or the default preset) and applies
// the toggles. nullopt with a message in err when it cannot. With `session`, a session
// file's models beside its scenario (attached, and warnings about them) are kept there for
// the window.
std::optional<Scenario> load_scenario(const Options& options, std::ostream& err, session_file::SessionLoad* session = nullptr);
// The scenario --lesson's step --step shows (a lesson file, or a lesson of assets/lessons by
// name, as the window finds it), with the toggles applied: what the headless commands print
// and export of a lesson. nullopt with a message naming the lesson when it cannot.
std::optional<Scenario> load_lesson_step(const Options& options, std::ostream& err);
// Applies the toggles; false with a message in err for a value that does not fit.
bool apply_toggles(const Options& options, Scenario& scenario, std::ostream& err);

bool wants_window(const Options& options);
// Runs the headless commands. Returns the process exit code.
int run_headless(const Options& options, std::ostream& out, std::ostream& err,
                 const TraceRunner& runner = nullptr);

}  // namespace attn::cli
