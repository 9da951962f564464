#pragma once
// The command line's training command, headless:
//   attnlab --train TASK [--layers L] [--heads H] [--d-model D] [--pe KIND] [--mask KIND]
//           [--steps N] [--seed S] [--lr X] [--save-model FILE] --export-json OUT.json
// trains a model on the task (core/train/trainer.hpp), prints progress on stderr and writes
// the curve, the final held-out accuracy, the probe and every layer's trace on it.
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>

#include "options.hpp"

namespace CLI {
class App;
}

namespace attn::cli {

// Adds --train and the flags only it reads to the parser.
void add_train_options(CLI::App& app, TrainOptions& options);
// After parsing: a flag that --train would ignore, or a training flag without --train, is an
// error (message on err, false).
bool check_train_options(const CLI::App& app, const Options& options, std::ostream& err);
// Trains and writes what the options ask for. The process exit code: 0, 2 (bad values),
// 4 (a file could not be written), 5 (the training diverged: a loss that is not finite).
int run_train(const Options& options, std::ostream& out, std::ostream& err);

}  // namespace attn::cli
