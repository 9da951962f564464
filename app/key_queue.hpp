#pragma once
// Key events between frames, handed on with at most one change per key per frame. Dear ImGui
// 1.86 reads the keys' state once a frame, so a key pressed and released before the next
// frame — Ctrl+S, Return or an arrow tapped while a software renderer takes 30 ms a frame —
// would never be seen down. The window queues what GLFW reports and hands a frame the events
// up to the first that would change a key a second time; the rest wait for the next frame.
#include <cstddef>
#include <deque>
#include <set>
#include <vector>

namespace attn {

class KeyQueue {
public:
    // action as GLFW says it: 0 released, 1 pressed, 2 repeated.
    struct Event {
        int key = 0, scancode = 0, action = 0, mods = 0;
    };
    static constexpr int kReleased = 0, kPressed = 1, kRepeated = 2;

    void push(const Event& e) { events_.push_back(e); }
    bool empty() const { return events_.empty(); }
    std::size_t size() const { return events_.size(); }

    // This frame's events, oldest first.
    std::vector<Event> take_frame() {
        std::vector<Event> frame;
        std::set<int> changed;
        while (!events_.empty()) {
            const Event& e = events_.front();
            if (e.action != kRepeated && !changed.insert(e.key).second) break;  // its second change: next frame
            frame.push_back(e);
            events_.pop_front();
        }
        return frame;
    }

private:
    std::deque<Event> events_;
};

}  // namespace attn
