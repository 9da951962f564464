#include "cli_model.hpp"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <ostream>
#include <sstream>
#include <tuple>

#include <CLI/CLI.hpp>

#include "attention/analysis.hpp"
#include "cli_generate.hpp"
#include "generate/model_writers.hpp"
#include "model/language_model.hpp"
#include "checkpoint/hf_cache.hpp"
#include "interpret/ablation_sweep.hpp"
#include "interpret/logit_lens.hpp"
#include "interpret/model_roles.hpp"
#include "model/stack.hpp"
#include "teaching/report.hpp"
#include "io/path_kind.hpp"
#include "attention/registry.hpp"
#include "attention/serialize.hpp"
#include "attention/softmax.hpp"
#include "train/model_file.hpp"

namespace attn::cli {

namespace {

using nlohmann::json;

// Flags that choose or change a scenario: --model computes its own layers, so each would be
// ignored. The window's own flags are allowed when --model opens the window.
constexpr const char* kIgnoredWithModel[] = {
    "--preset", "--scenario", "--restore", "--mask", "--window", "--heads", "--pe", "--softmax", "--scale",
    "--masked-fill", "--seed", "--block", "--export-scenario", "--lesson", "--step", "--list-presets",
    "--check-articles", "--train", "--layers", "--d-model", "--steps", "--lr", "--save-model"};
constexpr const char* kHeadlessOnly[] = {"--screenshot", "--size", "--presenter", "--no-autosave", "--backend", "--bench-frames"};

// What --model names, decided from the file's status without opening it (opening a FIFO
// waits for a writer): a checkpoint folder, a model file, or neither, with why in `why`.
enum class ModelPath { Folder, File, Neither };

ModelPath model_path_kind(const std::string& path, std::string& why) {
    struct stat st {};   // never an open: a FIFO would wait for a writer
    if (::stat(path.c_str(), &st) != 0) {
        why = errno == ENOENT ? "no such folder or file" : errno == ELOOP ? reason_of_errno(errno) : "cannot be read: " + reason_of_errno(errno);
        return ModelPath::Neither;
    }
    if (S_ISDIR(st.st_mode)) return ModelPath::Folder;
    if (S_ISREG(st.st_mode)) return ModelPath::File;
    why = "is " + kind_of_mode(st.st_mode) + ", not a checkpoint folder or a model file";
    return ModelPath::Neither;
}

// What a model run produced, whichever kind of model.
struct ModelRun {
    std::vector<int> token_ids;
    std::vector<std::string> tokens;
    std::vector<Trace> layers;
    json next_token_top5;
    json predictions;              // model files only: every row's top 5
    // Checkpoints: where each layer's weight matrices are stored, by the trace's keys (the
    // export names them rather than copying them); empty for a model file, whose traces hold them.
    std::vector<std::vector<std::pair<std::string, std::string>>> weights_in_checkpoint;
    std::string non_finite;        // where NaN or ±∞ first arose after the layers; empty: none
    std::string ignored;           // the tensors of the folder the family recomputes or drops, in words
    std::string held;              // checkpoints: "weights BF16, 257 MiB read in place from the file"
    std::string kind;              // the checkpoint's model_type ("gpt2", "llama"); empty: a model file
    json masked_predictions;       // BERT: the top 5 of each [MASK]
    json head_roles, logit_lens, ablation_sweep;  // what --head-roles, --logit-lens, --ablation-sweep asked for
    json ablated;                  // what --ablate and --ablate-expert dropped: {"heads": [[L, H]], "experts": [[L, E]]}, from 1
    std::optional<Continuation> continuation;     // what --generate wrote
    std::string analyses_printed;  // the same as --print prints them
};

// "1 layer", "2 layers".
std::string counted(long long n, const char* one, const char* many) { return std::to_string(n) + " " + (n == 1 ? one : many); }

std::string number(float value) {
    if (std::isnan(value)) return "nan";  // never "-nan": the sign of a NaN means nothing
    std::ostringstream out;
    out << value;
    return out.str();
}

// Where NaN or ±∞ first arose after a model file's layers, as a checkpoint's pass says it
// (NonFiniteOrigin). A model file's parameters are finite (load_model_file refuses others), so
// only an overflow can: in LN_f, or in the logits h·W_U + b_U. The stable softmax of finite
// logits is finite.
std::string model_file_non_finite(const train::Model& model, const train::ForwardPass& pass, const std::vector<std::string>& tokens) {
    const Cell normed = first_non_finite(pass.final_output);
    if (normed.valid()) {
        if (!pass.final_input.allFinite()) return {};  // the last layer's output carries it: the layers' report says where
        return "LN_f: row " + std::to_string(normed.row + 1) + " ('" + tokens[static_cast<size_t>(normed.row)] + "') is " +
               number(pass.final_output(normed.row, normed.col)) +
               " from finite values: LN_f overflowed the float range (about ±3.4e38)";
    }
    const Cell logit = first_non_finite(pass.logits);
    if (!logit.valid()) return {};
    // Token t's logit reads column t of W_U (d × V).
    const int t = logit.col;
    return "the logits: row " + std::to_string(logit.row + 1) + " ('" + tokens[static_cast<size_t>(logit.row)] + "'), the logit of '" +
           model.vocabulary[static_cast<size_t>(t)] + "' (id " + std::to_string(t) + ") is " + number(pass.logits(logit.row, t)) +
           " from finite values: h · unembedding column " + std::to_string(t) + " (reaching " +
           number(model.params.unembedding.col(t).cwiseAbs().maxCoeff()) + ") is beyond the float range (about ±3.4e38)";
}

json top_json(const std::vector<TokenProbability>& top) {
    json ids = json::array(), tokens = json::array(), probabilities = json::array();
    for (const auto& t : top) {
        ids.push_back(t.id);
        tokens.push_back(t.token);
        probabilities.push_back(t.probability);
    }
    return {{"ids", ids}, {"tokens", tokens}, {"probabilities", probabilities}};
}

// The k most probable of softmax(row), best first, named by the vocabulary (NaN ranks below
// every number, which keeps the order strict when NaN reached the logits).
std::vector<TokenProbability> top_of_row(const Matrix& logits, Eigen::Index row, const std::vector<std::string>& names,
                                               int k) {
    const Matrix p = softmax_rows(logits.row(row), SoftmaxKind::Stable);  // (1 × V)
    std::vector<TokenProbability> top;
    for (int t : stack::top_k(p, k)) top.push_back({t, names[static_cast<size_t>(t)], p(0, t)});
    return top;
}

// [SECTION] What each head does: --head-roles, --logit-lens, --ablation-sweep

// The probe's heads as the export holds them (layers and heads from 1) and as --print prints them.
void fill_head_roles(const interpret::RolesRun& roles, ModelRun& run) {
    json heads = json::array();
    std::ostringstream table;
    table << "probe: " << counted(static_cast<long long>(roles.probe.ids.size()), "token", "tokens") << " (" << (roles.probe.bos ? "BOS, " : "")
          << "a block of " << roles.probe.repeat_length << " random tokens, then the same block again; seed " << roles.probe.seed << ")\n";
    for (size_t i = 0; i < roles.tokens.size(); ++i) table << (i ? " " : "  ") << roles.tokens[i];
    table << "\n\nlayer  head";
    for (interpret::Role r : interpret::kRoles) table << "  " << interpret::role_key(r);
    table << "\n";
    for (const interpret::HeadRoles& h : roles.heads) {
        json one = {{"layer", h.head.layer + 1}, {"head", h.head.head + 1}};
        char cell[64];
        std::snprintf(cell, sizeof cell, "%5d  %4d", h.head.layer + 1, h.head.head + 1);
        table << cell;
        for (interpret::Role r : interpret::kRoles) {
            one[interpret::role_key(r)] = h.scores[r];
            std::snprintf(cell, sizeof cell, "  %*.3f", static_cast<int>(std::strlen(interpret::role_key(r))), h.scores[r]);
            table << cell;
        }
        if (const std::optional<interpret::Role> role = interpret::strongest_role(h.scores, 0.5f)) table << "  " << interpret::role_name(*role);
        table << "\n";
        heads.push_back(std::move(one));
    }
    table << "(a role is named where its score is at least 0.5)\n";
    run.head_roles = {{"probe_ids", roles.probe.ids},
                      {"probe_tokens", roles.tokens},
                      {"repeat_length", roles.probe.repeat_length},
                      {"seed", roles.probe.seed},
                      {"bos", roles.probe.bos},
                      {"heads", std::move(heads)}};
    run.analyses_printed += table.str();
}

// The lens and the sweep of a sentence's pass, for any stack; `label` names a token id.
bool fill_lens_and_sweep(const ModelOptions& m, const stack::Stack& stack, const stack::Pass& pass, const std::vector<std::string>& tokens,
                         const std::function<std::string(int)>& label, ModelRun& run, std::ostream& err, const std::string& where) {
    if (m.logit_lens) {
        std::string why;
        const std::optional<interpret::LogitLens> lens = interpret::logit_lens(stack, pass, 5, &why);
        if (!lens) {
            err << where << ": --logit-lens: " << why << "\n";
            return false;
        }
        json layers = json::array();
        std::ostringstream printed;
        printed << "logit lens: after each layer, each position's most likely next token and its probability\nthe sentence:";
        for (const std::string& t : tokens) printed << "  " << t;
        printed << "\n";
        for (size_t l = 0; l < lens->layers.size(); ++l) {
            json positions = json::array();
            printed << "layer " << l + 1 << ":";
            for (size_t i = 0; i < lens->layers[l].size(); ++i) {
                const interpret::LensCell& cell = lens->layers[l][i];
                std::vector<TokenProbability> top;
                for (size_t k = 0; k < cell.ids.size(); ++k) top.push_back({cell.ids[k], label(cell.ids[k]), cell.probabilities[k]});
                json one = {{"position", i + 1}, {"token", tokens[i]}, {"top5", top_json(top)}};
                positions.push_back(std::move(one));
                char p[32];
                std::snprintf(p, sizeof p, " %.3f", top.empty() ? 0.0 : static_cast<double>(top[0].probability));
                printed << "  " << (top.empty() ? std::string("?") : top[0].token) << p;
            }
            printed << "\n";
            layers.push_back({{"layer", l + 1}, {"positions", std::move(positions)}});
        }
        run.logit_lens = std::move(layers);
        run.analyses_printed += printed.str();
    }
    if (m.ablation_sweep) {
        // The model's own prediction by default (none where the stack has no unembedding: the sweep says why).
        const int target = m.sweep_token ? *m.sweep_token : pass.logits.rows() > 0 ? stack::top_k(pass.logits.bottomRows(1), 1).front() : -1;
        std::string why;
        const std::optional<interpret::AblationSweep> sweep = interpret::ablation_sweep(stack, pass, target, &why);
        if (!sweep) {
            err << where << ": --ablation-sweep: " << why << "\n";
            return false;
        }
        json delta = json::array();
        std::ostringstream printed;
        char cell[64];
        std::snprintf(cell, sizeof cell, "%.4f", static_cast<double>(sweep->log_probability));
        printed << "ablation sweep: log p(" << label(target) << " | the sentence) = " << cell
                << "; each head ablated alone changes it by (layer × head):\n";
        for (Eigen::Index l = 0; l < sweep->delta.rows(); ++l) {
            std::vector<float> row;
            printed << "layer " << l + 1 << ":";
            for (Eigen::Index h = 0; h < sweep->delta.cols(); ++h) {
                row.push_back(sweep->delta(l, h));
                std::snprintf(cell, sizeof cell, " %+.4f", static_cast<double>(sweep->delta(l, h)));
                printed << cell;
            }
            printed << "\n";
            delta.push_back(std::move(row));
        }
        json ablated = json::array();
        for (const stack::HeadId& h : pass.ablated.heads) ablated.push_back({{"layer", h.layer + 1}, {"head", h.head + 1}});
        run.ablation_sweep = {{"target_id", target},
                              {"target_token", label(target)},
                              {"position", pass.x0.rows()},
                              {"log_probability", sweep->log_probability},
                              {"delta_log_probability", std::move(delta)},
                              {"already_ablated", std::move(ablated)}};
        run.analyses_printed += printed.str();
    }
    return true;
}

// What --temperature, --top-k, --top-p and --seed ask of the sampler (checked by check_model_options).
generate::SamplerSettings sampler_settings(const Options& o) {
    generate::SamplerSettings s;
    s.temperature = o.model.temperature.value_or(0.0f);
    s.top_k = o.model.top_k.value_or(0);
    s.top_p = o.model.top_p.value_or(1.0f);
    s.seed = o.seed.value_or(1);
    return s;
}

// --generate after a pass, when asked.
int continue_text(const Options& o, const generate::Writer& writer, const stack::Pass& pass, const std::vector<int>& prompt,
                  const std::function<std::string(int)>& label, const std::function<std::string(const std::vector<int>&)>& text_of,
                  ModelRun& run, std::ostream& err, const std::string& where) {
    if (!o.model.generate) return 0;
    if (const std::vector<std::string> faults = generate::write_faults(writer, pass.ablated); !faults.empty()) {
        err << where << ": --generate: " << faults.front() << "\n";
        return 2;
    }
    run.continuation.emplace();
    return write_continuation(writer, pass, prompt, *o.model.generate, sampler_settings(o), label, text_of, *run.continuation, err, where);
}


// A model file trained in the app; the text is its vocabulary's names separated by spaces.
// --ablate and --ablate-expert as one set (from 0); nullopt, said, when one is not L:H.
std::optional<stack::Ablation> ablation_of(const ModelOptions& m, std::ostream& err) {
    stack::Ablation a;
    for (const auto& [flag, list, what] : {std::tuple{"--ablate", &m.ablate, "H"}, std::tuple{"--ablate-expert", &m.ablate_expert, "E"}})
        for (const std::string& pair : *list) {
            int layer = 0, index = 0, used = 0;
            if (std::sscanf(pair.c_str(), "%d:%d%n", &layer, &index, &used) != 2 || used != static_cast<int>(pair.size()) || layer < 1 || index < 1) {
                err << flag << " " << pair << ": expected L:" << what << ", the layer and the " << (what[0] == 'H' ? "head" : "expert")
                    << " counted from 1 (for example 2:5)\n";
                return std::nullopt;
            }
            if (what[0] == 'H') a.heads.insert(stack::HeadId{layer - 1, index - 1});
            else a.experts.insert(stack::ExpertId{layer - 1, index - 1});
        }
    return a;
}

int run_model_file(const std::string& path, const Options& o, ModelRun& run, std::ostream& err) {
    const ModelOptions& m = o.model;
    const std::optional<std::string>& text = o.text;
    if (!m.ablate.empty() || !m.ablate_expert.empty()) {
        err << path << ": " << (m.ablate.empty() ? "--ablate-expert" : "--ablate")
            << " ablates in a checkpoint folder's pass; a model trained in the app ablates its heads in View \xE2\x86\x92 Train\n";
        return 2;
    }
    train::ModelFileLoad load = train::load_model_file(path);
    for (const std::string& e : load.errors) err << e << "\n";
    if (!load.file) return 2;
    const train::Model& model = load.file->model;
    if (model.config.attention == AttentionKind::Cross) {
        err << path << ": a cross-attention model reads a source and a target sequence; --model " << (m.head_roles ? "--head-roles" : "--text")
            << " gives one\n";
        return 2;
    }
    if (m.head_roles) {
        std::string why;
        std::optional<interpret::RolesRun> roles =
            interpret::run_head_roles(model, load.file->settings.task, m.probe_length.value_or(0), m.probe_seed, &why);
        if (!roles) {
            err << path << ": --head-roles: " << why << "\n";
            return 2;
        }
        fill_head_roles(*roles, run);
        run.token_ids = roles->probe.ids;
        run.tokens = roles->tokens;
        run.layers = std::move(roles->layers);
        return 0;
    }
    std::vector<std::string> names;
    std::istringstream words(*text);
    for (std::string w; words >> w;) names.push_back(w);
    std::string error;
    train::ModelInput input;
    input.tokens = train::token_ids(model, names, &error);
    if (!error.empty()) {
        std::string vocabulary;
        for (size_t i = 0; i < model.vocabulary.size() && i < 40; ++i) vocabulary += (i ? " " : "") + model.vocabulary[i];
        err << path << ": --text " << error << " (the vocabulary: " << vocabulary
            << (model.vocabulary.size() > 40 ? " …" : "") << ")\n";
        return 2;
    }
    train::ForwardPass pass = train::forward(model, input);
    if (!pass.ok) {
        for (const std::string& e : pass.errors) err << path << ": " << e << "\n";
        return 3;
    }
    if (m.sweep_token && *m.sweep_token >= model.config.vocab_size) {
        err << path << ": --sweep-token " << *m.sweep_token << " is not a token of the model's " << model.config.vocab_size << "\n";
        return 2;
    }
    const stack::Stack stack = train::make_stack(model, input);
    const auto label = [&model](int id) { return model.vocabulary[static_cast<size_t>(id)]; };
    if (!fill_lens_and_sweep(m, stack, pass, names, label, run, err, path)) return 3;
    const auto text_of = [&model](const std::vector<int>& ids) {
        std::string t;
        for (int id : ids) t += (t.empty() ? "" : " ") + model.vocabulary[static_cast<size_t>(id)];
        return t;
    };
    if (const int code = continue_text(o, generate::writer(model), pass, input.tokens, label, text_of, run, err, path); code != 0) return code;
    run.token_ids = input.tokens;
    run.tokens = names;
    run.layers = std::move(pass.layers);
    run.predictions = json::array();
    for (Eigen::Index i = 0; i < pass.logits.rows(); ++i) {
        json row = top_json(top_of_row(pass.logits, i, model.vocabulary, 5));
        row["row"] = i + 1;
        row["token"] = names[static_cast<size_t>(i)];
        run.predictions.push_back(std::move(row));
    }
    run.next_token_top5 = top_json(top_of_row(pass.logits, pass.logits.rows() - 1, model.vocabulary, 5));
    run.non_finite = model_file_non_finite(model, pass, names);
    return 0;
}

// A checkpoint folder (core/model/language_model): GPT-2, or a family (Llama, Qwen, Gemma, GPT-NeoX,
// BERT) read by core/model/hf. GPT-2's weights are named in the export, not copied.
int run_checkpoint(const std::string& folder, const Options& o, ModelRun& run, std::ostream& err) {
    const ModelOptions& m = o.model;
    const std::optional<std::string>& text = o.text;
    lm::ModelLoad load = lm::load_model(folder);
    for (const std::string& e : load.errors) err << e << "\n";
    if (!load.model) return 2;
    const lm::Model& model = *load.model;
    if (m.generate)
        if (const std::vector<std::string> faults = generate::write_faults(generate::writer(model)); !faults.empty()) {
            err << folder << ": --generate: " << faults.front() << "\n";
            return 2;
        }
    ModelPass pass;
    if (m.head_roles) {
        std::string why;
        std::optional<interpret::RolesRun> roles = interpret::run_head_roles(model, m.probe_length.value_or(0), m.probe_seed, &why);
        if (!roles) {
            err << folder << ": --head-roles: " << why << "\n";
            return 2;
        }
        fill_head_roles(*roles, run);
        pass.ok = true;
        pass.token_ids = roles->probe.ids;
        pass.tokens = std::move(roles->tokens);
        pass.layers = std::move(roles->layers);
    } else {
        if (const std::string beyond = model.token_beyond_embedding(*text); !beyond.empty()) {
            err << folder << ": " << beyond << "\n";
            return 2;  // the text is the bad input: the model runs any other
        }
        const stack::Ablation ablated = *ablation_of(m, err);  // its form was checked with the options
        const lm::Shape& shape = model.shape();
        for (const stack::HeadId& id : ablated.heads)
            if (!id.within(shape.layers, shape.heads)) {
                err << folder << ": --ablate " << id.layer + 1 << ":" << id.head + 1 << ": the model has no head " << id.head + 1 << " of layer "
                    << id.layer + 1 << " (" << counted(shape.layers, "layer", "layers") << " of " << counted(shape.heads, "head", "heads") << ")\n";
                return 2;
            }
        for (const stack::ExpertId& id : ablated.experts)
            if (const int experts = model.experts_in_layer(id.layer); id.expert >= experts) {
                err << folder << ": --ablate-expert " << id.layer + 1 << ":" << id.expert + 1 << ": the model has no expert " << id.expert + 1
                    << " of layer " << id.layer + 1 << " ("
                    << (id.layer >= shape.layers ? counted(shape.layers, "layer", "layers")
                        : experts == 0 ? "layer " + std::to_string(id.layer + 1) + "'s feed-forward is not a mixture of experts"
                                       : "layer " + std::to_string(id.layer + 1) + "'s mixture has " + counted(experts, "expert", "experts"))
                    << ")\n";
                return 2;
            }
        if (!ablated.empty()) {
            json heads = json::array(), experts = json::array();
            for (const stack::HeadId& id : ablated.heads) heads.push_back({id.layer + 1, id.head + 1});
            for (const stack::ExpertId& id : ablated.experts) experts.push_back({id.layer + 1, id.expert + 1});
            run.ablated = {{"heads", std::move(heads)}, {"experts", std::move(experts)}};
        }
        pass = lm::forward_text(model, *text, ablated);
        if (!pass.ok) {
            for (const std::string& e : pass.errors) err << folder << ": " << e << "\n";
            return 3;
        }
        if (m.sweep_token && (*m.sweep_token < 0 || *m.sweep_token >= model.shape().vocab_size)) {
            err << folder << ": --sweep-token " << *m.sweep_token << " is not a token of the model's " << model.shape().vocab_size << "\n";
            return 2;
        }
        const stack::Stack stack = lm::model_stack(model, pass);
        const auto label = [&model](int id) { return model.token_text(id); };
        if (!fill_lens_and_sweep(m, stack, pass, pass.tokens, label, run, err, folder)) return 3;
        const auto text_of = [&model](const std::vector<int>& ids) { return model.text_of(ids); };
        if (const int code = continue_text(o, generate::writer(model), pass, pass.token_ids, label, text_of, run, err, folder); code != 0)
            return code;
    }
    run.token_ids = std::move(pass.token_ids);
    run.tokens = std::move(pass.tokens);
    run.layers = std::move(pass.layers);
    if (pass.non_finite.any()) run.non_finite = pass.non_finite.sentence();
    for (int l = 0; l < model.shape().layers; ++l) run.weights_in_checkpoint.push_back(model.layer_weight_names(l));
    run.held = model.held_weights().sentence();
    run.ignored = load.ignored;
    run.kind = model.model_type();
    if (m.head_roles) return 0;  // the probe's prediction says nothing
    if (!model.masked_lm()) {
        run.next_token_top5 = top_json(pass.next_token_top5);
    } else {
        json masked = json::array();
        for (const MaskedPrediction& mp : pass.masked_predictions) {
            json one = top_json(mp.top);
            one["position"] = mp.position;
            masked.push_back(one);
        }
        run.masked_predictions = masked;
    }
    return 0;
}

// One layer's trace as JSON. A checkpoint layer's weight matrices are the checkpoint's (up to
// 768 × 3072 each, read in place from its file): they are named, not copied, so the file
// stays the size of the activations.
json layer_json(const Trace& t, const ModelRun& run, int layer) {
    if (run.weights_in_checkpoint.empty()) return trace_to_json(t);
    json j = trace_to_json(t, false);
    j["weights_in_checkpoint"] = json::object();
    for (const auto& [key, stored] : run.weights_in_checkpoint[static_cast<size_t>(layer)]) j["weights_in_checkpoint"][key] = stored;
    return j;
}

// One head of one layer as tables (format_head), columns counted from 1 as the panels count them.
std::string format_layer_head(const Trace& t, int layer, int h) {
    const std::string prefix = "layer " + std::to_string(layer + 1) + ", head " + std::to_string(h + 1) + ": ";
    std::ostringstream out;
    // The layer's own mask: causal, a sliding window (Mistral, Gemma's local layers), or none (BERT).
    const MaskKind mask = t.settings.mask;
    const std::string mask_text = t.settings.delta_net ? "Gated DeltaNet: a linear-attention recurrence over each token and the ones "
                                                         "before it, its state " + std::to_string(t.d_k) + " \xC3\x97 " + std::to_string(t.d_v) +
                                                         " per head whatever the length, " + std::to_string(t.linear.key_heads) + " key heads"
                                  : mask == MaskKind::Causal          ? "causal mask"
                                  : mask == MaskKind::SlidingWindow ? "sliding window of " + std::to_string(t.settings.window)
                                  : mask == MaskKind::Chunked       ? "chunked causal mask, chunks of " + std::to_string(t.settings.chunk)
                                  : mask == MaskKind::Band          ? "bidirectional band: keys within \xC2\xB1" + std::to_string(t.settings.window)
                                  : mask == MaskKind::None          ? "no mask: every token sees every token"
                                                                    : std::string(to_string(mask)) + " mask";
    // the scale as the trace used it: Gemma's query_pre_attn_scalar, DeepSeek-V3's × mscale² are not 1/√d_k
    const std::string scale = has_custom_scale(t) ? "scale " + format_value(t.scale, 6) + " (not 1/√" + std::to_string(t.d_k) + ")"
                                                  : "scale 1/√" + std::to_string(t.d_k);
    out << prefix << counted(t.n_queries, "token", "tokens") << ", d_k = " << t.d_k << (t.d_v != t.d_k ? ", d_v = " + std::to_string(t.d_v) : "")
        << ", " << scale << ", " << mask_text << "\n";
    if (t.settings.differential) {  // DiffLlama: this head's pair, λ, and what W_O reads
        const DifferentialTrace& d = t.differential;
        const int p = h % std::max(1, d.pairs);
        out << prefix << "differential attention: pair " << p + 1 << " is heads " << p + 1 << " and " << p + d.pairs + 1 << " (this head's map is its "
            << (h < d.pairs ? "first" : "second, \xC3\x97 \xCE\xBB taken from the first") << "); \xCE\xBB = " << format_value(d.lambda_1, 6) << " \xE2\x88\x92 "
            << format_value(d.lambda_2, 6) << " + " << format_value(d.lambda_init, 6) << " = " << format_value(d.lambda, 6)
            << "; its V is the pair's two values side by side, d_v = " << t.d_v << "\n";
    }
    out << "\n";
    out << format_head(t, h, prefix);
    if (t.has_block && t.settings.block.moe.routed()) {
        // A mixture of experts: each token's router probabilities, then the weights it kept.
        const MixtureOfExperts& m = t.settings.block.moe;
        const std::string layer_prefix = "layer " + std::to_string(layer + 1) + ": ";
        const std::vector<std::string> experts = numbered_columns(m.experts, "e");
        const std::string bias = m.router_bias.size() != 0 ? " + b_router" : "";
        const std::string top = layer_prefix + "routing: each token's top " + std::to_string(m.top_k) + " of " + std::to_string(m.experts);
        if (m.router_kind == RouterKind::SigmoidGrouped)  // DeepSeek-V3: σ scores, the choice in the best groups, scaled weights
            out << format_matrix(layer_prefix + "router scores, σ(x·W_router)", t.block.router_probabilities, t.query_tokens, experts)
                << "\n"
                << format_matrix(layer_prefix + "router choice, σ + b_choice in the " + std::to_string(m.top_groups) + " best of " +
                                     std::to_string(m.groups) + " groups",
                                 t.block.router_choice, t.query_tokens, experts)
                << "\n"
                << format_matrix(top + " choices, their σ" + (m.normalize_top_k ? " renormalised" : "") + " × " +
                                     format_value(m.routed_scale, 4),
                                 t.block.routing, t.query_tokens, experts);
        else if (m.router_kind == RouterKind::TopKThenSigmoid)  // Llama 4: the logits choose, each kept one's σ its weight
            out << format_matrix(layer_prefix + "router logits, x\xC2\xB7W_router" + bias, t.block.router_logits, t.query_tokens, experts) << "\n"
                << format_matrix(top + " logits, each's own \xCF\x83" + (m.weight_input ? std::string(", scaling what its expert reads") : std::string()),
                                 t.block.routing, t.query_tokens, experts);
        else if (m.router_kind == RouterKind::TopKThenSoftmax)  // gpt-oss: no softmax over all E; the logits choose
            out << format_matrix(layer_prefix + "router logits, x\xC2\xB7W_router" + bias, t.block.router_logits, t.query_tokens, experts) << "\n"
                << format_matrix(top + " logits, softmax over those " + std::to_string(m.top_k), t.block.routing, t.query_tokens, experts);
        else
            out << format_matrix(layer_prefix + "router probabilities, softmax(x\xC2\xB7W_router" + bias + ")", t.block.router_probabilities,
                                 t.query_tokens, experts)
                << "\n"
                << format_matrix(top + " experts" + (m.normalize_top_k ? ", renormalised to sum 1" : ""), t.block.routing, t.query_tokens, experts);
        if (t.block.shared_gate_values.size() != 0)  // Qwen2-MoE: how much of the shared expert each token takes
            out << "\n"
                << format_matrix(layer_prefix + "the shared expert's gate, \xCF\x83(x\xC2\xB7g), on every token (width " + std::to_string(m.shared_d_ff) + ")",
                                 t.block.shared_gate_values, t.query_tokens, {"gate"});
        out << "\n";
    }
    for (const auto& w : t.warnings) out << "warning: " << w << "\n";
    return out.str();
}

std::string format_top(const json& top) {
    std::ostringstream out;
    for (size_t i = 0; i < top["ids"].size(); ++i) {
        char p[32];
        std::snprintf(p, sizeof p, "%.4f", top["probabilities"][i].get<double>());
        out << "  " << i + 1 << ". " << top["tokens"][i].get<std::string>() << " (id " << top["ids"][i].get<int>() << ")  " << p
            << "\n";
    }
    return out.str();
}

}  // namespace

void add_model_options(CLI::App& app, ModelOptions& m) {
    app.add_option("--model", m.path,
                   "a checkpoint folder (" + hf::family_names() + ": config.json, "
                   "*.safetensors, the tokenizer's files), a model of the Hugging Face cache by name (org/name), or a model "
                   "file trained in the app; with --text and --export-json or --print, else opened in the window");
    app.add_option("--layer", m.layer, "with --model: the layer to print (--print) or open in the pipeline, 1 = the first");
    app.add_option("--head", m.head, "with --model: the head to print (--print) or show in the pipeline, 1 = the first");
    app.add_flag("--head-roles", m.head_roles,
                 "with --model, instead of --text: every head's previous-token, first-token, self, duplicate-token and "
                 "induction scores on a probe (the BOS, a block of random tokens, the block again); with --print or --export-json");
    app.add_option("--probe-length", m.probe_length, "with --head-roles: the probe's block of L distinct tokens (at least 4; default 20, or fewer where the model needs)");
    app.add_option("--probe-seed", m.probe_seed, "with --head-roles: the seed the probe's tokens are drawn with (default 1)");
    app.add_flag("--logit-lens", m.logit_lens,
                 "with --model and --text: after each layer, the final norm and the unembedding read the stream at every "
                 "position: each one's top 5");
    app.add_flag("--ablation-sweep", m.ablation_sweep,
                 "with --model and --text: each head ablated alone, the change in the log-probability of the predicted "
                 "token (or --sweep-token) at the last position");
    app.add_option("--sweep-token", m.sweep_token, "with --ablation-sweep: the id of the token whose log-probability is measured");
    app.add_option("--ablate", m.ablate,
                   "with --model (a checkpoint folder) and --text: L:H ablates head H of layer L (from 1; repeat for more): its rows "
                   "of W_O zeroed, the layers after it, the prediction and what --generate writes follow (differential attention: "
                   "the rows of its pair, head H and head H ± heads/2, which share one output)");
    app.add_option("--ablate-expert", m.ablate_expert,
                   "with --model (a checkpoint folder) and --text: L:E ablates expert E of layer L's mixture of experts (from 1; "
                   "repeat for more): the router still keeps it, its output is dropped");
    app.add_option("--generate", m.generate,
                   "with --model and --text: write N tokens after the text, one at a time against the layers' KV caches; prints the "
                   "continuation (text, then ids); --export-json adds \"generated_ids\", \"generated_text\" and each step's top 5 and choice");
    app.add_option("--temperature", m.temperature, "with --generate: divide the logits by T before the softmax (default 0: greedy, the most likely token)");
    app.add_option("--top-k", m.top_k, "with --generate: draw only among the K most likely tokens");
    app.add_option("--top-p", m.top_p, "with --generate: draw only among the fewest most likely tokens whose probability reaches P, in (0, 1]");
}

bool check_model_options(const CLI::App& app, const Options& o, std::ostream& err) {
    const ModelOptions& m = o.model;
    if (!m.ablate.empty() || !m.ablate_expert.empty()) {
        const char* flag = m.ablate.empty() ? "--ablate-expert" : "--ablate";
        if (m.path.empty()) {
            err << flag << " ablates in a model: give --model too\n";
            return false;
        }
        if (m.head_roles || !o.text) {
            err << flag << " changes the pass of --text: give --text \"…\"" << (m.head_roles ? ", not --head-roles" : "") << "\n";
            return false;
        }
        if (!ablation_of(m, err)) return false;
    }
    constexpr const char* kModelAnalyses[] = {"--head-roles", "--probe-length", "--probe-seed", "--logit-lens", "--ablation-sweep", "--sweep-token"};
    constexpr const char* kWriting[] = {"--generate", "--temperature", "--top-k", "--top-p"};
    if (m.path.empty()) {
        for (const char* flag : kWriting)
            if (app.count(flag) > 0) {
                err << flag << " makes a model write: give --model too\n";
                return false;
            }
        if (m.layer || m.head) {
            err << "--layer and --head choose a head of a model: give --model too\n";
            return false;
        }
        for (const char* flag : kModelAnalyses)
            if (app.count(flag) > 0) {
                err << flag << " reads a model: give --model too\n";
                return false;
            }
        return true;
    }
    if (!m.head_roles && (app.count("--probe-length") > 0 || app.count("--probe-seed") > 0)) {
        err << (app.count("--probe-length") > 0 ? "--probe-length" : "--probe-seed") << " shapes the probe of --head-roles: give --head-roles too\n";
        return false;
    }
    if (!m.ablation_sweep && m.sweep_token) {
        err << "--sweep-token chooses the token --ablation-sweep measures: give --ablation-sweep too\n";
        return false;
    }
    if (m.head_roles && (o.text || m.logit_lens || m.ablation_sweep)) {
        err << "--head-roles runs its own probe of random tokens: " << (o.text ? "--text" : m.logit_lens ? "--logit-lens" : "--ablation-sweep")
            << " reads a sentence; run it on its own\n";
        return false;
    }
    if (!m.generate)
        for (const char* flag : {"--temperature", "--top-k", "--top-p"})
            if (app.count(flag) > 0) {
                err << flag << " shapes how --generate samples: give --generate N too\n";
                return false;
            }
    if (m.generate) {
        if (m.head_roles) {
            err << "--generate continues --text; --head-roles runs its own probe: run them apart\n";
            return false;
        }
        if (*m.generate < 1) {
            err << "--generate " << *m.generate << ": the number of tokens to write must be 1 or more\n";
            return false;
        }
        if (m.temperature && !(*m.temperature >= 0.0f && std::isfinite(*m.temperature))) {
            err << "--temperature " << number(*m.temperature) << ": it must be 0 (greedy) or more, and finite\n";
            return false;
        }
        if (m.top_k && *m.top_k < 1) {
            err << "--top-k " << *m.top_k << ": it must be 1 or more\n";
            return false;
        }
        if (m.top_p && !(*m.top_p > 0.0f && *m.top_p <= 1.0f)) {
            err << "--top-p " << number(*m.top_p) << ": it must be in (0, 1]\n";
            return false;
        }
        if ((m.top_k || m.top_p) && m.temperature.value_or(0.0f) == 0.0f) {
            err << (m.top_k ? "--top-k" : "--top-p") << " cuts what a draw chooses among; greedy (temperature 0, the default) draws nothing: give --temperature T > 0\n";
            return false;
        }
        if (!o.text) {
            err << "--generate continues a text: give --text \"…\"\n";
            return false;
        }
    }
    for (const char* flag : kIgnoredWithModel)
        if (app.count(flag) > 0 && !(m.generate && std::string(flag) == "--seed")) {
            err << flag << " does not apply with --model: the model's own layers are computed\n";
            return false;
        }
    const bool headless = !o.export_json.empty() || o.print || m.generate;
    if (headless) {
        for (const char* flag : kHeadlessOnly)
            if (app.count(flag) > 0) {
                err << flag << " is the window's: --model with --export-json or --print runs without one\n";
                return false;
            }
        if (!o.text && !m.head_roles) {
            err << "--model needs --text \"…\": the sentence to run\n";
            return false;
        }
    } else {
        for (const char* flag : kModelAnalyses)
            if (app.count(flag) > 0) {
                err << flag << " runs without the window: give --print or --export-json\n";
                return false;
            }
        std::error_code ec;
        if (std::filesystem::is_regular_file(m.path, ec)) {
            err << m.path << ": the window opens checkpoint folders; a model file opens in View → Train, or give "
                   "--export-json FILE or --print\n";
            return false;
        }
    }
    if (m.layer.has_value() != m.head.has_value()) {
        err << (m.layer ? "--layer needs --head" : "--head needs --layer") << ": --layer L --head H --print prints one head\n";
        return false;
    }
    if (m.layer && !o.print && headless) {
        err << "--layer and --head choose what --print prints (or the layer the window opens): give --print\n";
        return false;
    }
    if (m.layer && (*m.layer < 1 || *m.head < 1)) {
        err << "--layer and --head count from 1: found --layer " << *m.layer << " --head " << *m.head << "\n";
        return false;
    }
    return true;
}

int run_model(const Options& o, std::ostream& out, std::ostream& err) {
    // A path as it is; else a model's name ("openai-community/gpt2") found in the Hugging Face cache.
    const hf::ModelLocation where = hf::locate_model(o.model.path);
    if (!where.why_not.empty()) {
        err << o.model.path << ": " << where.why_not << " (--model takes a checkpoint folder of " << hf::family_names()
            << ", a model file, or the name of a model in the Hugging Face cache)\n";
        return 2;
    }
    const std::string& path = where.folder;
    ModelRun run;
    int code = 0;
    std::string why;
    switch (model_path_kind(path, why)) {
        case ModelPath::Folder: code = run_checkpoint(path, o, run, err); break;
        case ModelPath::File: code = run_model_file(path, o, run, err); break;
        case ModelPath::Neither:
            err << path << ": " << why << " (--model takes a checkpoint folder of " << hf::family_names() << ", or a model file)\n";
            return 2;
    }
    if (code != 0) return code;
    const int layers = static_cast<int>(run.layers.size());
    if (o.model.layer) {
        const int l = *o.model.layer - 1, h = *o.model.head - 1;
        if (l >= layers || h >= run.layers[0].heads) {
            err << path << ": --layer " << l + 1 << " --head " << h + 1 << " does not exist: the model has "
                << counted(layers, "layer", "layers") << " of " << counted(run.layers[0].heads, "head", "heads") << "\n";
            return 2;
        }
    }
    if (o.print) {
        if (o.model.layer) {
            out << format_layer_head(run.layers[static_cast<size_t>(*o.model.layer - 1)], *o.model.layer - 1, *o.model.head - 1);
        } else {
            out << counted(static_cast<long long>(run.tokens.size()), "token", "tokens") << ":";
            for (size_t i = 0; i < run.tokens.size(); ++i) out << "  " << run.tokens[i] << " (" << run.token_ids[i] << ")";
            out << "\n" << counted(layers, "layer", "layers") << " of " << counted(run.layers[0].heads, "head", "heads")
                << (run.held.empty() ? "" : "; " + run.held) << "\n";
            if (!run.ignored.empty()) out << run.ignored << "\n";
        }
        if (!run.ablated.is_null()) {  // "ablated: head 1 of layer 2; expert 3 of layer 1 (its output dropped, the routing kept)"
            std::string said;
            for (const json& h : run.ablated["heads"])
                said += (said.empty() ? "" : "; ") + std::string("head ") + std::to_string(h[1].get<int>()) + " of layer " + std::to_string(h[0].get<int>());
            for (const json& e : run.ablated["experts"])
                said += (said.empty() ? "" : "; ") + std::string("expert ") + std::to_string(e[1].get<int>()) + " of layer " + std::to_string(e[0].get<int>());
            out << "ablated: " << said << (run.ablated["experts"].empty() ? "" : " (an expert's output dropped, the routing kept)") << "\n";
        }
        if (!run.next_token_top5.is_null()) out << "next token, top 5:\n" << format_top(run.next_token_top5);
        for (const json& m : run.masked_predictions)
            out << "[MASK] at token " << m["position"].get<int>() + 1 << ", top 5:\n" << format_top(m);
        out << run.analyses_printed;
    }
    if (run.continuation) out << run.continuation->printed;
    if (!o.export_json.empty()) {
        json j;
        j["format"] = "attnlab-model-trace";
        j["version"] = 1;
        j["model"] = path;
        j["kind"] = !run.kind.empty() ? run.kind : "attnlab-model";
        if (o.text) j["text"] = *o.text;
        j["token_ids"] = run.token_ids;
        j["tokens"] = run.tokens;
        json traces = json::array();
        for (int l = 0; l < layers; ++l) traces.push_back(layer_json(run.layers[static_cast<size_t>(l)], run, l));
        j["layers"] = std::move(traces);
        if (!run.next_token_top5.is_null()) j["next_token_top5"] = run.next_token_top5;
        if (!run.masked_predictions.is_null()) j["masked_predictions"] = run.masked_predictions;
        if (!run.predictions.is_null()) j["predictions"] = run.predictions;
        if (!run.head_roles.is_null()) j["head_roles"] = run.head_roles;
        if (!run.logit_lens.is_null()) j["logit_lens"] = run.logit_lens;
        if (!run.ablation_sweep.is_null()) j["ablation_sweep"] = run.ablation_sweep;
        if (!run.ablated.is_null()) j["ablated"] = run.ablated;
        if (run.continuation) {
            const generate::SamplerSettings sampler = sampler_settings(o);
            j["generated_ids"] = run.continuation->ids;
            j["generated_text"] = run.continuation->text;
            j["generation"] = {{"tokens", run.continuation->ids.size()},
                               {"temperature", sampler.temperature},
                               {"top_k", sampler.top_k},
                               {"top_p", sampler.top_p},
                               {"seed", sampler.seed},
                               {"cache", "incremental: one new row per layer against each layer's K and V kept from the earlier tokens"},
                               {"steps", run.continuation->steps}};
        }
        std::string error;
        if (!write_file_atomic(o.export_json, dump_json(j, 1) + "\n", &error)) {
            err << error << "\n";
            return 4;
        }
        // What the file holds beyond the tokens and the traces.
        const std::string holds = !run.head_roles.is_null()          ? " of the probe and every head's role scores"
                                  : !run.masked_predictions.is_null() ? " and the top 5 of each [MASK]"
                                                                      : " and the top 5 next tokens";
        err << "wrote " << o.export_json << ": " << run.tokens.size() << (run.tokens.size() == 1 ? " token, " : " tokens, ")
            << counted(layers, "layer's trace", "layers' traces") << (run.predictions.is_null() ? "" : ", the predictions per row") << holds
            << (run.logit_lens.is_null() ? "" : ", the logit lens") << (run.ablation_sweep.is_null() ? "" : ", the ablation sweep")
            << (run.continuation ? ", the " + counted(static_cast<long long>(run.continuation->ids.size()), "token", "tokens") + " written and each step's choice" : "")
            << "\n";
    }
    for (int l = 0; l < layers; ++l) {
        const NonFiniteReport non_finite = non_finite_report(run.layers[static_cast<size_t>(l)]);
        if (!non_finite.matrices.empty()) {
            err << path << ": layer " << l + 1 << ": NaN or \xC2\xB1\xE2\x88\x9E in "
                << counted(static_cast<long long>(non_finite.matrices.size()), "matrix", "matrices") << " ("
                << display_name(non_finite.matrices.front()) << (non_finite.matrices.size() > 1 ? ", …" : "") << "), " << non_finite.origin << "\n";
            return 5;
        }
    }
    // After the layers: LN_f, the logits and their softmax (a NaN there makes every probability NaN).
    if (!run.non_finite.empty()) {
        err << path << ": NaN or \xC2\xB1\xE2\x88\x9E reached the prediction, first in " << run.non_finite << "\n";
        return 5;
    }
    return 0;
}

}  // namespace attn::cli
