#include "tensor/memory_room.hpp"

#include <fstream>
#include <mutex>
#include <sstream>

#include <sys/resource.h>

#include "io/json_read.hpp"  // byte_size_text

namespace attn {

namespace {

std::mutex testing_mutex;
std::optional<MemoryRoom> testing_room;

// A "Key:   1234 kB" line of a /proc file, in bytes.
std::optional<double> proc_kib(const char* path, const std::string& key) {
    std::ifstream in(path);
    std::string line;
    while (std::getline(in, line)) {
        if (line.compare(0, key.size(), key) != 0 || line.size() <= key.size() || line[key.size()] != ':') continue;
        std::istringstream fields(line.substr(key.size() + 1));
        double kib = 0.0;
        if (fields >> kib) return kib * 1024.0;
    }
    return std::nullopt;
}

}  // namespace

std::optional<MemoryRoom> memory_room() {
    {
        const std::lock_guard<std::mutex> lock(testing_mutex);
        if (testing_room) return testing_room;
    }
    std::optional<MemoryRoom> room;
    if (const auto available = proc_kib("/proc/meminfo", "MemAvailable")) room = MemoryRoom{*available, "the memory available (MemAvailable)"};
    rlimit limit{};
    if (::getrlimit(RLIMIT_AS, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY)
        if (const auto used = proc_kib("/proc/self/status", "VmSize")) {
            const double left = static_cast<double>(limit.rlim_cur) - *used;
            if (!room || left < room->bytes)
                room = MemoryRoom{left > 0.0 ? left : 0.0, "what the address-space limit (ulimit -v, RLIMIT_AS) of " +
                                                               byte_size_text(static_cast<std::uint64_t>(limit.rlim_cur)) + " leaves"};
        }
    return room;
}

bool memory_room_set_for_testing() {
    const std::lock_guard<std::mutex> lock(testing_mutex);
    return testing_room.has_value();
}

void set_memory_room_for_testing(std::optional<MemoryRoom> room) {
    const std::lock_guard<std::mutex> lock(testing_mutex);
    testing_room = std::move(room);
}

}  // namespace attn
