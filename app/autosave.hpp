#pragma once
// Autosave: while the app runs, the session is written a few seconds after each change to
// the user's state directory ($XDG_STATE_HOME/attnlab, else ~/.local/state/attnlab):
//
//   autosave-PID.json   the session file (session_file.hpp), replaced atomically
//   autosave-PID.lock   held with flock() by the running app; the kernel drops the lock
//                       when the process dies, whatever killed it
//
// A clean exit removes both. At start, an autosave whose lock nobody holds was left by a
// process that died (a crash, kill -9, a power cut): the app offers to restore it. Two
// windows open at once each keep their own file. Pure logic: no window, no GL.
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "job.hpp"

namespace attn::autosave {

using Clock = std::chrono::steady_clock;

// $XDG_STATE_HOME/attnlab, or $HOME/.local/state/attnlab; empty when neither is set.
std::string state_directory();

// An autosave left by a process that is no longer running.
struct Orphan {
    std::string path;        // autosave-PID.json
    std::string lock_path;   // autosave-PID.lock (may be gone)
    long long age_seconds = 0;
    std::string written;     // local time of the last write, "2026-11-22 14:03:12"
};

// The orphans in directory, newest first. An autosave whose lock another process holds
// is that process's own and is left alone.
std::vector<Orphan> find_orphans(const std::string& directory);
// Removes an orphan's files, once it has been restored (and saved again) or declined.
void discard(const Orphan& orphan);

class Autosaver {
public:
    // Makes the directory and takes this process's lock. When either fails, the autosaver
    // is disabled and error() says why; the app keeps working without it.
    explicit Autosaver(const std::string& directory, std::chrono::milliseconds interval = std::chrono::milliseconds(2000));
    ~Autosaver();  // releases the lock; the file stays (finish() removes it)
    Autosaver(const Autosaver&) = delete;
    Autosaver& operator=(const Autosaver&) = delete;

    bool enabled() const { return lock_fd_ >= 0; }
    const std::string& error() const { return error_; }
    const std::string& path() const { return path_; }

    // Called every frame with a short signature of what would be saved (it changes when
    // the session does). Starts a write when the signature differs from the one last
    // written and at least `interval` has passed since the last write started, so a run of
    // edits is written every interval and a single edit at most one interval after it.
    // snapshot() runs then, on this thread, and returns what a worker thread runs to make
    // the file's text (a long sequence takes a while to write out): it must own its data.
    // One write at a time; a change during a write is written after it. Returns a message
    // when a write has failed after one succeeded (or the first one failed), and when
    // writing works again; empty otherwise.
    using Contents = std::function<std::string()>;
    using Snapshot = std::function<Contents()>;
    std::string tick(const std::string& signature, const Snapshot& snapshot, Clock::time_point now = Clock::now());
    // Waits for the write under way, if any; returns what tick() would have said of it.
    std::string wait();
    // What the app opened with (a preset, a file from the command line) needs no autosave
    // until it changes.
    void set_baseline(const std::string& signature) { written_signature_ = signature; }
    // A clean exit: removes the autosave and the lock file.
    void finish();

    std::uint64_t writes() const { return writes_; }  // finished, successful writes
    bool failing() const { return failing_; }          // the last finished write failed

private:
    struct Written {
        bool ok = false;
        std::string error;
    };
    std::string collect(bool block);  // the write under way, once finished

    std::string path_, lock_path_, error_;
    compute::Job<Written> writing_;  // one write at a time (job.hpp)
    std::string writing_signature_;
    std::chrono::milliseconds interval_;
    int lock_fd_ = -1;
    std::optional<std::string> written_signature_;  // of the last write, or the baseline
    bool failing_ = false;
    Clock::time_point last_write_{};
    std::uint64_t writes_ = 0;
};

}  // namespace attn::autosave
