// The training job (train_job.hpp): the worker thread's loop and its commands.
#include "train_job.hpp"

#include <cmath>
#include <cstdio>

namespace attn::compute {

namespace {
constexpr std::chrono::milliseconds kPublishInterval(30);  // between copies handed to the UI while running
}  // namespace

TrainWorker::TrainWorker() : thread_([this] { loop(); }) {}

TrainWorker::~TrainWorker() {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        quit_ = true;
    }
    wake_.notify_all();
    thread_.join();
}

void TrainWorker::replace(train::Trainer trainer) {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        pending_.emplace(std::move(trainer));
        running_ = false;
        steps_requested_ = 0;
    }
    wake_.notify_all();
}

void TrainWorker::set_running(bool running, StopAt stop) {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        running_ = running;
        stop_ = stop;
        stop_step_ = -1;
        if (running) progress_.stopped.clear();
        progress_.running = running;
        ++progress_.generation;
    }
    wake_.notify_all();
}

void TrainWorker::step_once() {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        ++steps_requested_;
    }
    wake_.notify_all();
}

bool TrainWorker::poll(std::uint64_t seen, TrainProgress& into) const {
    std::lock_guard<std::mutex> lock(mutex_);
    if (progress_.generation == seen) return false;
    into = progress_;
    return true;
}

void TrainWorker::wait_idle() const {
    std::unique_lock<std::mutex> lock(mutex_);
    idle_.wait(lock, [&] { return !pending_ && !running_ && steps_requested_ == 0 && !stepping_; });
}

void TrainWorker::publish_locked() {
    const train::Trainer& t = *trainer_;
    progress_.running = running_;
    progress_.steps_done = t.steps_done();
    progress_.history = t.history();
    progress_.evaluations = t.evaluations();
    // Snapshots are shared, made once each; those the trainer thinned out are dropped.
    std::map<int, std::shared_ptr<const train::Snapshot>> kept;
    progress_.snapshots.clear();
    for (const train::Snapshot& s : t.snapshots()) {
        auto it = snapshot_cache_.find(s.step);
        auto shared = it != snapshot_cache_.end() ? it->second : std::make_shared<const train::Snapshot>(s);
        kept[s.step] = shared;
        progress_.snapshots.push_back(std::move(shared));
    }
    snapshot_cache_ = std::move(kept);
    progress_.snapshot_interval = t.snapshot_interval();
    progress_.latest = std::make_shared<const train::ModelFile>(train::model_file_of(t));
    ++progress_.generation;
}

void TrainWorker::loop() {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
        wake_.wait(lock, [&] { return quit_ || pending_ || (trainer_ && (running_ || steps_requested_ > 0)); });
        if (quit_) return;
        if (pending_) {
            trainer_ = std::move(pending_);
            pending_.reset();
            snapshot_cache_.clear();
            progress_.error.clear();
            publish_locked();
            idle_.notify_all();
            continue;
        }
        if (steps_requested_ > 0) --steps_requested_;
        const size_t evaluations = trainer_->evaluations().size();
        if (running_ && stop_step_ < 0) {
            // Where this run stops, from the step it starts at; a target already reached is not one.
            stop_step_ = stop_.steps > 0 ? trainer_->steps_done() + stop_.steps : 0;
            if (evaluations > 0 && trainer_->evaluations().back().accuracy >= stop_.accuracy) stop_.accuracy = 0.0;
        }
        stepping_ = true;
        lock.unlock();
        const train::StepStats stats = trainer_->step();  // the trainer is this thread's alone
        lock.lock();
        stepping_ = false;
        if (!std::isfinite(stats.loss)) {
            running_ = false;
            steps_requested_ = 0;
            progress_.error = "Training stopped at step " + std::to_string(stats.step) +
                              ": the loss is not finite (the run diverged). Try a smaller learning rate, then Reset.";
        }
        if (running_ && stop_.accuracy > 0.0 && trainer_->evaluations().size() != evaluations &&
            trainer_->evaluations().back().accuracy >= stop_.accuracy) {
            running_ = false;
            char text[160];
            std::snprintf(text, sizeof text, "Stopped at step %d: held-out accuracy %.1f%% reached the target %.1f%%. Train goes on.",
                          trainer_->steps_done(), 100.0 * trainer_->evaluations().back().accuracy, 100.0 * stop_.accuracy);
            progress_.stopped = text;
        } else if (running_ && stop_step_ > 0 && trainer_->steps_done() >= stop_step_) {
            running_ = false;
            progress_.stopped = "Stopped at step " + std::to_string(trainer_->steps_done()) + ", after the " +
                                std::to_string(stop_.steps) + " steps asked for. Train goes on.";
        }
        // Copies cost in proportion to the run's length: while running, at most one every
        // kPublishInterval (and at every evaluation); when it stops or its steps are done, at once.
        const auto now = std::chrono::steady_clock::now();
        if ((!running_ && steps_requested_ == 0) || trainer_->evaluations().size() != evaluations ||
            now - last_publish_ >= kPublishInterval) {
            publish_locked();
            last_publish_ = now;
        }
        if (!running_ && steps_requested_ == 0) idle_.notify_all();
    }
}

}  // namespace attn::compute
