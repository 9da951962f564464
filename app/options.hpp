#pragma once
// What the command line asks for, as plain data: the flags parsed (cli.hpp), the headless
// commands and the window both read it. No parser here, so a view that starts from it does
// not reach into the command line.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace attn::cli {

// --train TASK and the flags only it reads (cli_train.hpp runs it).
struct TrainOptions {
    std::string task;                 // empty: no training
    std::optional<int> layers;        // 1 … 4 (default 1)
    std::optional<int> d_model;       // 8 … 128 (default 32)
    std::optional<int> steps;         // default 300
    std::optional<float> learning_rate;
    std::string save_model;           // write the trained model here (core/train/model_file.hpp)
};

// --model PATH and its flags (cli_model.hpp runs it).
struct ModelOptions {
    std::string path;                 // empty: no model
    std::optional<int> layer, head;   // with --print: that head's tables, counted from 1
    // What each head does (core/interpret): the roles scored on a probe of random tokens
    // repeated (its block length L and seed), the logit lens of the sentence, and the change
    // in one token's log-probability with each head ablated alone.
    bool head_roles = false;
    std::optional<int> probe_length;
    std::uint64_t probe_seed = 1;
    bool logit_lens = false;
    bool ablation_sweep = false;
    std::optional<int> sweep_token;   // the token id the sweep scores; default: the prediction
    // What the pass runs without: heads ("L:H") and a mixture's experts ("L:E"), from 1.
    std::vector<std::string> ablate, ablate_expert;
    // Writing (core/generate): N tokens after the text, sampled as these say (Options::seed is
    // the sampler's seed with --generate).
    std::optional<int> generate;
    std::optional<float> temperature; // 0 (the default): greedy
    std::optional<int> top_k;
    std::optional<float> top_p;
};

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

    TrainOptions train;                     // --train TASK and its flags
    ModelOptions model;                     // --model PATH and its flags
    std::string download;                   // --download org/name[@rev] (cli_download.hpp)
};

}  // namespace attn::cli
