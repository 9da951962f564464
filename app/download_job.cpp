#include "download_job.hpp"

#include <utility>

namespace attn::compute {

DownloadJob::DownloadJob(hf::RepoId repo, hf::DownloadOptions options) : repo_(std::move(repo)) {
    job_.start("downloading " + repo_.id, [repo = repo_, options = std::move(options), seen = seen_](JobProgress& job) mutable {
        options.cancel = job.cancel_flag();
        options.progress = [seen](const hf::DownloadProgress& p) {
            std::lock_guard<std::mutex> lock(seen->mutex);
            seen->progress = p;
        };
        return hf::download_model(repo, options);
    });
}

hf::DownloadProgress DownloadJob::progress() const {
    std::lock_guard<std::mutex> lock(seen_->mutex);
    return seen_->progress;
}

hf::DownloadResult DownloadJob::take() {
    job_.wait();
    return std::move(*job_.take());
}

}  // namespace attn::compute
