#include "cli.hpp"

#include <filesystem>
#include <ostream>

#include <CLI/CLI.hpp>

#include "attention/analysis.hpp"
#include "teaching/articles.hpp"
#include "autosave.hpp"
#include "cli_download.hpp"
#include "cli_model.hpp"
#include "cli_train.hpp"
#include "data_dir.hpp"
#include "attention/engine.hpp"
#include "teaching/lesson.hpp"
#include "teaching/presets.hpp"
#include "teaching/report.hpp"
#include "attention/registry.hpp"
#include "attention/serialize.hpp"
#include "session_file.hpp"
#include "teaching/toggles.hpp"
#include "version.hpp"

namespace attn::cli {

namespace {

// A whole number of at least 1, said plainly (CLI11's PositiveNumber prints a range of doubles).
const CLI::Validator kAtLeastOne(
    [](std::string& text) -> std::string {
        char* end = nullptr;
        const long long value = std::strtoll(text.c_str(), &end, 10);
        if (text.empty() || *end != '\0' || value < 1) return "expected a whole number of at least 1, found " + text;
        return {};
    },
    "≥ 1");

// The offset of the first byte of text that does not belong to valid UTF-8, or npos.
size_t first_invalid_utf8(const std::string& text) {
    for (size_t i = 0; i < text.size();) {
        const auto lead = static_cast<unsigned char>(text[i]);
        const size_t length = lead < 0x80 ? 1 : (lead >> 5) == 0x6 ? 2 : (lead >> 4) == 0xE ? 3 : (lead >> 3) == 0x1E ? 4 : 1;
        const std::string sequence = text.substr(i, length);
        if (valid_utf8(sequence) != sequence) return i;  // valid_utf8 keeps valid sequences as they are
        i += length;
    }
    return std::string::npos;
}

}  // namespace

std::optional<Options> parse(int argc, char** argv, std::ostream& out, std::ostream& err, int& exit_code) {
    Options o;
    // Named here, not from argv[0]: the usage line (and the manual page made from --help) says
    // "attnlab" however the binary was started.
    CLI::App app{"Attention Lab: transformer self-attention, every step computed and shown.\n"
                 "With no command, opens the window on a preset.",
                 "attnlab"};
    app.set_version_flag("--version", version_line(), "print the version and the commit it was built from");
    app.add_flag("--list-presets", o.list_presets, "print every preset name, one per line");
    app.add_flag("--print", o.print, "print the trace as labelled tables");
    app.add_flag("--check-articles", o.check_articles,
                 "compare every number the articles print with the computed one (MATCH / MISMATCH)");
    app.add_option("--export-json", o.export_json, "write the trace as JSON to this file");
    app.add_option("--export-scenario", o.export_scenario, "write the scenario (with any toggles applied) as JSON");
    app.add_option("--preset", o.preset, "open this preset (see --list-presets)");
    app.add_option("--scenario", o.scenario_file, "open this scenario (or session) JSON file");
    app.add_flag("--restore", o.restore,
                 "open the newest autosave left by a run that did not close normally (in $XDG_STATE_HOME/attnlab)");
    app.add_flag("--no-autosave", o.no_autosave, "the window neither autosaves the session nor offers to restore one");
    app.add_option("--screenshot", o.screenshot, "render the window, write this PNG and exit");
    std::string size;
    app.add_option("--size", size, "window size WxH for the window and --screenshot (default 1600x1000)");
    app.add_option("--mask", o.mask, "none|causal|padding|window|custom");
    app.add_option("--window", o.window, "sliding window size (with --mask window)")->check(kAtLeastOne);
    app.add_option("--heads", o.heads, "number of heads (must divide d_model)")->check(kAtLeastOne);
    app.add_option("--pe", o.positional, "positional encoding: none|sinusoidal|learned|rope|alibi");
    app.add_option("--softmax", o.softmax, "stable|naive");
    app.add_option("--scale", o.scale, "divide scores by sqrt(d_k): true|false");
    app.add_option("--masked-fill", o.masked_fill, "value written into masked cells (default -inf)");
    app.add_option("--seed", o.seed, "seed of the generated weights; with --model --generate, the sampler's seed (default 1)");
    app.add_option("--text", o.text, "replace the tokens with this sentence");
    app.add_option("--bench-frames", o.bench_frames, "run the window N frames editing one embedding each frame; print frame times")->check(kAtLeastOne);
    app.add_option("--backend", o.backend,
                   "engine: cpu|gpu|auto (default auto: the CPU in full up to 1024 tokens, above that the faster of the CPU "
                   "and a hardware GPU, by measurement; gpu runs OpenGL compute shaders and falls back to the CPU with a notice)")
        ->check(CLI::IsMember({"cpu", "gpu", "auto"}));
    app.add_flag("--block", o.block, "add the rest of the block: residual, LayerNorm, feed-forward");
    app.add_option("--lesson", o.lesson, "open this lesson: a file, or the name of a lesson that comes with the app (e.g. 03-masks)");
    app.add_option("--step", o.step, "the lesson step to show, 1 = the first")->check(kAtLeastOne);
    app.add_flag("--presenter", o.presenter, "presenter mode: large fonts, high contrast, fewer panels");
    add_train_options(app, o.train);
    add_model_options(app, o.model);
    add_download_option(app, o.download);
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        exit_code = app.exit(e, out, err) == 0 ? 0 : 2;  // --help: 0; every bad flag: 2, as docs/command-line.md says
        return std::nullopt;
    }
    if (!check_train_options(app, o, err) || !check_model_options(app, o, err) || !check_download_option(app, o, err)) {
        exit_code = 2;
        return std::nullopt;
    }
    if (!size.empty()) {
        int w = 0, h = 0;
        char x = 0;
        if (std::sscanf(size.c_str(), "%d%c%d", &w, &x, &h) != 3 || (x != 'x' && x != 'X') || w < 64 || h < 64 ||
            w > 16384 || h > 16384) {
            err << "--size " << size << ": expected WIDTHxHEIGHT, e.g. 1600x1000 (64 to 16384 each)\n";
            exit_code = 2;
            return std::nullopt;
        }
        o.width = w;
        o.height = h;
    }
    if (static_cast<int>(!o.preset.empty()) + static_cast<int>(!o.scenario_file.empty()) + static_cast<int>(o.restore) > 1) {
        err << "give one of --preset, --scenario and --restore\n";
        exit_code = 2;
        return std::nullopt;
    }
    // A sentence is tokenised and drawn: bytes that are not UTF-8 would become U+FFFD unseen.
    if (o.text) {
        const size_t bad = first_invalid_utf8(*o.text);
        if (bad != std::string::npos) {
            char byte[8];
            std::snprintf(byte, sizeof byte, "0x%02X", static_cast<unsigned char>((*o.text)[bad]));
            err << "--text: not valid UTF-8 at byte " << bad << " (" << byte << "): give the sentence as UTF-8 text\n";
            exit_code = 2;
            return std::nullopt;
        }
    }
    if (app.count("--step") > 0 && o.lesson.empty()) {
        err << "--step chooses a step of a lesson: give --lesson too\n";
        exit_code = 2;
        return std::nullopt;
    }
    // Without the window the lesson's step is the scenario: it cannot be another one too.
    if (!o.lesson.empty() && !wants_window(o) && (!o.preset.empty() || !o.scenario_file.empty() || o.restore)) {
        err << "--lesson gives the scenario that is printed or exported: give one of --lesson, --preset, --scenario and --restore\n";
        exit_code = 2;
        return std::nullopt;
    }
    return o;
}

