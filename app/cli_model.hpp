#pragma once
// The command line's model commands, headless:
//   attnlab --model DIR  --text "…" --export-json OUT.json     a checkpoint folder of any family
//   attnlab --model FILE --text "a b c" --export-json OUT.json  a model trained in the app
//   attnlab --model … --text "…" --layer L --head H --print     one head's tables (L, H from 1)
//   attnlab --model … --text "…" --print                        the tokens and the top 5
//   attnlab --model DIR [--text "…"] [--layer L --head H] [--screenshot F]   the window, its
//                                                               model view open (and that layer)
// A folder is opened by the family table (config.json, the weights, tokenizer.json or GPT-2's
// vocab.json and merges.txt) and the text tokenised by its tokenizer; a file as a model file (core/train/model_file.hpp),
// the text split on spaces into its vocabulary's names. The JSON holds "token_ids",
// "tokens", "layers" (one trace per layer, the trace format) and "next_token_top5"; a model
// file's also "predictions", the top 5 of every row.
#include <iosfwd>
#include <optional>
#include <string>

#include "options.hpp"

namespace CLI {
class App;
}

namespace attn::cli {

// Adds --model, --layer and --head to the parser.
void add_model_options(CLI::App& app, ModelOptions& options);
// After parsing: a flag --model would ignore, or --layer/--head without --model, is an error
// (message on err, false).
bool check_model_options(const CLI::App& app, const Options& options, std::ostream& err);
// Runs the model on the text and writes what the options ask for. The process exit code: 0,
// 2 (a missing or bad folder or file, an unknown token, a layer or head that does not
// exist), 3 (the text cannot run: too long for the model), 4 (the export cannot be written),
// 5 (NaN or ±∞ reached the results).
int run_model(const Options& options, std::ostream& out, std::ostream& err);

}  // namespace attn::cli
