#pragma once
// A model downloaded from the Hugging Face hub (core/checkpoint/hf_download.hpp) as a Job
// (job.hpp): it runs on a worker from the moment it is made; the window reads its progress each
// frame, may cancel it (the job is asked to stop and its result says so: the file under way stays
// in the cache's blobs/ and the next download resumes it), and takes the result once it has
// ended. No ImGui, no GL.
#include <memory>
#include <mutex>

#include "checkpoint/hf_download.hpp"
#include "job.hpp"

namespace attn::compute {

class DownloadJob {
public:
    // Starts at once; `options.progress` and `options.cancel` are the job's own.
    DownloadJob(hf::RepoId repo, hf::DownloadOptions options);
    ~DownloadJob() = default;  // cancels, and waits for the worker to stop
    DownloadJob(const DownloadJob&) = delete;
    DownloadJob& operator=(const DownloadJob&) = delete;

    const hf::RepoId& repo() const { return repo_; }
    hf::DownloadProgress progress() const;
    void cancel() { job_.stop(); }
    bool cancelling() const { return job_.stopping(); }
    bool done() const { return job_.done(); }
    void wait() { job_.wait(); }  // until it has ended (screenshots, tests)
    hf::DownloadResult take();  // once done; blocks until then

private:
    // What the downloading thread last said, read by the window.
    struct Seen {
        std::mutex mutex;
        hf::DownloadProgress progress;
    };
    hf::RepoId repo_;
    std::shared_ptr<Seen> seen_ = std::make_shared<Seen>();
    Job<hf::DownloadResult> job_;
};

}  // namespace attn::compute
