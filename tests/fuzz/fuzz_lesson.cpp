// libFuzzer target: any bytes through the lesson loader; a lesson that loads has every
// step's scenario built (the toggles of the steps so far applied) and run, as the app's
// step mode does.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_common.hpp"
#include "teaching/lesson.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string text(reinterpret_cast<const char*>(data), size);
    const attn::LessonLoad load = attn::lesson_from_text(text, "fuzz-input");
    if (!load.lesson) return 0;
    attn::Lesson lesson = *load.lesson;
    if (lesson.steps.size() > 64) return 0;  // bounded work per input
    // Steps with "train" train when built (up to 1000 steps each). One training step of the
    // instrumented build takes about 25 ms, and the shipped lesson alone asks for 600: each
    // trains at most 4 steps here, at most 32 in all. What is fuzzed is the loader and the
    // scenario a step builds; core/train's tests cover training itself.
    int training_steps = 0;
    for (attn::LessonStep& s : lesson.steps) {
        if (!s.train) continue;
        s.train->steps = std::min(s.train->steps, 4);
        training_steps += s.train->steps + 1;
    }
    if (training_steps > 32) return 0;
    for (int step = 0; step < static_cast<int>(lesson.steps.size()); ++step) {
        attn::fuzz::exercise(attn::scenario_at_step(lesson, step));
    }
    return 0;
}
