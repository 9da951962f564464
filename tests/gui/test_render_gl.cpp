// The app rendered headless (tests/xvfb.sh, Mesa llvmpipe): every preset without a GL error,
// and pixel checks against the layout sidecar that screenshot mode writes.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli.hpp"
#include "attention/engine.hpp"
#include "gpu/context.hpp"
#include "gui.hpp"
#include "teaching/presets.hpp"
#include "attention/registry.hpp"
#include "render_fixtures_gl.hpp"
#include "ui/heatmap.hpp"

using namespace attn;
using namespace attn::testing;

namespace {

nlohmann::json heatmap(const std::string& png, const std::string& name) {
    const nlohmann::json layout = read_layout(png);
    for (const auto& h : layout.at("heatmaps"))
        if (h.at("name") == name) return h;
    FAIL("no heatmap named " << name << " in the layout");
    return {};
}

// Pixel rectangle of cell (row, col): [x0, x1) × [y0, y1).
struct CellBox { int x0, y0, x1, y1; };
CellBox cell_box(const nlohmann::json& h, int row, int col) {
    const double x = h.at("x").get<double>() + (col - h.at("first_col").get<int>()) * h.at("cell_w").get<double>();
    const double y = h.at("y").get<double>() + (row - h.at("first_row").get<int>()) * h.at("cell_h").get<double>();
    return {static_cast<int>(std::ceil(x)), static_cast<int>(std::ceil(y)),
            static_cast<int>(std::floor(x + h.at("cell_w").get<double>())),
            static_cast<int>(std::floor(y + h.at("cell_h").get<double>()))};
}

bool close_to(Image::Pixel p, int r, int g, int b, int tolerance) {
    return std::abs(p.r - r) <= tolerance && std::abs(p.g - g) <= tolerance && std::abs(p.b - b) <= tolerance;
}

int render(const Scenario& scenario, const std::string& png, int width = 1600, int height = 1000) {
    cli::Options options;
    options.screenshot = png;
    options.width = width;
    options.height = height;
    return gui::run(options, scenario);
}

}  // namespace

TEST_CASE("every preset renders to a PNG without a GL error") {
#ifdef ATTNLAB_SANITIZED_BUILD
    // Under the sanitizers only the presets that draw a kind of card no earlier one drew: every card
    // the window draws still runs instrumented; the plain build renders every preset.
    std::set<std::string> drawn;
#endif
    for (const Preset& preset : presets()) {
#ifdef ATTNLAB_SANITIZED_BUILD
        bool new_card = false;
        for (const std::string& name : matrix_names(run(preset.scenario))) {
            const auto ref = parse_matrix_name(name);
            if (ref && drawn.insert(ref->entry->key).second) new_card = true;
        }
        if (!new_card) continue;
#endif
        INFO("preset " << preset.name);
        const std::string png = output_path("preset-" + preset.name);
        REQUIRE(render(preset.scenario, png) == 0);  // non-zero on any glGetError in any frame
        const Image image = load_png(png);
        CHECK(image.width == 1600);
        CHECK(image.height == 1000);
        std::ifstream layout(png + ".layout.json");
        CHECK(layout.good());
    }
}

