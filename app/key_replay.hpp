#pragma once
// A frame's key and character events (key_queue.hpp) handed to Dear ImGui, in their order, as
// ImGui's GLFW backend would hand them — io.KeysDown by GLFW key code, characters through
// io.AddInputCharacter — except for the modifiers. The backend sets io.KeyCtrl, KeyShift, KeyAlt
// and KeySuper from the modifier keys down after each event; here they are those GLFW carried
// with the frame's last key (the modifiers held when it was pressed or let go), and a modifier
// key's own event changes only its modifier. A Ctrl held while the window had no focus is then
// still seen with the S pressed after it.
#include <vector>

#include <imgui.h>

#include "key_queue.hpp"

namespace attn {

void replay_keys(const std::vector<KeyQueue::Event>& frame, ImGuiIO& io);

}  // namespace attn