bool apply_toggles(const Options& o, Scenario& s, std::ostream& err) {
    Toggles t;
    if (o.mask) {
        t.mask = mask_from_string(*o.mask);
        if (!t.mask) {
            err << "--mask " << *o.mask << ": expected none, causal, padding, window or custom\n";
            return false;
        }
    }
    if (o.positional) {
        t.positional = positional_from_string(*o.positional);
        if (!t.positional) {
            err << "--pe " << *o.positional << ": expected none, sinusoidal, learned, rope or alibi\n";
            return false;
        }
    }
    if (o.softmax) {
        t.softmax = softmax_from_string(*o.softmax);
        if (!t.softmax) {
            err << "--softmax " << *o.softmax << ": expected stable or naive\n";
            return false;
        }
    }
    t.window = o.window;
    t.heads = o.heads;
    t.scale = o.scale;
    t.masked_fill = o.masked_fill;
    t.seed = o.seed;
    t.text = o.text;
    if (o.block) t.block = true;
    std::string error;
    if (!apply(t, s, &error)) {
        err << error << "\n";
        return false;
    }
    return true;
}

namespace {

// A session that keeps its scenario as a model's layer (session_file.hpp), read without a
// window: the model opened from its folder (one that changed since is said, and used as it is
// now), the sentence run with the heads ablated, the layer made again with the session's
// edits. A folder that cannot be opened or a layer that cannot be made is an error naming it.
std::optional<Scenario> layer_of_session(const session_file::SessionLoad& load, std::ostream& err) {
    const session_file::ModelChoice& choice = *load.attached.model;
    const std::string layer = "layer " + std::to_string(choice.layer + 1);
    lm::ModelLoad opened = lm::load_model(choice.folder);
    if (!opened.model) {
        err << choice.source << ": the session's scenario is " << layer << " of the model in " << choice.folder
            << ", which cannot be opened:\n";
        for (const std::string& e : opened.errors) err << "  " << e << "\n";
        return std::nullopt;
    }
    const lm::Model& model = *opened.model;
    if (const std::string changed = session_file::files_changed(choice.files, session_file::model_files(model.folder())); !changed.empty())
        err << choice.source << ": warning: the session's model folder " << choice.folder << " has changed since the session was saved ("
            << changed << "): its " << layer << " and the edits of it are made from the model as it is now\n";
    stack::Ablation ablated;
    for (const auto& [l, h] : choice.ablated) ablated.heads.insert(stack::HeadId{l, h});
    for (const auto& [l, e] : choice.ablated_experts) ablated.experts.insert(stack::ExpertId{l, e});
    const ModelPass pass = lm::forward_text(model, choice.sentence, model.fitting(ablated));
    session_file::LayerReopen reopened = session_file::reopen_layer(choice, model, pass);
    for (const std::string& notice : reopened.notices) err << notice << "\n";
    return std::move(reopened.scenario);
}

}  // namespace