TEST_CASE("the largest weight is drawn in viridis' top colour and a causal-masked cell is hatched grey") {
    Scenario scenario = find_preset("dot-product-3-tokens")->scenario;
    scenario.mask = MaskKind::Causal;
    const Trace trace = run(scenario);
    REQUIRE(trace.ok);
    const Matrix& weights = trace.head[0].weights;
    Eigen::Index max_row = 0, max_col = 0;
    weights.maxCoeff(&max_row, &max_col);
    REQUIRE(weights(max_row, max_col) == Approx(1.0f));  // causal row 0 sees only itself

    const std::string png = output_path("weights-causal");
    REQUIRE(render(scenario, png) == 0);
    const Image image = load_png(png);
    const nlohmann::json h = heatmap(png, "head0.weights");
    REQUIRE(h.at("cell_w").get<double>() >= 16.0);  // the 3-token example is drawn large

    // The corner of the cell, away from the number written in its middle.
    const CellBox top = cell_box(h, static_cast<int>(max_row), static_cast<int>(max_col));
    const Image::Pixel corner = image.at(top.x0 + 3, top.y0 + 3);
    INFO("largest weight pixel " << corner.r << "," << corner.g << "," << corner.b);
    CHECK(close_to(corner, 253, 231, 37, 3));  // #FDE725, viridis(1)

    // A hidden key (row 0, col 2: the future): grey hatching, no colour of the map.
    const CellBox masked = cell_box(h, 0, 2);
    REQUIRE_FALSE(trace.visible(0, 2));
    int darker = 0, lighter = 0;
    for (int y = masked.y0 + 2; y < masked.y0 + 10; ++y)
        for (int x = masked.x0 + 2; x < masked.x0 + 10; ++x) {
            const Image::Pixel p = image.at(x, y);
            INFO("masked pixel " << p.r << "," << p.g << "," << p.b);
            CHECK(std::abs(p.r - p.g) <= 4);  // grey: no hue
            CHECK(std::abs(p.g - p.b) <= 4);
            CHECK(p.r >= 60);                 // not viridis' dark purple end, not black
            (p.r < 128 ? darker : lighter) += 1;
        }
    CHECK(darker > 0);   // hatch lines
    CHECK(lighter > 0);  // between them
}

TEST_CASE("a big heatmap is drawn as a texture in the colour of its values") {
    Scenario scenario = find_preset("long-64-tokens")->scenario;
    const Trace trace = run(scenario);
    REQUIRE(trace.ok);
    const std::string png = output_path("long-64-tokens-texture");
    REQUIRE(render(scenario, png) == 0);
    const Image image = load_png(png);
    const nlohmann::json h = heatmap(png, "head0.weights");
    CHECK(h.at("textured").get<bool>());
    const Matrix& weights = trace.head[0].weights;
    Eigen::Index max_row = 0, max_col = 0;
    const float largest = weights.maxCoeff(&max_row, &max_col);
    const CellBox box = cell_box(h, static_cast<int>(max_row), static_cast<int>(max_col));
    const Image::Pixel p = image.at((box.x0 + box.x1) / 2, (box.y0 + box.y1) / 2);
    // viridis(largest) lies between two stops of the table; it is far from the dark end.
    INFO("weight " << largest << " pixel " << p.r << "," << p.g << "," << p.b);
    CHECK_FALSE(close_to(p, 68, 1, 84, 20));
    CHECK(p.g > 30);
}

TEST_CASE("a NaN typed into X marks every matrix it reaches with the NaN/inf badge") {
    Scenario s;
    s.target.tokens = {"the", "cat", "sat"};
    s.d_model = 4;
    s.heads = 1;
    s.seed = 3;
    s.target.embeddings = run(s).x;
    s.target.embeddings(1, 2) = std::numeric_limits<float>::quiet_NaN();
    const std::string png = output_path("non-finite-badges");
    REQUIRE(render(s, png) == 0);
    const Image image = load_png(png);
    const nlohmann::json layout = read_layout(png);
    int badges = 0;
    for (const auto& h : layout.at("heatmaps")) {
        const std::string name = h.at("name");
        INFO(name);
        const bool reached = name != "w_q" && name != "w_k" && name != "w_v" && name != "w_o" && name != "pe";
        REQUIRE(h.at("non_finite_badge").is_null() != reached);
        if (!reached) continue;
        // The badge's red box, a few pixels inside its corner.
        const int x = static_cast<int>(h.at("non_finite_badge")[0].get<double>()) + 3;
        const int y = static_cast<int>(h.at("non_finite_badge")[1].get<double>()) + 2;
        CHECK(close_to(image.at(x, y), 150, 40, 30, 12));
        ++badges;
    }
    CHECK(badges >= 8);  // X, X+PE, Q, K, V, scores, scaled, weights, output…
}

