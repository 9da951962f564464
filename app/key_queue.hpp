#pragma once
// Key and character events between frames, handed on a frame at a time. Dear ImGui 1.86 reads
// the keyboard once a frame — which keys are down, whether Ctrl is — so a key pressed and
// released before the next frame (Ctrl+S, Return or an arrow tapped while a frame takes 30 ms)
// would never be seen down, and a Ctrl let go just before its S would turn Ctrl+S into S.
// The window queues what GLFW reports, characters in order with their keys, and hands a frame
// the events up to the first that would
//   - change a key a second time (the key would be down and up within the frame), or
//   - change a modifier (Shift, Ctrl, Alt, Super) after a key was pressed or a character typed
//     in this frame (the key or character would be read with the modifiers of after it);
// the rest wait for the next frame. A character goes with the key press before it.
#include <cstddef>
#include <deque>
#include <set>
#include <vector>

namespace attn {

class KeyQueue {
public:
    // A key as GLFW says it (action 0 released, 1 pressed, 2 repeated; mods GLFW_MOD_* held),
    // or, where codepoint is not 0, a character typed.
    struct Event {
        int key = 0, scancode = 0, action = 0, mods = 0;
        unsigned int codepoint = 0;
        bool is_char() const { return codepoint != 0; }
    };
    static constexpr int kReleased = 0, kPressed = 1, kRepeated = 2;
    // GLFW_KEY_LEFT_SHIFT … GLFW_KEY_RIGHT_SUPER: the left four, then the right four.
    static constexpr int kFirstModifier = 340, kLastModifier = 347;
    static bool is_modifier(int key) { return key >= kFirstModifier && key <= kLastModifier; }

    void push(const Event& e) { events_.push_back(e); }
    void push_char(unsigned int codepoint) {
        Event e;
        e.codepoint = codepoint;
        events_.push_back(e);
    }
    bool empty() const { return events_.empty(); }
    std::size_t size() const { return events_.size(); }

    // This frame's events, oldest first.
    std::vector<Event> take_frame() {
        std::vector<Event> frame;
        std::set<int> changed;
        bool typed = false;  // a key pressed or a character typed in this frame
        while (!events_.empty()) {
            const Event& e = events_.front();
            if (e.is_char()) {
                typed = true;
            } else if (e.action != kRepeated) {
                if (changed.count(e.key) != 0) break;   // its second change: next frame
                if (typed && is_modifier(e.key)) break;  // what was typed keeps the modifiers it was typed with
                changed.insert(e.key);
                typed = typed || (e.action == kPressed && !is_modifier(e.key));
            }
            frame.push_back(e);
            events_.pop_front();
        }
        return frame;
    }

private:
    std::deque<Event> events_;
};

}  // namespace attn
