// libFuzzer target: any bytes through the lesson loader; a lesson that loads has every
// step's scenario built (the toggles of the steps so far applied) and run, as the app's
// step mode does.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_common.hpp"
#include "lesson.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string text(reinterpret_cast<const char*>(data), size);
    const attn::LessonLoad load = attn::lesson_from_text(text, "fuzz-input");
    if (!load.lesson) return 0;
    const attn::Lesson& lesson = *load.lesson;
    if (lesson.steps.size() > 64) return 0;  // bounded work per input
    // Steps with "train" train when built (up to 1000 steps each): only a little of it per input.
    int training_steps = 0;
    for (const attn::LessonStep& s : lesson.steps) training_steps += s.train ? s.train->steps + 1 : 0;
    if (training_steps > 400) return 0;
    for (int step = 0; step < static_cast<int>(lesson.steps.size()); ++step) {
        attn::fuzz::exercise(attn::scenario_at_step(lesson, step));
    }
    return 0;
}
