// Keys tapped faster than a frame: each change reaches a frame of its own, none is lost.
#include <catch2/catch.hpp>

#include "key_queue.hpp"

using attn::KeyQueue;

namespace {
constexpr int kCtrl = 341, kS = 83, kRight = 262;  // GLFW's codes
}

TEST_CASE("a key pressed and released within one frame is down for one frame, then up", "[keys]") {
    KeyQueue q;
    q.push({kCtrl, 0, KeyQueue::kPressed, 0});
    q.push({kS, 0, KeyQueue::kPressed, 2});
    q.push({kS, 0, KeyQueue::kReleased, 2});
    q.push({kCtrl, 0, KeyQueue::kReleased, 0});
    // Frame 1: Ctrl and S down together (Ctrl+S fires); the releases wait.
    std::vector<KeyQueue::Event> frame = q.take_frame();
    REQUIRE(frame.size() == 2);
    CHECK(frame[0].key == kCtrl);
    CHECK(frame[1].key == kS);
    CHECK(frame[1].action == KeyQueue::kPressed);
    // Frame 2: both up.
    frame = q.take_frame();
    REQUIRE(frame.size() == 2);
    CHECK(frame[0].key == kS);
    CHECK(frame[0].action == KeyQueue::kReleased);
    CHECK(frame[1].key == kCtrl);
    CHECK(q.empty());
    CHECK(q.take_frame().empty());
}

TEST_CASE("an arrow tapped three times between two frames is pressed in three frames", "[keys]") {
    KeyQueue q;
    for (int i = 0; i < 3; ++i) {
        q.push({kRight, 0, KeyQueue::kPressed, 0});
        q.push({kRight, 0, KeyQueue::kRepeated, 0});  // a repeat changes nothing: it goes with its press
        q.push({kRight, 0, KeyQueue::kReleased, 0});
    }
    int presses = 0, frames = 0;
    while (!q.empty()) {
        const std::vector<KeyQueue::Event> frame = q.take_frame();
        REQUIRE_FALSE(frame.empty());
        int changes = 0;
        for (const KeyQueue::Event& e : frame) {
            changes += e.action != KeyQueue::kRepeated;
            presses += e.action == KeyQueue::kPressed;
        }
        CHECK(changes == 1);
        ++frames;
    }
    CHECK(presses == 3);
    CHECK(frames == 6);
}

TEST_CASE("a Ctrl let go before its S is let go waits for the frame after the S is pressed", "[keys]") {
    constexpr int kCtrlMod = 2;
    KeyQueue q;  // the order xdotool sends Ctrl+S in, and a hand that lets go of Ctrl first
    q.push({kCtrl, 0, KeyQueue::kPressed, 0});
    q.push({kS, 0, KeyQueue::kPressed, kCtrlMod});
    q.push({kCtrl, 0, KeyQueue::kReleased, kCtrlMod});
    q.push({kS, 0, KeyQueue::kReleased, 0});
    std::vector<KeyQueue::Event> frame = q.take_frame();
    REQUIRE(frame.size() == 2);  // Ctrl and S down together
    CHECK(frame[1].key == kS);
    frame = q.take_frame();
    REQUIRE(frame.size() == 2);  // both up
    CHECK(frame[0].key == kCtrl);
    CHECK(frame[0].action == KeyQueue::kReleased);
    CHECK(q.empty());
}

TEST_CASE("a character goes with its key's press, and a Shift after it waits", "[keys]") {
    constexpr int kA = 65, kShift = 340;
    KeyQueue q;
    q.push({kA, 0, KeyQueue::kPressed, 0});
    q.push_char('a');
    q.push({kShift, 0, KeyQueue::kPressed, 0});
    q.push({kA, 0, KeyQueue::kReleased, 1});
    q.push({kA, 0, KeyQueue::kPressed, 1});
    q.push_char('A');
    q.push({kA, 0, KeyQueue::kReleased, 1});
    std::vector<KeyQueue::Event> frame = q.take_frame();
    REQUIRE(frame.size() == 2);  // 'a' typed without Shift
    CHECK(frame[1].codepoint == 'a');
    frame = q.take_frame();
    REQUIRE(frame.size() == 2);  // Shift down, A up
    CHECK(frame[0].key == kShift);
    frame = q.take_frame();
    REQUIRE(frame.size() == 2);  // A down again, with its 'A'
    CHECK(frame[1].codepoint == 'A');
    frame = q.take_frame();
    REQUIRE(frame.size() == 1);
    CHECK(q.empty());
}
