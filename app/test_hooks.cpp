#include "test_hooks.hpp"

#include <algorithm>
#include <cstdlib>
#include <string>

namespace attn {

namespace {

const char* env(const char* name) { return std::getenv(name); }

TestHooks read_hooks() {
    TestHooks h;
    if (const char* extra = env("ATTNLAB_GPU_EXTRA_DEFINES")) h.backend.extra_defines = std::string(extra) + "\n";
    if (const char* bytes = env("ATTNLAB_GPU_MAX_BUFFER_BYTES")) h.backend.max_buffer_bytes = std::strtoull(bytes, nullptr, 10);
    if (const char* steps = env("ATTNLAB_GPU_RESET_AFTER_STEPS")) h.backend.context_reset_after_steps = std::atoi(steps);
    if (const char* kernel = env("ATTNLAB_GPU_KERNEL")) {
        const std::string k = kernel;
        h.backend.kernel = k == "rows" ? gpu::Kernel::Rows : k == "tiled" ? gpu::Kernel::Tiled : gpu::Kernel::Auto;
    }
    if (const char* length = env("ATTNLAB_DEBUG_GENERATE")) h.generate_length = std::max(0, std::atoi(length));
    if (const char* zoom = env("ATTNLAB_DEBUG_ZOOM")) {
        const char* p = zoom;
        for (int i = 0; i < 4 && *p != '\0'; ++i) {
            h.zoom[i] = std::atoi(p);
            while (*p != '\0' && *p != ':') ++p;
            if (*p == ':') ++p;
        }
    }
    h.all_heads = env("ATTNLAB_DEBUG_ALL_HEADS") != nullptr;
    if (const char* hover = env("ATTNLAB_DEBUG_HOVER")) {
        const std::string s = hover;
        const auto a = s.find(':'), b = s.rfind(':');
        if (a != std::string::npos && a != b) {
            h.hover_matrix = s.substr(0, a);
            h.hover_row = std::atoi(s.c_str() + a + 1);
            h.hover_col = std::atoi(s.c_str() + b + 1);
        }
    }
    h.timing = env("ATTNLAB_DEBUG_TIMING") != nullptr;
    if (const char* windows = env("ATTNLAB_DEBUG_WINDOWS")) {
        const std::string list = windows;
        h.open_articles = list.find("articles") != std::string::npos;
        h.open_compare = list.find("compare") != std::string::npos;
        h.open_train = list.find("train") != std::string::npos;
    }
    if (const char* steps = env("ATTNLAB_DEBUG_TRAIN_STEPS")) h.train_steps = std::max(0, std::atoi(steps));
    if (const char* run = env("ATTNLAB_DEBUG_TRAIN_RUN")) {
        h.train_until_stop = std::string(run) == "stop";
        h.train_run = !h.train_until_stop;
    }
    if (const char* layer = env("ATTNLAB_DEBUG_TRAIN_OPEN")) h.train_open = std::max(0, std::atoi(layer));
    if (const char* heads = env("ATTNLAB_DEBUG_MODEL_ABLATE")) {
        const std::string list = std::string(heads) + ",";
        for (size_t start = 0, comma; (comma = list.find(',', start)) != std::string::npos; start = comma + 1) {
            const std::string item = list.substr(start, comma - start);
            const size_t dot = item.find('.');
            if (dot != std::string::npos) h.model_ablate.emplace_back(std::atoi(item.c_str()), std::atoi(item.c_str() + dot + 1));
        }
    }
    if (const char* mode = env("ATTNLAB_DEBUG_MODEL_COMPARE")) h.model_compare = mode;
    if (const char* folder = env("ATTNLAB_DEBUG_MODEL_COMPARE_B")) h.model_compare_b = folder;
    if (const char* tab = env("ATTNLAB_DEBUG_MODEL_TAB")) h.model_tab = tab;
    if (const char* write = env("ATTNLAB_DEBUG_WRITE")) h.model_write = write;
    return h;
}

}  // namespace

TestHooks test_hooks() { return read_hooks(); }

}  // namespace attn
