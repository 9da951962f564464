#pragma once
// The command line: flags, the headless commands (no display needed) and the toggles
// that can be applied to any scenario before it is printed, exported or shown.
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "cli_train.hpp"
#include "cli_model.hpp"
#include "scenario.hpp"
#include "session_file.hpp"
#include "trace.hpp"

namespace attn::cli {

struct Options {
    // Headless commands.
    bool list_presets = false;
    bool print = false;
    bool check_articles = false;
    std::string export_json;          // write the trace here
    std::string export_scenario;      // write the scenario (after toggles) here

    // What to open.
    std::string preset;               // a preset name
    std::string scenario_file;        // or a scenario JSON file (or a session file)
    bool restore = false;             // or the newest autosave a run that died left behind
    bool no_autosave = false;         // the window neither autosaves nor offers to restore

    // Window.
    std::string screenshot;           // render one frame set and write a PNG, then exit
    int width = 1600, height = 1000;
    std::string lesson;               // open this lesson (file, or name in assets/lessons)
    int step = 1;                     // at this step (1 = the first)
    bool presenter = false;           // presenter mode: large fonts, high contrast, fewer panels

    // Toggles applied on top of the scenario.
    std::optional<std::string> mask;        // none|causal|padding|window|custom
    std::optional<int> window;
    std::optional<int> heads;
    std::optional<std::string> positional;  // none|sinusoidal|learned|rope|alibi
    std::optional<std::string> softmax;     // stable|naive
    std::optional<bool> scale;
    std::optional<float> masked_fill;
    std::optional<std::uint64_t> seed;
    std::optional<std::string> text;        // replaces the tokens with this sentence
    bool block = false;                     // residual + LayerNorm + FFN on
    std::string backend = "auto";           // cpu|gpu|auto (cli_backend.hpp)
    int bench_frames = 0;                   // > 0: run the window this many frames, editing X every frame; print frame times

    TrainOptions train;                     // --train TASK and its flags (cli_train.hpp)
    ModelOptions model;                     // --model PATH and its flags (cli_model.hpp)
};

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
