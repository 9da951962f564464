// The panels driven through ImGui without a window: the mouse scrubs a cell, types a
// value, paints the custom mask and hovers tokens, and the right edit commands come out.
// ImGui runs headless here (no renderer: the draw lists are built and not drawn), so no
// GL is needed; the small matrices used never ask for a texture.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>

#include <imgui.h>

#include "edits.hpp"
#include "ui/window.hpp"
#include "ui/fonts.hpp"
#include "ui/heatmap.hpp"
#include "ui/panels.hpp"

using namespace attn;

namespace {

constexpr int kEnterKey = 257;  // any index: io.KeyMap says which one means Enter

// One ImGui context with fonts, for one test.
struct Headless {
    ImVector<ImWchar> ranges;
    ui::Window window;
    ui::HeatmapTextures textures;

    explicit Headless(Scenario scenario) {
        ImGui::CreateContext();
        ImGuiIO& io = ImGui::GetIO();
        io.IniFilename = nullptr;
        io.DisplaySize = ImVec2(1400, 900);
        io.DeltaTime = 1.0f / 60.0f;
        io.KeyMap[ImGuiKey_Enter] = kEnterKey;
        window.shared.fonts = ui::load_fonts(1.0f, ranges);
        unsigned char* pixels = nullptr;
        int w = 0, h = 0;
        io.Fonts->GetTexDataAsRGBA32(&pixels, &w, &h);  // builds the atlas; nothing uploads it
        window.shared.session.scenario = std::move(scenario);
        edits::update(window.shared.session);
        REQUIRE(window.shared.session.trace.ok);
    }
    ~Headless() { ImGui::DestroyContext(); }

    // One frame with the mouse at `mouse`, the left button as given.
    void frame(ImVec2 mouse, bool left_down) {
        edits::update(window.shared.session);
        ImGuiIO& io = ImGui::GetIO();
        io.MousePos = mouse;
        io.MouseDown[0] = left_down;
        ImGui::NewFrame();
        ImGui::SetNextWindowPos(ImVec2(0, 0));
        ImGui::SetNextWindowSize(io.DisplaySize);
        ImGui::Begin("pipeline", nullptr, ImGuiWindowFlags_NoDecoration);
        ui::draw_tokens(window.shared, window.tokens.state);
        ui::draw_pipeline(window.shared, window.pipeline.state, textures);
        ImGui::End();
        ImGui::Render();
        window.end_frame();
    }

    ImVec2 cell_centre(const std::string& matrix, int row, int col) const {
        for (const ui::HeatmapLayout& h : window.shared.layout)
            if (h.name == matrix)
                return ImVec2(h.x + (static_cast<float>(col - h.first_col) + 0.5f) * h.cell_w,
                              h.y + (static_cast<float>(row - h.first_row) + 0.5f) * h.cell_h);
        FAIL("no heatmap " << matrix);
        return ImVec2();
    }
};

Scenario sentence() {
    Scenario s;
    s.target.tokens = {"the", "cat", "sat"};
    s.d_model = 4;
    s.heads = 1;
    return s;
}

}  // namespace

TEST_CASE("hovering a cell reports it and highlights its query and key") {
    Headless ui(sentence());
    ui.frame(ImVec2(-1, -1), false);
    ui.frame(ImVec2(-1, -1), false);
    const ImVec2 at = ui.cell_centre("head0.weights", 2, 1);
    ui.frame(at, false);
    CHECK(ui.window.shared.hover.matrix == "head0.weights");
    CHECK(ui.window.shared.hover.row == 2);
    CHECK(ui.window.shared.hover.col == 1);
    CHECK(ui.window.shared.hover.query == 2);
    CHECK(ui.window.shared.hover.key == 1);
    CHECK(ui.window.shared.session.pending.empty());  // looking changes nothing
}

TEST_CASE("dragging across a cell of X scrubs its value by 0.01 per pixel") {
    Headless ui(sentence());
    ui.frame(ImVec2(-1, -1), false);
    ui.frame(ImVec2(-1, -1), false);
    const float before = ui.window.shared.session.trace.x(1, 2);
    const ImVec2 at = ui.cell_centre("x", 1, 2);
    ui.frame(at, false);
    ui.frame(at, true);  // press
    ui.frame(ImVec2(at.x + 20.0f, at.y), true);
    ui.frame(ImVec2(at.x + 50.0f, at.y), true);
    ui.frame(ImVec2(at.x + 50.0f, at.y), false);  // release
    ui.frame(ImVec2(at.x + 50.0f, at.y), false);
    const Matrix& x = ui.window.shared.session.scenario.target.embeddings;
    REQUIRE(x.rows() == 3);
    CHECK(x(1, 2) == Approx(before + 0.5f).margin(1e-4));
    CHECK(ui.window.shared.session.trace.x(1, 2) == Approx(before + 0.5f).margin(1e-4));
    CHECK(x(0, 0) == ui.window.shared.session.trace.x(0, 0));
}