TEST_CASE("a forced hover renders the tooltip without a GL error") {
    Scenario scenario = find_preset("dot-product-3-tokens")->scenario;
    const std::string plain = output_path("hover-off"), hovered = output_path("hover-on");
    REQUIRE(render(scenario, plain) == 0);
    setenv("ATTNLAB_DEBUG_HOVER", "head0.weights:1:2", 1);
    const int code = render(scenario, hovered);
    unsetenv("ATTNLAB_DEBUG_HOVER");
    REQUIRE(code == 0);
    const Image a = load_png(plain), b = load_png(hovered);
    REQUIRE(a.rgba.size() == b.rgba.size());
    size_t differing = 0;
    for (size_t i = 0; i < a.rgba.size(); i += 4)
        if (a.rgba[i] != b.rgba[i] || a.rgba[i + 1] != b.rgba[i + 1] || a.rgba[i + 2] != b.rgba[i + 2]) ++differing;
    CHECK(differing > 2000);  // a tooltip box full of arithmetic appeared
}

namespace {

// DISPLAY (and WAYLAND_DISPLAY) unset for a scope: GLFW then finds no window system, as on a
// GPU server without X.
struct NoDisplay {
    std::string display, wayland;
    bool had_display = false, had_wayland = false;
    NoDisplay() {
        if (const char* d = std::getenv("DISPLAY")) display = d, had_display = true;
        if (const char* w = std::getenv("WAYLAND_DISPLAY")) wayland = w, had_wayland = true;
        unsetenv("DISPLAY");
        unsetenv("WAYLAND_DISPLAY");
    }
    ~NoDisplay() {
        if (had_display) setenv("DISPLAY", display.c_str(), 1);
        if (had_wayland) setenv("WAYLAND_DISPLAY", wayland.c_str(), 1);
    }
    NoDisplay(const NoDisplay&) = delete;
    NoDisplay& operator=(const NoDisplay&) = delete;
};

}  // namespace

TEST_CASE("with no X server the window is drawn off-screen, heatmaps pixel for pixel as in the window") {
    // The 3-token example under a causal mask (cells with numbers, hatched masked cells) and
    // the 64-token preset (heatmaps drawn as textures): once in the window under Xvfb, once
    // with no display at all (a headless EGL context, a framebuffer object). Both layouts
    // list the same heatmaps at the same places. Cells drawn as rectangles agree in every
    // pixel of the grid, and cells of a texture at the pixel holding each cell's centre (a
    // pixel centre exactly on a boundary between two texels of a 1.875-pixel cell may be
    // given either, and the window's buffer is drawn y-flipped by Mesa, the framebuffer
    // object is not), within 2 levels (an antialiased edge may round differently).
    REQUIRE(std::getenv("DISPLAY") != nullptr);  // this suite runs under tests/xvfb.sh
    Scenario causal = find_preset("dot-product-3-tokens")->scenario;
    causal.mask = MaskKind::Causal;
    const std::pair<std::string, Scenario> cases[] = {{"causal-3", causal}, {"long-64", find_preset("long-64-tokens")->scenario}};
    for (const auto& [name, scenario] : cases) {
        INFO("scenario " << name);
        const std::string window_png = output_path("window-" + name), offscreen_png = output_path("offscreen-" + name);
        REQUIRE(render(scenario, window_png) == 0);
        {
            const NoDisplay no_display;
            REQUIRE(render(scenario, offscreen_png) == 0);
        }
        const nlohmann::json window_layout = read_layout(window_png), offscreen_layout = read_layout(offscreen_png);
        REQUIRE(offscreen_layout.at("heatmaps") == window_layout.at("heatmaps"));
        REQUIRE_FALSE(window_layout.at("heatmaps").empty());
        const Image window = load_png(window_png), offscreen = load_png(offscreen_png);
        REQUIRE(offscreen.width == 1600);
        REQUIRE(offscreen.height == 1000);
        for (const auto& h : window_layout.at("heatmaps")) {
            const CellBox first = cell_box(h, h.at("first_row").get<int>(), h.at("first_col").get<int>());
            const CellBox last = cell_box(h, h.at("first_row").get<int>() + h.at("shown_rows").get<int>() - 1,
                                          h.at("first_col").get<int>() + h.at("shown_cols").get<int>() - 1);
            int compared = 0, differing = 0;
            auto compare = [&](int x, int y) {
                if (x < 0 || y < 0 || x >= window.width || y >= window.height) return;
                const Image::Pixel a = window.at(x, y), b = offscreen.at(x, y);
                ++compared;
                differing += !close_to(a, b.r, b.g, b.b, 2);
            };
            if (!h.at("textured").get<bool>()) {
                for (int y = first.y0; y < last.y1; ++y)
                    for (int x = first.x0; x < last.x1; ++x) compare(x, y);
            } else {
                const double x0 = h.at("x").get<double>(), y0 = h.at("y").get<double>();
                const double cell_w = h.at("cell_w").get<double>(), cell_h = h.at("cell_h").get<double>();
                for (int r = 0; r < h.at("shown_rows").get<int>(); ++r)
                    for (int c = 0; c < h.at("shown_cols").get<int>(); ++c)
                        compare(static_cast<int>(x0 + (c + 0.5) * cell_w), static_cast<int>(y0 + (r + 0.5) * cell_h));
            }
            INFO("heatmap " << h.at("name").get<std::string>() << ": " << differing << " of " << compared << " pixels differ");
            CHECK(compared > 0);
            CHECK(differing == 0);
        }
    }
}