std::optional<Scenario> load_scenario(const Options& o, std::ostream& err, session_file::SessionLoad* session) {
    Scenario s;
    // A session whose scenario is a model's layer: without a window it is made here; the window
    // makes it once it has opened the model (it starts on the default preset, as with no file).
    auto scenario_of = [&](session_file::SessionLoad& load) -> std::optional<Scenario> {
        if (load.scenario) return std::move(load.scenario);
        if (!load.scenario_in_model) return std::nullopt;
        if (session != nullptr) return find_preset(default_preset_name())->scenario;
        return layer_of_session(load, err);
    };
    if (o.restore) {
        const std::string directory = autosave::state_directory();
        const std::vector<autosave::Orphan> orphans = autosave::find_orphans(directory);
        if (orphans.empty()) {
            err << "--restore: no autosave left by a run that did not close normally in "
                << (directory.empty() ? std::string("the state directory (HOME is not set)") : directory) << "\n";
            return std::nullopt;
        }
        session_file::SessionLoad load = session_file::load_session(orphans.front().path);
        for (auto& e : load.errors) err << e << "\n";
        std::optional<Scenario> scenario = scenario_of(load);
        if (!scenario) return std::nullopt;
        s = std::move(*scenario);
    } else if (!o.scenario_file.empty()) {
        session_file::SessionLoad load = session_file::load_session_or_scenario(o.scenario_file);
        for (auto& e : load.errors) err << e << "\n";
        std::optional<Scenario> scenario = scenario_of(load);
        if (!scenario) return std::nullopt;
        s = std::move(*scenario);
        if (session) {  // the window opens it as File → Open does: its view, its lesson step, its models
            session->scenario_in_model = load.scenario_in_model;
            session->view = std::move(load.view);
            session->attached = std::move(load.attached);
            session->warnings = std::move(load.warnings);
        }
    } else {
        // --text alone starts from a sentence: the default preset gives Q, K, V directly.
        const bool sentence = o.preset.empty() && o.text.has_value();
        const std::string name = !o.preset.empty() ? o.preset : sentence ? default_sentence_preset_name() : default_preset_name();
        const Preset* p = find_preset(name);
        if (!p) {
            err << "unknown preset '" << name << "' (attnlab --list-presets lists them)\n";
            return std::nullopt;
        }
        s = p->scenario;
        if (sentence) s.name = "sentence";
    }
    if (!apply_toggles(o, s, err)) return std::nullopt;
    return s;
}

