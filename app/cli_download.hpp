#pragma once
// The command line's download, headless:
//   attnlab --download org/name[@revision]
// fetches what the app reads of that model (config.json, the tokenizer's files, *.safetensors)
// from the Hugging Face hub (HF_ENDPOINT, HF_TOKEN) into the Hugging Face cache
// (core/checkpoint/hf_download.hpp), printing progress on stderr; afterwards `--model org/name` opens it.
#include <iosfwd>
#include <string>

#include "options.hpp"

namespace CLI {
class App;
}

namespace attn::cli {

// Adds --download to the parser.
void add_download_option(CLI::App& app, std::string& repository);
// After parsing: --download runs alone (message on err, false with another flag).
bool check_download_option(const CLI::App& app, const Options& options, std::ostream& err);
// Downloads. The process exit code: 0, 2 (not a repository id), 7 (the download failed: the
// message says why and what to do).
int run_download(const Options& options, std::ostream& out, std::ostream& err);

}  // namespace attn::cli
