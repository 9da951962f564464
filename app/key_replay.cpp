#include "key_replay.hpp"

#define GLFW_INCLUDE_NONE  // key codes and modifier bits only
#include <GLFW/glfw3.h>

#include <iterator>

namespace attn {

static_assert(KeyQueue::kFirstModifier == GLFW_KEY_LEFT_SHIFT && KeyQueue::kLastModifier == GLFW_KEY_RIGHT_SUPER,
              "the queue's modifier keys are GLFW's");
static_assert(KeyQueue::kReleased == GLFW_RELEASE && KeyQueue::kPressed == GLFW_PRESS && KeyQueue::kRepeated == GLFW_REPEAT,
              "the queue's actions are GLFW's");

namespace {

bool down(const ImGuiIO& io, int key) { return key >= 0 && key < static_cast<int>(std::size(io.KeysDown)) && io.KeysDown[key]; }

}  // namespace

void replay_keys(const std::vector<KeyQueue::Event>& frame, ImGuiIO& io) {
    for (const KeyQueue::Event& e : frame) {
        if (e.is_char()) {
            io.AddInputCharacter(e.codepoint);
            continue;
        }
        if (e.key >= 0 && e.key < static_cast<int>(std::size(io.KeysDown))) {
            if (e.action == KeyQueue::kPressed) io.KeysDown[e.key] = true;
            if (e.action == KeyQueue::kReleased) io.KeysDown[e.key] = false;
        }
        if (!KeyQueue::is_modifier(e.key)) {
            io.KeyShift = (e.mods & GLFW_MOD_SHIFT) != 0;
            io.KeyCtrl = (e.mods & GLFW_MOD_CONTROL) != 0;
            io.KeyAlt = (e.mods & GLFW_MOD_ALT) != 0;
            io.KeySuper = (e.mods & GLFW_MOD_SUPER) != 0;
            continue;
        }
        // A modifier key's mods are those from before it (X11), so its own state says: down
        // while its left or its right key is.
        switch (e.key) {
            case GLFW_KEY_LEFT_SHIFT:
            case GLFW_KEY_RIGHT_SHIFT: io.KeyShift = down(io, GLFW_KEY_LEFT_SHIFT) || down(io, GLFW_KEY_RIGHT_SHIFT); break;
            case GLFW_KEY_LEFT_CONTROL:
            case GLFW_KEY_RIGHT_CONTROL: io.KeyCtrl = down(io, GLFW_KEY_LEFT_CONTROL) || down(io, GLFW_KEY_RIGHT_CONTROL); break;
            case GLFW_KEY_LEFT_ALT:
            case GLFW_KEY_RIGHT_ALT: io.KeyAlt = down(io, GLFW_KEY_LEFT_ALT) || down(io, GLFW_KEY_RIGHT_ALT); break;
            default: io.KeySuper = down(io, GLFW_KEY_LEFT_SUPER) || down(io, GLFW_KEY_RIGHT_SUPER); break;
        }
    }
}

}  // namespace attn