std::optional<Scenario> load_lesson_step(const Options& o, std::ostream& err) {
    // Found as the window finds it (open_lesson_named): a lesson of assets/lessons by its file,
    // its file name, its name without the extension or the number, or its title; else a file.
    const std::string folder = data_dir() + "/lessons";
    std::vector<std::string> folder_errors;  // another lesson of the folder that does not load is not this one's fault
    std::vector<Lesson> lessons = load_lessons(folder, folder_errors);
    std::optional<Lesson> lesson;
    if (const int found = find_lesson(lessons, o.lesson); found >= 0) lesson = std::move(lessons[static_cast<std::size_t>(found)]);
    if (!lesson) {
        std::error_code ec;
        const std::filesystem::file_status status = std::filesystem::status(o.lesson, ec);  // never an open: a FIFO would wait
        if (ec && status.type() != std::filesystem::file_type::not_found) {
            err << "--lesson " << o.lesson << ": " << ec.message() << "\n";
            return std::nullopt;
        }
        if (ec) {
            std::string names;
            for (const Lesson& l : lessons) names += (names.empty() ? "" : ", ") + std::filesystem::path(l.file).stem().string();
            err << "--lesson " << o.lesson << ": no such lesson file, and no lesson of that name in " << folder
                << (names.empty() ? std::string() : " (" + names + ")") << "\n";
            return std::nullopt;
        }
        LessonLoad load = load_lesson_file(o.lesson);
        for (const std::string& e : load.errors) err << e << "\n";
        if (!load.lesson) return std::nullopt;
        lesson = std::move(load.lesson);
    }
    const int steps = static_cast<int>(lesson->steps.size());
    if (o.step > steps) {
        err << "--step " << o.step << ": " << lesson->file << " has " << steps << (steps == 1 ? " step" : " steps") << "\n";
        return std::nullopt;
    }
    Scenario s = scenario_at_step(*lesson, o.step - 1);
    if (!apply_toggles(o, s, err)) return std::nullopt;
    return s;
}

namespace {

// Where the scenario came from, as messages name it.
std::string scenario_source(const Options& o) {
    if (!o.lesson.empty()) return "lesson " + o.lesson + " step " + std::to_string(o.step);
    if (o.restore) return "the autosave";
    if (!o.scenario_file.empty()) return o.scenario_file;
    return "preset " + (o.preset.empty() ? std::string(default_preset_name()) : o.preset);
}

}  // namespace

bool wants_window(const Options& o) {
    return o.train.task.empty() && o.download.empty() && !o.model.generate && !o.list_presets && !o.print && !o.check_articles && o.export_json.empty() && o.export_scenario.empty();
}

int run_headless(const Options& o, std::ostream& out, std::ostream& err, const TraceRunner& runner) {
    if (!o.train.task.empty()) return run_train(o, out, err);
    if (!o.download.empty()) return run_download(o, out, err);
    if (!o.model.path.empty()) return run_model(o, out, err);  // wants_window: only with --export-json or --print
    if (o.list_presets) {
        for (const Preset& p : presets()) out << p.name << "\n";
        return 0;
    }
    if (o.check_articles) {
        auto verdicts = check_articles();
        out << format_verdicts(verdicts);
        return 0;  // a mismatch is the article's, not a failure of the run
    }
    auto scenario = o.lesson.empty() ? load_scenario(o, err) : load_lesson_step(o, err);
    if (!scenario) return 2;
    if (!o.export_scenario.empty()) {
        std::string error;
        if (!write_file_atomic(o.export_scenario, dump_json(scenario_to_json(*scenario), 1) + "\n", &error)) {
            err << error << "\n";
            return 4;
        }
        if (!o.print && o.export_json.empty()) return 0;
    }
    const Trace trace = runner ? runner(*scenario) : run(*scenario);
    if (!trace.ok) {
        for (auto& e : trace.errors) err << scenario_source(o) << ": " << e << "\n";
        return 3;
    }
    if (o.print) out << format_trace(trace);
    if (!o.export_json.empty()) {
        std::string error;
        if (!write_file_atomic(o.export_json, dump_json(trace_to_json(trace), 1) + "\n", &error)) {
            err << error << "\n";
            return 4;
        }
    }
    // Computed, but NaN or ±∞ reached the results: said, and a script can tell.
    const NonFiniteReport non_finite = non_finite_report(trace);
    if (!non_finite.matrices.empty()) {
        err << scenario_source(o) << ": NaN or \xC2\xB1\xE2\x88\x9E in " << non_finite.matrices.size()
            << (non_finite.matrices.size() == 1 ? " matrix (" : " matrices (");
        for (size_t i = 0; i < non_finite.matrices.size() && i < 4; ++i) err << (i ? ", " : "") << display_name(non_finite.matrices[i]);
        err << (non_finite.matrices.size() > 4 ? ", …" : "") << "), " << non_finite.origin << "\n";
        return 5;
    }
    return 0;
}

}  // namespace attn::cli
