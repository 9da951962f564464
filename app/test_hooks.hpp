#pragma once
// The hidden hooks the tests and the screenshots use, read from the environment once, in
// one place. None is documented for users; each makes a state or a fault reachable that a
// test could not otherwise produce on demand.
//
//   ATTNLAB_GPU_EXTRA_DEFINES=…      prepended to every shader (a broken line: a compile failure)
//   ATTNLAB_GPU_MAX_BUFFER_BYTES=N   a GPU allocation above N bytes fails as out of memory
//   ATTNLAB_GPU_RESET_AFTER_STEPS=N  the GPU context reports a reset after N submissions
//   ATTNLAB_GPU_KERNEL=rows|tiled    the attention kernel, instead of the device's choice
//   ATTNLAB_GL_PLATFORM=egl|glfw     the headless context's platform (gpu/context.hpp)
//   ATTNLAB_DEBUG_GENERATE=N         the window opens on a generated sequence of N tokens
//   ATTNLAB_DEBUG_ZOOM=r0:r1:c0:c1   and zooms into queries r0–r1, keys c0–c1 (from 1, both ends in)
//   ATTNLAB_DEBUG_ALL_HEADS=1        screenshots show every head
//   ATTNLAB_DEBUG_HOVER=name:row:col screenshots put the mouse on that cell (its tooltip shows)
//   ATTNLAB_DEBUG_TIMING=1           each frame's build time on stderr
//   ATTNLAB_DEBUG_WINDOWS=articles,compare,train   those classroom windows open at start
//   ATTNLAB_DEBUG_TRAIN_STEPS=N      the Train panel's run (its default settings) has made N steps at start
//   ATTNLAB_DEBUG_TRAIN_RUN=1        and goes on training (frame times with training under way);
//                                    =stop: a run of the panel's settings, trained until it stops by itself
//   ATTNLAB_DEBUG_TRAIN_OPEN=L       then its layer L is opened in the pipeline
//   ATTNLAB_DEBUG_MODEL_ABLATE=L.H,… with --model: those heads (from 1) ablated at start
//   ATTNLAB_DEBUG_MODEL_COMPARE=sentences|heads   with --model: the model view's Compare tab shown in that mode
//   ATTNLAB_DEBUG_MODEL_TAB=roles|lens|sweep        with --model: that tab shown, its job run once the model is open
//   ATTNLAB_DEBUG_WRITE=N[:T[:P[:K]]]  with --model: the Write tab shown and Run N pressed once the model is open, sampling
//                                    at temperature T (0 or none: greedy) with top-p P and top-k K (a screenshot shows
//                                    the tokens its frames wrote, the run still under way)
#include <string>
#include <utility>
#include <vector>

#include "gpu/backend.hpp"

namespace attn {

struct TestHooks {
    gpu::BackendOptions backend;      // the GPU faults and shader variants above
    int generate_length = 0;
    int zoom[4] = {0, 0, 0, 0};       // ATTNLAB_DEBUG_ZOOM as typed: first and last query, first and last key
    bool all_heads = false;
    std::string hover_matrix;         // empty: no forced hover
    int hover_row = -1, hover_col = -1;
    bool timing = false;
    bool open_articles = false, open_compare = false, open_train = false;
    int train_steps = 0;
    bool train_run = false;
    bool train_until_stop = false;
    int train_open = 0;               // a layer from 1, 0: none
    std::vector<std::pair<int, int>> model_ablate;  // (layer, head), from 1
    std::string model_compare;        // "sentences", "heads", "models", or empty: the grid tab
    std::string model_compare_b;      // two models: model B's folder
    std::string model_tab;            // "roles", "lens", "sweep", "routing", or empty
    std::string model_write;          // ATTNLAB_DEBUG_WRITE as given
};

// Parsed from the environment now (a handful of getenv calls: cheap enough for every run,
// and a test may change the environment between two runs in one process).
TestHooks test_hooks();

}  // namespace attn
