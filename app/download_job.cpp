#include "download_job.hpp"

#include <chrono>
#include <utility>

namespace attn::compute {

DownloadJob::DownloadJob(hf::RepoId repo, hf::DownloadOptions options) : repo_(std::move(repo)) {
    options.cancel = &cancel_;
    options.progress = [this](const hf::DownloadProgress& p) {
        std::lock_guard<std::mutex> lock(mutex_);
        progress_ = p;
    };
    result_ = std::async(std::launch::async, [this, options = std::move(options)] { return hf::download_model(repo_, options); });
}

DownloadJob::~DownloadJob() {
    cancel_ = true;
    if (result_.valid()) result_.wait();
}

hf::DownloadProgress DownloadJob::progress() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return progress_;
}

bool DownloadJob::done() const {
    return result_.valid() && result_.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
}

void DownloadJob::wait() const {
    if (result_.valid()) result_.wait();
}

hf::DownloadResult DownloadJob::take() { return result_.get(); }

}  // namespace attn::compute
