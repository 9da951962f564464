#pragma once
// Training as a job of the compute layer: a worker thread owns the trainer and steps it; the
// window's views ask it for steps and read copies of its progress.
//
//   UI thread                         worker thread (TrainWorker)
//   Train / Pause / Step / Reset ──▶  commands under the mutex
//                                     Trainer::step() (outside the mutex: only the worker
//                                     touches the trainer), then every 30 ms it publishes
//   TrainProgress (copies) ◀────────  the stats, evaluations, snapshots and the model file
//
// Nobody waits for a step: a view copies the newest TrainProgress when there is one. Pausing
// is not stepping, so a paused and resumed run is the uninterrupted run, bit for bit.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "train/model_file.hpp"
#include "train/trainer.hpp"

namespace attn::compute {

// What the worker hands the UI: copies and shared immutable snapshots, never a reference
// into the trainer.
struct TrainProgress {
    std::uint64_t generation = 0;  // bumped at every publish
    bool running = false;
    int steps_done = 0;
    std::vector<train::StepStats> history;
    std::vector<train::Evaluation> evaluations;
    std::vector<std::shared_ptr<const train::Snapshot>> snapshots;  // the timeline, oldest first
    int snapshot_interval = 1;                                      // the steps between them from now on
    std::shared_ptr<const train::ModelFile> latest;                 // weights, settings, optimiser now
    std::string error;                                              // the run stopped (a loss not finite)
    std::string stopped;  // the run stopped where it was asked to: the target accuracy, or the steps done
};

// Where a run set running stops by itself: after `steps` more steps (0: never), or at the
// first evaluation whose held-out accuracy reaches `accuracy` (0: never; a run already there
// when it starts goes on to its steps).
struct StopAt {
    int steps = 0;
    double accuracy = 0.0;
};

class TrainWorker {
public:
    TrainWorker();
    ~TrainWorker();  // stops and joins the thread
    TrainWorker(const TrainWorker&) = delete;
    TrainWorker& operator=(const TrainWorker&) = delete;

    // Replaces the run with this trainer, paused; it publishes at once.
    void replace(train::Trainer trainer);
    void set_running(bool running, StopAt stop = {});
    void step_once();  // one step, when paused
    // The newest progress if it is newer than `seen` (copied into `into`), else false.
    bool poll(std::uint64_t seen, TrainProgress& into) const;
    // Blocks until the worker has nothing left to do (no step asked for, not running); for tests.
    void wait_idle() const;

private:
    void loop();
    void publish_locked();

    mutable std::mutex mutex_;
    mutable std::condition_variable wake_, idle_;
    std::optional<train::Trainer> pending_;  // handed over by replace(), taken by the worker
    std::optional<train::Trainer> trainer_;  // the worker's alone
    bool running_ = false, quit_ = false, stepping_ = false;
    int steps_requested_ = 0;
    StopAt stop_;
    int stop_step_ = -1;  // stop_ as the step it ends at, fixed when the first step of the run is taken (−1: not yet)
    std::chrono::steady_clock::time_point last_publish_;
    TrainProgress progress_;
    std::map<int, std::shared_ptr<const train::Snapshot>> snapshot_cache_;  // by step
    std::thread thread_;
};

}  // namespace attn::compute
