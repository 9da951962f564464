// Keys tapped within one slow frame reach the window: a tap's events come between two frames,
// and go through the queue and the replay as the app's loop sends them (key_queue.hpp,
// key_replay.hpp), into the window driven headless (ui_driver.hpp).
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "key_queue.hpp"
#include "key_replay.hpp"
#include "teaching/presets.hpp"
#include "ui_driver.hpp"

using namespace attn;
using attn::testing::UiDriver;

namespace {

// A key tapped with Ctrl held, all of it between two frames or with Ctrl's press a frame
// earlier (a hand is slower on Ctrl than a frame), and in the two orders the releases come in:
// the key let go first, or Ctrl (xdotool's order, and a hand that lets go of Ctrl first).
struct CtrlTap {
    bool ctrl_a_frame_earlier = false;
    bool ctrl_let_go_first = false;
};

void ctrl_tap(UiDriver& ui, KeyQueue& q, int key, CtrlTap tap) {
    q.push({GLFW_KEY_LEFT_CONTROL, 0, GLFW_PRESS, 0});
    if (tap.ctrl_a_frame_earlier) ui.replay(q);
    q.push({key, 0, GLFW_PRESS, GLFW_MOD_CONTROL});
    if (tap.ctrl_let_go_first) {
        q.push({GLFW_KEY_LEFT_CONTROL, 0, GLFW_RELEASE, GLFW_MOD_CONTROL});
        q.push({key, 0, GLFW_RELEASE, 0});
    } else {
        q.push({key, 0, GLFW_RELEASE, GLFW_MOD_CONTROL});
        q.push({GLFW_KEY_LEFT_CONTROL, 0, GLFW_RELEASE, GLFW_MOD_CONTROL});
    }
}

// A letter typed: its key's press, its character, its release.
void push_letter(KeyQueue& q, char letter) {
    const int key = GLFW_KEY_A + (letter - 'a');
    q.push({key, 0, GLFW_PRESS, 0});
    q.push_char(static_cast<unsigned int>(letter));
    q.push({key, 0, GLFW_RELEASE, 0});
}

}  // namespace

TEST_CASE("Ctrl+S tapped within one frame asks where to save", "[keys][taps]") {
    const CtrlTap tap = GENERATE(CtrlTap{false, false}, CtrlTap{false, true}, CtrlTap{true, false}, CtrlTap{true, true});
    CAPTURE(tap.ctrl_a_frame_earlier, tap.ctrl_let_go_first);
    UiDriver ui(find_preset(default_preset_name())->scenario);
    ui.frame(3);
    REQUIRE(ui.widget("prompt.ok") == nullptr);

    KeyQueue q;
    ctrl_tap(ui, q, GLFW_KEY_S, tap);
    ui.replay(q);
    ui.frame(2);
    CHECK(ui.window.files.state.prompt.action == ui::FileAction::SaveSession);
    CHECK(ui.widget("prompt.ok") != nullptr);
}

TEST_CASE("Ctrl+A tapped within one frame in the save dialog selects the path, and what is typed then replaces it", "[keys][taps]") {
    const CtrlTap tap = GENERATE(CtrlTap{false, false}, CtrlTap{false, true}, CtrlTap{true, false}, CtrlTap{true, true});
    CAPTURE(tap.ctrl_a_frame_earlier, tap.ctrl_let_go_first);
    UiDriver ui(find_preset(default_preset_name())->scenario);
    ui.frame(3);
    ui::FilePrompt& prompt = ui.window.files.state.prompt;
    prompt.path = "session.json";
    prompt.action = ui::FileAction::SaveSession;
    prompt.open_requested = true;
    ui.frame(2);
    REQUIRE(ui.widget("prompt.ok") != nullptr);  // the path field has the focus, its text selected
    KeyQueue q;
    q.push({GLFW_KEY_END, 0, GLFW_PRESS, 0});  // nothing selected now
    q.push({GLFW_KEY_END, 0, GLFW_RELEASE, 0});
    ui.replay(q);

    // Ctrl+A, then "xy", a Backspace and "z" typed, all before one frame.
    ctrl_tap(ui, q, GLFW_KEY_A, tap);
    push_letter(q, 'x');
    push_letter(q, 'y');
    q.push({GLFW_KEY_BACKSPACE, 0, GLFW_PRESS, 0});
    q.push({GLFW_KEY_BACKSPACE, 0, GLFW_RELEASE, 0});
    push_letter(q, 'z');
    ui.replay(q);
    CHECK(prompt.path == "xz");
}

TEST_CASE("the modifiers ImGui sees are those the key carried, not the modifier keys seen down", "[keys][taps]") {
    ImGui::CreateContext();
    ImGuiIO& io = ImGui::GetIO();
    io.IniFilename = nullptr;
    io.DisplaySize = ImVec2(800, 600);
    io.DeltaTime = 1.0f / 60.0f;
    unsigned char* pixels = nullptr;
    int w = 0, h = 0;
    io.Fonts->GetTexDataAsRGBA32(&pixels, &w, &h);

    // Ctrl was pressed while the window had no focus: its press never came, S carries it.
    replay_keys({{GLFW_KEY_S, 0, GLFW_PRESS, GLFW_MOD_CONTROL}}, io);
    ImGui::NewFrame();
    CHECK(io.KeyCtrl);
    CHECK_FALSE(io.KeyShift);
    CHECK(ImGui::IsKeyPressed(GLFW_KEY_S, false));
    ImGui::Render();

    // Ctrl's own release: Ctrl up, though its mods say it was down before.
    replay_keys({{GLFW_KEY_LEFT_CONTROL, 0, GLFW_RELEASE, GLFW_MOD_CONTROL}, {GLFW_KEY_S, 0, GLFW_RELEASE, 0}}, io);
    ImGui::NewFrame();
    CHECK_FALSE(io.KeyCtrl);
    CHECK_FALSE(io.KeysDown[GLFW_KEY_S]);
    ImGui::Render();

    // Right Shift let go while the left one is held: Shift stays down.
    replay_keys({{GLFW_KEY_LEFT_SHIFT, 0, GLFW_PRESS, 0}, {GLFW_KEY_RIGHT_SHIFT, 0, GLFW_PRESS, GLFW_MOD_SHIFT}}, io);
    replay_keys({{GLFW_KEY_RIGHT_SHIFT, 0, GLFW_RELEASE, GLFW_MOD_SHIFT}}, io);
    ImGui::NewFrame();
    CHECK(io.KeyShift);
    ImGui::Render();
    ImGui::DestroyContext();
}