TEST_CASE("textures are made a frame's share at a time: a map not yet whole is said, never an older picture, and the same texels in the end") {
    std::string why;
    const auto context = gpu::HeadlessContext::create(&why);
    REQUIRE(context != nullptr);  // llvmpipe gives one without a display
    const Matrix big = Matrix::Random(600, 1000);  // 600,000 texels each
    const Matrix huge = Matrix::Random(3000, 1000);
    ui::HeatmapSpec a, b, c, h;
    for (const auto& [spec, name] : {std::pair{&a, "a"}, std::pair{&b, "b"}, std::pair{&c, "c"}, std::pair{&h, "h"}}) {
        spec->name = name;
        spec->values = &big;
    }
    h.values = &huge;
    ui::HeatmapTextures textures;
    int k = 0;
    textures.begin_frame(1'000'000);
    CHECK(textures.get(a, 1, 1.0f, k) != nullptr);
    CHECK(textures.get(b, 1, 1.0f, k) == nullptr);  // 400 of its 600 rows this frame
    CHECK(textures.deferred());
    textures.begin_frame(1'000'000);
    CHECK_FALSE(textures.deferred());
    CHECK(textures.get(a, 1, 1.0f, k) != nullptr);  // whole already: costs nothing
    CHECK(textures.get(b, 1, 1.0f, k) != nullptr);  // its last 200 rows
    CHECK(textures.get(c, 1, 1.0f, k) != nullptr);  // 800,000 texels in this frame
    CHECK_FALSE(textures.deferred());
    // A newer trace makes them stale: none of the old pictures is handed out meanwhile.
    textures.begin_frame(1'000'000);
    CHECK(textures.get(c, 2, 1.0f, k) != nullptr);
    CHECK(textures.get(a, 2, 1.0f, k) == nullptr);
    // A map larger than a frame's share takes several frames, a band each.
    int frames = 0;
    const ui::Texture* whole = nullptr;
    for (; frames < 10 && whole == nullptr; ++frames) {
        textures.begin_frame(1'000'000);
        whole = textures.get(h, 1, 1.0f, k);
    }
    REQUIRE(whole != nullptr);
    CHECK(frames == 3);
    // Its texels are those of the same map made at once (a screenshot's: no limit).
    ui::HeatmapTextures at_once;
    at_once.begin_frame(0);
    const ui::Texture* reference = at_once.get(h, 1, 1.0f, k);
    REQUIRE(reference != nullptr);
    auto texels = [](const ui::Texture& t) {
        std::vector<std::uint32_t> out(static_cast<size_t>(t.width()) * static_cast<size_t>(t.height()));
        glBindTexture(GL_TEXTURE_2D, t.id());
        glGetTexImage(GL_TEXTURE_2D, 0, GL_RGBA, GL_UNSIGNED_BYTE, out.data());
        glBindTexture(GL_TEXTURE_2D, 0);
        return out;
    };
    CHECK(texels(*whole) == texels(*reference));
    textures.clear();
    at_once.clear();
}
