#pragma once
// A model downloaded from the Hugging Face hub (core/checkpoint/hf_download.hpp) as a job of the compute
// layer: it runs on a thread of its own from the moment it is made; the window reads its
// progress each frame, may cancel it (the file under way stays in the cache's blobs/ and the
// next download resumes it), and takes the result once it has ended. No ImGui, no GL.
#include <atomic>
#include <future>
#include <mutex>

#include "checkpoint/hf_download.hpp"

namespace attn::compute {

class DownloadJob {
public:
    // Starts at once; `options.progress` and `options.cancel` are the job's own.
    DownloadJob(hf::RepoId repo, hf::DownloadOptions options);
    ~DownloadJob();  // cancels, and waits for the thread to stop
    DownloadJob(const DownloadJob&) = delete;
    DownloadJob& operator=(const DownloadJob&) = delete;

    const hf::RepoId& repo() const { return repo_; }
    hf::DownloadProgress progress() const;
    void cancel() { cancel_ = true; }
    bool cancelling() const { return cancel_; }
    bool done() const;
    void wait() const;   // until it has ended (screenshots, tests)
    hf::DownloadResult take();  // once done; blocks until then

private:
    hf::RepoId repo_;
    mutable std::mutex mutex_;
    hf::DownloadProgress progress_;
    std::atomic<bool> cancel_{false};
    std::future<hf::DownloadResult> result_;
};

}  // namespace attn::compute
