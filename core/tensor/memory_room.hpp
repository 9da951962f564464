#pragma once
// How much more memory this process may take: what a model's pass is compared with before it
// starts (stack.hpp), so that a long sentence through many layers is refused with a sentence
// instead of ending the program when an allocation fails.
//
//   room = min(MemAvailable (/proc/meminfo),
//              RLIMIT_AS − VmSize (/proc/self/status), where an address-space limit is set)
#include <optional>
#include <string>

namespace attn {

struct MemoryRoom {
    double bytes = 0.0;
    std::string what;  // "the memory available (MemAvailable)", "the address-space limit (ulimit -v, RLIMIT_AS) of 2.8 GiB"
};

// nullopt where the system says neither (not Linux, /proc unreadable): nothing is refused then.
std::optional<MemoryRoom> memory_room();

// Tests set the room a pass sees (nullopt: the system's again). Never called by the app.
void set_memory_room_for_testing(std::optional<MemoryRoom> room);
// Whether a test has set it: a room smaller than any machine's, so no pass is taken to fit
// by its shapes alone (stack.cpp).
bool memory_room_set_for_testing();

}  // namespace attn
