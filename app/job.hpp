#pragma once
// Work off the window's thread: every piece of it (a model's pass and recomputes, Compare, the
// Train panel's evaluations, downloads, opening a checkpoint, the sweeps, the autosave's
// writes, the engine's long runs) is a Job. A view starts it with what the work needs (copied,
// or shared and kept alive by the view until the job ends), the job says how far it is and
// stops when cancelled, and the view takes the result once it is done. The window never waits
// for a job: only teardown (and tests) do.
//
//   view ──start(work)──▶ running (worker thread: progress.report(done, total)) ──take()──▶ view
//                              └── cancel() or a newer start: report() says false, the work returns
//
// A newer request of the same kind supersedes the one under way in one of two ways:
//   start(work)              the one under way is cancelled and let go (its result dropped), and
//                            the new one starts at once;
//   queue(work, under_way)   one at a time: the new one waits for the one under way to end (cancelled
//                            first with UnderWay::cancel, its result dropped; or let finish with
//                            UnderWay::finish, its result taken as any other), and a newer queued
//                            request replaces the one waiting. take() starts the one waiting.
// stop() asks the job under way to stop without dropping it: what it did by then is its result
// (a download keeps the files it fetched).
//
// No ImGui, no GL: tests start jobs and wait for them.
#include <atomic>
#include <chrono>
#include <cstdint>
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
    bool report(std::int64_t done, std::int64_t total) {
        done_ = done;
        total_ = total;
        return !cancelled_;
    }
    bool cancelled() const { return cancelled_; }
    void cancel() { cancelled_ = true; }
    // The flag itself, for work that polls one (the engine's RunOptions::cancel, a download's).
    const std::atomic<bool>* cancel_flag() const { return &cancelled_; }
    // done / total, 0 before the first report.
    float fraction() const {
        const std::int64_t total = total_;
        return total > 0 ? static_cast<float>(static_cast<double>(done_) / static_cast<double>(total)) : 0.0f;
    }

private:
    std::atomic<std::int64_t> done_{0}, total_{0};
    std::atomic<bool> cancelled_{false};
};

// What becomes of the job under way when a request is queued behind it.
enum class UnderWay { cancel, finish };

template <typename Result>
class Job {
public:
    using Work = std::function<Result(JobProgress&)>;

    Job() = default;
    Job(const Job&) = delete;
    Job& operator=(const Job&) = delete;
    // Only at teardown does anything wait: the jobs under way are cancelled and end first.
    ~Job() { drain(); }

    // Starts `work` on a worker thread; a job under way is cancelled and let go, a queued one dropped.
    void start(std::string what, Work work) {
        cancel();
        launch(std::move(what), std::move(work));
    }
    // Starts `work` when no job is under way; otherwise it waits for the one under way (cancelled
    // or let finish, as `under_way` says), replacing a request waiting already.
    void queue(std::string what, Work work, UnderWay under_way) {
        waiting_.emplace(std::move(what), std::move(work));
        if (under_way == UnderWay::cancel) retire();
        start_waiting();
    }
    // A job runs, or waits to.
    bool running() const { return running_.valid() || waiting_.has_value(); }
    // A request waits for the job under way to end.
    bool queued() const { return waiting_.has_value(); }
    // What the job under way does ("Scoring 144 heads on the probe"), and how far it is.
    const std::string& what() const { return what_; }
    float fraction() const { return progress_ ? progress_->fraction() : 0.0f; }
    // The job under way is asked to stop; it stays the job whose result take() gives.
    void stop() {
        if (running_.valid()) progress_->cancel();
    }
    bool stopping() const { return running_.valid() && progress_->cancelled(); }
    // Stops the job under way (its result is dropped) and drops a request waiting; never waits.
    void cancel() {
        waiting_.reset();
        retire();
        let_go();
    }
    // True once the job under way has ended (take() then gives its result at once).
    bool done() const { return running_.valid() && running_.wait_for(std::chrono::seconds(0)) == std::future_status::ready; }
    // The result, once the job is done: taken once; none while it runs or when none ran. A
    // request waiting starts then.
    std::optional<Result> take() {
        std::optional<Result> result;
        if (done()) result.emplace(running_.get());
        start_waiting();
        return result;
    }
    // Blocks until the job under way is done, its result left for take(): a request waiting
    // behind a cancelled job is started once that one has ended, and waited for. Tests, and a
    // view that must not change what the job reads while it runs.
    void wait() { settle(std::nullopt); }
    // The same within `budget`: false when the job is still under way then.
    bool wait_for(std::chrono::duration<double, std::milli> budget) {
        return settle(std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(budget));
    }
    // Cancels the job under way and waits until every job started has ended: before what the
    // jobs read (a model) goes.
    void drain() {
        cancel();
        for (std::future<Result>& f : retired_) f.wait();
        retired_.clear();
    }

private:
    bool settle(std::optional<std::chrono::steady_clock::time_point> deadline) {
        for (;;) {
            if (running_.valid()) {
                if (!deadline) {
                    running_.wait();
                    return true;
                }
                return running_.wait_until(*deadline) == std::future_status::ready;
            }
            if (!waiting_) return true;  // nothing under way
            for (std::future<Result>& f : retired_) {
                if (!deadline) f.wait();
                else if (f.wait_until(*deadline) != std::future_status::ready) return false;
            }
            start_waiting();
        }
    }
    void launch(std::string what, Work work) {
        progress_ = std::make_shared<JobProgress>();
        what_ = std::move(what);
        running_ = std::async(std::launch::async, [work = std::move(work), progress = progress_] { return work(*progress); });
    }
    // The job under way is cancelled and set aside until it ends; its result will be dropped.
    void retire() {
        if (!running_.valid()) return;
        progress_->cancel();
        retired_.push_back(std::move(running_));
    }
    // The request waiting, once nothing runs: no job under way, and every cancelled one ended
    // (one at a time, so that a superseded run never competes with its successor for the cores).
    void start_waiting() {
        let_go();
        if (!waiting_ || running_.valid() || !retired_.empty()) return;
        auto [what, work] = std::move(*waiting_);
        waiting_.reset();
        launch(std::move(what), std::move(work));
    }
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
    std::optional<std::pair<std::string, Work>> waiting_;
    std::vector<std::future<Result>> retired_;
};

}  // namespace attn::compute
