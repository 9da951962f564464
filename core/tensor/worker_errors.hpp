#pragma once
// An exception that leaves a thread of an OpenMP parallel region ends the program
// (std::terminate: no message, exit 134), and a std::bad_alloc in one head's products is the
// ordinary way a pass runs out of memory. So every region's body runs inside
// WorkerErrors::run, which keeps the first exception a thread threw; the thread that started
// the region rethrows it once the region is over, where the caller can say what happened.
//
//   WorkerErrors errors;
//   #pragma omp parallel for
//   for (int h = 0; h < heads; ++h) errors.run([&] { run_head(h); });
//   errors.rethrow();
#include <exception>
#include <mutex>

namespace attn {

class WorkerErrors {
public:
    template <typename Body>
    void run(const Body& body) noexcept {
        try {
            body();
        } catch (...) {
            const std::lock_guard<std::mutex> lock(mutex_);
            if (!first_) first_ = std::current_exception();
        }
    }
    void rethrow() const {
        if (first_) std::rethrow_exception(first_);
    }

private:
    std::mutex mutex_;
    std::exception_ptr first_;
};

}  // namespace attn
