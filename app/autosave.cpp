#include "autosave.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <system_error>

#include "attention/serialize.hpp"

namespace attn::autosave {

namespace fs = std::filesystem;

namespace {

constexpr const char* kPrefix = "autosave-";

// "autosave-PID-MS.json" → "autosave-PID-MS"; empty for any other name.
std::string autosave_stem(const std::string& filename) {
    const std::string suffix = ".json";
    if (filename.size() <= std::strlen(kPrefix) + suffix.size() || filename.rfind(kPrefix, 0) != 0 ||
        filename.compare(filename.size() - suffix.size(), suffix.size(), suffix) != 0)
        return {};
    const std::string stem = filename.substr(0, filename.size() - suffix.size());
    const std::string id = stem.substr(std::strlen(kPrefix));
    if (id.empty() || !std::all_of(id.begin(), id.end(), [](char c) { return (c >= '0' && c <= '9') || c == '-'; })) return {};
    return stem;
}

// True when some process holds the lock (the autosave is that process's own).
bool lock_held(const std::string& lock_path) {
    const int fd = ::open(lock_path.c_str(), O_RDWR | O_CLOEXEC);
    if (fd < 0) return false;  // no lock file: nobody can be holding it
    const bool held = ::flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK;
    ::close(fd);  // also releases the lock if we just took it
    return held;
}

std::string local_time(std::time_t t) {
    std::tm tm{};
    localtime_r(&t, &tm);
    char text[32];
    std::strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S", &tm);
    return text;
}

long long now_ms() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

std::string state_directory() {
    const char* state = std::getenv("XDG_STATE_HOME");
    if (state != nullptr && state[0] == '/') return (fs::path(state) / "attnlab").string();
    const char* home = std::getenv("HOME");
    if (home != nullptr && home[0] != '\0') return (fs::path(home) / ".local" / "state" / "attnlab").string();
    return {};
}

std::vector<Orphan> find_orphans(const std::string& directory) {
    std::vector<std::pair<std::time_t, Orphan>> found;
    std::error_code ec;
    if (directory.empty() || !fs::is_directory(directory, ec)) return {};
    for (fs::directory_iterator it(directory, ec), end; !ec && it != end; it.increment(ec)) {
        const std::string stem = autosave_stem(it->path().filename().string());
        if (stem.empty()) continue;
        Orphan orphan;
        orphan.path = it->path().string();
        orphan.lock_path = (fs::path(directory) / (stem + ".lock")).string();
        if (lock_held(orphan.lock_path)) continue;
        struct stat info {};
        if (::stat(orphan.path.c_str(), &info) != 0) continue;
        orphan.age_seconds = std::max<long long>(0, static_cast<long long>(std::time(nullptr) - info.st_mtime));
        orphan.written = local_time(info.st_mtime);
        found.emplace_back(info.st_mtime, std::move(orphan));
    }
    std::stable_sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    std::vector<Orphan> orphans;
    for (auto& f : found) orphans.push_back(std::move(f.second));
    return orphans;
}

void discard(const Orphan& orphan) {
    std::error_code ec;
    fs::remove(orphan.path, ec);
    fs::remove(orphan.lock_path, ec);
    // A temporary file a kill interrupted in the middle of a write.
    const fs::path dir = fs::path(orphan.path).parent_path();
    const std::string tmp_prefix = fs::path(orphan.path).filename().string() + ".tmp.";
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
        if (it->path().filename().string().rfind(tmp_prefix, 0) == 0) fs::remove(it->path(), ec);
}

Autosaver::Autosaver(const std::string& directory, std::chrono::milliseconds interval) : interval_(interval) {
    if (directory.empty()) {
        error_ = "no state directory (neither XDG_STATE_HOME nor HOME is set)";
        return;
    }
    std::error_code ec;
    fs::create_directories(directory, ec);
    if (ec) {
        error_ = "cannot make " + directory + ": " + ec.message();
        return;
    }
    // PID and start time: a later process that reuses the PID gets other files.
    const std::string stem = std::string(kPrefix) + std::to_string(::getpid()) + "-" + std::to_string(now_ms());
    path_ = (fs::path(directory) / (stem + ".json")).string();
    lock_path_ = (fs::path(directory) / (stem + ".lock")).string();
    const int fd = ::open(lock_path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) {
        error_ = "cannot create " + lock_path_ + ": " + std::strerror(errno);
        return;
    }
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
        error_ = "cannot lock " + lock_path_ + ": " + std::strerror(errno);
        ::close(fd);
        return;
    }
    lock_fd_ = fd;
}

Autosaver::~Autosaver() {
    wait();
    if (lock_fd_ >= 0) ::close(lock_fd_);
}

std::string Autosaver::collect(bool block) {
    if (block) writing_.wait();
    const std::optional<Written> taken = writing_.take();
    if (!taken) return {};
    const Written& w = *taken;
    if (w.ok) {
        written_signature_ = writing_signature_;
        ++writes_;
    } else {
        error_ = w.error;
    }
    if (w.ok == !failing_) return {};
    failing_ = !w.ok;
    return w.ok ? "Autosave works again: " + path_ : "Autosave failed: " + error_ + " (the session is still open; save it with Ctrl+S)";
}

std::string Autosaver::wait() { return collect(true); }

std::string Autosaver::tick(const std::string& signature, const Snapshot& snapshot, Clock::time_point now) {
    if (!enabled()) return {};
    std::string message = collect(false);
    if (writing_.running() || signature == written_signature_) return message;
    if (last_write_ != Clock::time_point{} && now - last_write_ < interval_) return message;
    last_write_ = now;
    writing_signature_ = signature;
    writing_.start("writing the autosave", [path = path_, contents = snapshot()](compute::JobProgress&) {
        Written w;
        w.ok = write_file_atomic(path, contents(), &w.error);
        return w;
    });
    return message;
}

void Autosaver::finish() {
    wait();
    if (!enabled()) return;
    std::error_code ec;
    fs::remove(path_, ec);
    fs::remove(lock_path_, ec);
    ::close(lock_fd_);
    lock_fd_ = -1;
}

}  // namespace attn::autosave