TEST_CASE("double-clicking a weight opens a box where NaN can be typed") {
    Headless ui(sentence());
    ui.frame(ImVec2(-1, -1), false);
    ui.frame(ImVec2(-1, -1), false);
    const ImVec2 at = ui.cell_centre("w_v", 3, 0);
    ui.frame(at, false);
    ui.frame(at, true);
    ui.frame(at, false);
    ui.frame(at, true);  // second click: a double-click
    ui.frame(at, false);
    ui.frame(at, false);
    ImGuiIO& io = ImGui::GetIO();
    io.KeyMap[ImGuiKey_Backspace] = 259;  // the box holds the current value: erase it
    for (int i = 0; i < 12; ++i) {
        io.KeysDown[259] = true;
        ui.frame(at, false);
        io.KeysDown[259] = false;
        ui.frame(at, false);
    }
    io.AddInputCharactersUTF8("nan");
    ui.frame(at, false);
    io.KeysDown[kEnterKey] = true;
    ui.frame(at, false);
    io.KeysDown[kEnterKey] = false;
    ui.frame(at, false);
    const Matrix& w_v = ui.window.shared.session.scenario.w_v;
    REQUIRE(w_v.rows() == 4);
    CHECK(std::isnan(w_v(3, 0)));
    REQUIRE_FALSE(ui.window.shared.session.trace.non_finite_inputs.empty());
    CHECK(ui.window.shared.session.trace.non_finite_inputs[0].matrix == "W_V");
}

TEST_CASE("clicking a weight under a custom mask hides exactly that key") {
    Scenario s = sentence();
    s.mask = MaskKind::Custom;
    s.custom_mask = MaskMatrix::Constant(3, 3, true);
    Headless ui(s);
    ui.frame(ImVec2(-1, -1), false);
    ui.frame(ImVec2(-1, -1), false);
    const ImVec2 at = ui.cell_centre("head0.weights", 0, 2);
    ui.frame(at, false);
    ui.frame(at, true);
    ui.frame(at, false);
    ui.frame(at, false);
    const MaskMatrix& mask = ui.window.shared.session.scenario.custom_mask;
    for (int r = 0; r < 3; ++r)
        for (int c = 0; c < 3; ++c) CHECK(mask(r, c) == !(r == 0 && c == 2));
    CHECK(ui.window.shared.session.trace.head[0].weights(0, 2) == 0.0f);
}

TEST_CASE("a card alone: given a matrix and a context, it reports the hover and a scrub's edits without any scenario",
          "[heatmap]") {
    ImVector<ImWchar> ranges;
    ImGui::CreateContext();
    ImGuiIO& io = ImGui::GetIO();
    io.IniFilename = nullptr;
    io.DisplaySize = ImVec2(800, 600);
    io.DeltaTime = 1.0f / 60.0f;
    const ui::UiFonts fonts = ui::load_fonts(1.0f, ranges);
    unsigned char* pixels = nullptr;
    int w = 0, h = 0;
    io.Fonts->GetTexDataAsRGBA32(&pixels, &w, &h);
    {
        // A 2×3 matrix of a trace nobody made from a scenario.
        Trace trace;
        const Matrix values = (Matrix(2, 3) << 1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f).finished();
        ui::HeatmapSpec spec;
        spec.name = "card";
        spec.title = "a matrix";
        spec.values = &values;
        spec.row_axis = spec.col_axis = ui::Axis::Dim;
        spec.editable = true;
        spec.edit_target = edits::MatrixId::WV;
        const ui::CardMetrics metrics = ui::measure_card(spec, ui::measure_text(spec, fonts), 60.0f, 60.0f, fonts);
        const ui::ViewOptions view;
        const NonFiniteReport report;
        ui::HoverState hover, hover_next;
        std::map<std::string, ui::HeatmapView> views;
        ui::CellEditor editor;
        ui::MaskPainter painter;
        ui::HeatmapTextures textures;
        std::vector<ui::HeatmapLayout> layout;
        std::vector<edits::Edit> edits;
        auto frame = [&](ImVec2 mouse, bool down) {
            io.MousePos = mouse;
            io.MouseDown[0] = down;
            ImGui::NewFrame();
            ImGui::SetNextWindowPos(ImVec2(0, 0));
            ImGui::SetNextWindowSize(io.DisplaySize);
            ImGui::Begin("card window", nullptr, ImGuiWindowFlags_NoDecoration);
            layout.clear();
            ui::CardContext context{fonts, view, trace, 1, report, hover, hover_next, views, editor, painter, textures, layout, {}};
            ui::draw_card(spec, metrics, context);
            for (edits::Edit& e : context.edits) edits.push_back(std::move(e));
            ImGui::End();
            ImGui::Render();
            hover = hover_next;
            hover_next = ui::HoverState{};
        };
        frame(ImVec2(-1, -1), false);
        REQUIRE(layout.size() == 1);
        const ui::HeatmapLayout& at = layout.front();
        const ImVec2 cell(at.x + 2.5f * at.cell_w, at.y + 1.5f * at.cell_h);  // row 2, column 3
        frame(cell, false);
        CHECK(hover.matrix == "card");
        CHECK(hover.row == 1);
        CHECK(hover.col == 2);
        CHECK(edits.empty());
        // Press and drag 50 px right: a scrub of +0.5 per the card's 0.01 per pixel.
        frame(cell, true);
        frame(ImVec2(cell.x + 25.0f, cell.y), true);
        frame(ImVec2(cell.x + 50.0f, cell.y), true);
        frame(ImVec2(cell.x + 50.0f, cell.y), false);
        REQUIRE_FALSE(edits.empty());
        const auto* last = std::get_if<edits::SetCell>(&edits.back());
        REQUIRE(last != nullptr);
        CHECK(last->matrix == edits::MatrixId::WV);
        CHECK(last->row == 1);
        CHECK(last->col == 2);
        CHECK(last->value == Approx(6.5f).margin(1e-4));
    }
    ImGui::DestroyContext();
}
