#pragma once
// Work off the window's thread, one job of a kind at a time. A view starts it with what the
// work needs (copied, or shared and kept alive by the view until the job ends), the job says
// how far it is and stops when cancelled, and the view takes the result once it is done. A
// newer start supersedes the job under way: it is cancelled and its result dropped, and the
// window never waits for it (it ends on its worker and is let go).
//
//   view ──start(work)──▶ running (worker thread: progress.report(done, total)) ──take()──▶ view
//                              └── cancel() or a newer start: report() says false, the work returns
//
// No ImGui, no GL: tests start jobs and wait for them.
#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace attn::compute {

// What a running job is told and tells: how far it is, and whether it should stop.
class JobProgress {
public:
    // Records `done` of `total`; false once the job is cancelled (the work should return then).
    bool report(int done, int total) {
        done_ = done;
        total_ = total;
        return !cancelled_;
    }
    bool cancelled() const { return cancelled_; }
    void cancel() { cancelled_ = true; }
    // done / total, 0 before the first report.
    float fraction() const {
        const int total = total_;
        return total > 0 ? static_cast<float>(done_) / static_cast<float>(total) : 0.0f;
    }

private:
    std::atomic<int> done_{0}, total_{0};
    std::atomic<bool> cancelled_{false};
};

template <typename Result>
class Job {
public:
    using Work = std::function<Result(JobProgress&)>;

    Job() = default;
    Job(const Job&) = delete;
    Job& operator=(const Job&) = delete;
    // Only at teardown does anything wait: the jobs under way are cancelled and end first.
    ~Job() { drain(); }

    // Starts `work` on a worker thread; a job under way is cancelled and let go.
    void start(std::string what, Work work) {
        cancel();
        progress_ = std::make_shared<JobProgress>();
        what_ = std::move(what);
        running_ = std::async(std::launch::async, [work = std::move(work), progress = progress_] { return work(*progress); });
    }
    bool running() const { return running_.valid(); }
    // What the job under way does ("Scoring 144 heads on the probe"), and how far it is.
    const std::string& what() const { return what_; }
    float fraction() const { return progress_ ? progress_->fraction() : 0.0f; }
    // Stops the job under way (its result is dropped); never waits for it.
    void cancel() {
        if (running_.valid()) {
            progress_->cancel();
            retired_.push_back(std::move(running_));
        }
        let_go();
    }
    // The result, once the job is done: taken once; none while it runs or when none ran.
    std::optional<Result> take() {
        let_go();
        if (!running_.valid() || running_.wait_for(std::chrono::seconds(0)) != std::future_status::ready) return std::nullopt;
        return running_.get();
    }
    // Blocks until the job under way is done (its result stays for take): tests, and a view
    // that must not change what the job reads while it runs.
    void wait() const {
        if (running_.valid()) running_.wait();
    }
    // Cancels the job under way and waits until every job started has ended: before what the
    // jobs read (a model) goes.
    void drain() {
        cancel();
        for (std::future<Result>& f : retired_) f.wait();
        retired_.clear();
    }

private:
    // Cancelled jobs that have ended are dropped (a future of std::async waits in its
    // destructor, so one still running is kept until it ends).
    void let_go() {
        std::vector<std::future<Result>> kept;
        for (std::future<Result>& f : retired_)
            if (f.wait_for(std::chrono::seconds(0)) != std::future_status::ready) kept.push_back(std::move(f));
        retired_ = std::move(kept);
    }

    std::future<Result> running_;
    std::shared_ptr<JobProgress> progress_;
    std::string what_;
    std::vector<std::future<Result>> retired_;
};

}  // namespace attn::compute
