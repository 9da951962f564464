#include "cli_download.hpp"

#include <chrono>
#include <optional>
#include <ostream>
#include <string>

#include <CLI/CLI.hpp>

#include "checkpoint/hf_cache.hpp"
#include "checkpoint/hf_download.hpp"
#include "io/json_read.hpp"

namespace attn::cli {

namespace {

std::string percent(std::uint64_t done, std::uint64_t total) {
    // A file the hub gave no size for counts in no total: no percentage rather than one past 100.
    return total == 0 || done > total ? std::string() : " (" + std::to_string(done * 100 / total) + "%)";
}

// At most one line a second while a file arrives, and one when it is whole: readable in a
// terminal and in a log alike.
class ProgressPrinter {
public:
    explicit ProgressPrinter(std::ostream& err) : err_(err) {}

    void operator()(const hf::DownloadProgress& p) {
        const auto now = std::chrono::steady_clock::now();
        if (p.file != file_) {
            file_ = p.file;
            finished_ = false;
            last_ = now;
        }
        const bool finished = p.file_total > 0 && p.file_done == p.file_total;
        if (finished ? finished_ : now - last_ < std::chrono::seconds(1)) return;
        finished_ = finished;
        last_ = now;
        err_ << "  " << p.file << ": " << byte_size_text(p.file_done);
        if (p.file_total > 0) err_ << " of " << byte_size_text(p.file_total) << percent(p.file_done, p.file_total);
        err_ << "; all files " << byte_size_text(p.done) << " of " << byte_size_text(p.total) << percent(p.done, p.total) << "\n";
    }

private:
    std::ostream& err_;
    std::string file_;
    bool finished_ = false;
    std::chrono::steady_clock::time_point last_{};
};

}  // namespace

void add_download_option(CLI::App& app, std::string& repository) {
    app.add_option("--download", repository,
                   "download org/name[@revision] from the Hugging Face hub into its cache (config, tokenizer, *.safetensors; "
                   "HF_ENDPOINT, HF_TOKEN), then exit; --model org/name opens it");
}

bool check_download_option(const CLI::App& app, const Options& o, std::ostream& err) {
    if (o.download.empty()) return true;
    for (const CLI::Option* option : app.get_options())
        if (option->count() > 0 && option->get_name() != "--download") {
            err << "--download runs alone: give " << option->get_name() << " in another run\n";
            return false;
        }
    return true;
}

int run_download(const Options& o, std::ostream& out, std::ostream& err) {
    const std::optional<hf::RepoId> repo = hf::parse_repo_id(o.download);
    if (!repo) {
        err << "--download " << o.download << ": not a repository id: expected org/name or org/name@revision (letters, digits, '-', '_', '.')\n";
        return 2;
    }
    hf::DownloadOptions options;
    err << "downloading " << o.download << " from " << options.endpoint << (options.token.empty() ? "" : " (with HF_TOKEN)") << " into "
        << options.cache << "\n";
    ProgressPrinter printer(err);
    options.progress = [&printer](const hf::DownloadProgress& p) { printer(p); };
    const hf::DownloadResult result = hf::download_model(*repo, options);
    if (!result.ok) {
        err << "--download " << o.download << ": " << result.error << "\n";
        return 7;
    }
    out << o.download << ": " << result.files.size() << (result.files.size() == 1 ? " file" : " files") << " of commit " << result.commit
        << " in " << result.folder << " (" << byte_size_text(result.bytes_fetched) << " fetched now)\n";
    out << "open it with: attnlab --model " << o.download << "\n";
    return 0;
}

}  // namespace attn::cli
