#pragma once
// Shared by the tests that render the app in-process under tests/xvfb.sh: where screenshots go,
// reading them back, and the layout sidecar screenshot mode writes beside each PNG.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <stb_image.h>

namespace attn::testing {

// ATTNLAB_TEST_OUTPUT/NAME.png, with any earlier PNG and sidecar removed.
inline std::string output_path(const std::string& name) {
    std::filesystem::create_directories(ATTNLAB_TEST_OUTPUT);
    const std::string path = std::string(ATTNLAB_TEST_OUTPUT) + "/" + name + ".png";
    std::filesystem::remove(path);
    std::filesystem::remove(path + ".layout.json");
    return path;
}

struct Image {
    int width = 0, height = 0;
    std::vector<unsigned char> rgba;
    struct Pixel { int r, g, b; };
    Pixel at(int x, int y) const {
        const size_t i = (static_cast<size_t>(y) * static_cast<size_t>(width) + static_cast<size_t>(x)) * 4;
        return {rgba[i], rgba[i + 1], rgba[i + 2]};
    }
};

inline Image load_png(const std::string& path) {
    Image image;
    int channels = 0;
    unsigned char* data = stbi_load(path.c_str(), &image.width, &image.height, &channels, 4);
    REQUIRE(data != nullptr);
    image.rgba.assign(data, data + static_cast<size_t>(image.width) * static_cast<size_t>(image.height) * 4);
    stbi_image_free(data);
    return image;
}

// PNG.layout.json: {"width", "height", "heatmaps": [{"name", "x", "y", "cell_w", ...}]}.
inline nlohmann::json read_layout(const std::string& png) {
    std::ifstream in(png + ".layout.json");
    REQUIRE(in.good());
    return nlohmann::json::parse(in);
}

}  // namespace attn::testing
