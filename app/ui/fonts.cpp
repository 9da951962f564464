#include "ui/fonts.hpp"

#include <cstdio>
#include <fstream>
#include <string>

#include <imgui.h>
#include <imgui_freetype.h>

#include "data_dir.hpp"

namespace attn::ui {

namespace {

bool readable(const std::string& path) { return std::ifstream(path).good(); }

// Only the app's own folder: the build tree links it to assets/fonts and the package to
// fonts-dejavu-core's files, so a font missing here is a broken install, said as one.
std::string find_font(const char* file) {
    const std::string path = data_dir() + "/fonts/" + file;
    return readable(path) ? path : "";
}

// Sizes of one font set, in points before the content scale.
struct SetSizes {
    float ui, small, title, mono_large, mono, mono_small, tiny;
};

// The seven fonts of a set from the sans and monospace files; a font that cannot be loaded is null.
UiFonts add_font_set(const std::string& sans, const std::string& mono, float scale, const ImVector<ImWchar>& ranges,
                     const SetSizes& sizes) {
    ImGuiIO& io = ImGui::GetIO();
    ImFontConfig config;
    config.OversampleH = 1;
    config.OversampleV = 1;
    auto add = [&](const std::string& path, float size) -> ImFont* {
        if (path.empty()) return nullptr;
        return io.Fonts->AddFontFromFileTTF(path.c_str(), size * scale, &config, ranges.Data);
    };
    UiFonts fonts;
    fonts.scale = scale;
    fonts.ui = add(sans, sizes.ui);
    fonts.small = add(sans, sizes.small);
    fonts.title = add(sans, sizes.title);
    fonts.mono_large = add(mono, sizes.mono_large);
    fonts.mono = add(mono, sizes.mono);
    fonts.mono_small = add(mono, sizes.mono_small);
    fonts.tiny = add(sans, sizes.tiny);
    return fonts;
}

bool complete(const UiFonts& f) { return f.ui && f.small && f.title && f.mono_large && f.mono && f.mono_small && f.tiny; }

}  // namespace

UiFonts load_fonts(float scale, ImVector<ImWchar>& ranges, float base_size) {
    ImGuiIO& io = ImGui::GetIO();
    ImFontGlyphRangesBuilder builder;
    builder.AddRanges(io.Fonts->GetGlyphRangesDefault());  // Basic Latin + Latin-1 (×, ·, ÷, ²)
    const ImWchar kMaths[] = {
        0x0100, 0x017F,  // Latin Extended-A: GPT-2's token text (Ġ for a space, ċ, …) and its words
        0x0370, 0x03FF,  // Greek: Σ, ε, θ (ImGui 1.86 has no Greek preset)
        0x1D00, 0x1D7F,  // phonetic extensions: ᵀ
        0x2000, 0x206F,  // punctuation: – … ‖
        0x2070, 0x209F,  // superscripts and subscripts: ⁴ ₖ ₁
        0x2190, 0x21FF,  // arrows: → ↳
        0x2200, 0x22FF,  // mathematical operators: √ − ∞ Σ ≈ ≤ ⋅
        0x2713, 0x2717,  // ✓ ✗
        0x27E8, 0x27E9,  // ⟨ ⟩
        0,
    };
    builder.AddRanges(kMaths);
    builder.AddText("\xE2\x88\x9A\xE1\xB5\x80\xC3\x97\xE2\x86\x92\xE2\x88\x92\xE2\x88\x9E\xC2\xB7\xCE\xA3\xE2\x82\x96"
                    "\xE2\x82\x81\xE2\x82\x82\xE2\x80\x93\xE2\x80\xA6\xE2\x89\x88\xE2\x89\xA4\xE2\x9F\xA8\xE2\x9F\xA9\xC3\xB7"
                    "\xE2\x86\xB3\xE2\x9C\x95\xE2\x89\xA0\xE2\x96\xA8\xE2\x9A\xA0"
                    "\xE2\x90\xA3\xE2\x8F\x8E");  // √ ᵀ × → − ∞ · Σ ₖ ₁ ₂ – … ≈ ≤ ⟨ ⟩ ÷ ↳ ✕ ≠ ▨ ⚠, and ␣ ⏎ (a token's space, newline)
    builder.BuildRanges(&ranges);
    io.Fonts->FontBuilderIO = ImGuiFreeType::GetBuilderForFreeType();

    UiFonts fonts = add_font_set(find_font("DejaVuSans.ttf"), find_font("DejaVuSansMono.ttf"), scale, ranges,
                                 {base_size, base_size - 4.0f, base_size + 1.0f, base_size + 5.0f, base_size - 1.0f, base_size - 4.0f,
                                  base_size - 6.0f});
    if (!complete(fonts)) {
        std::fprintf(stderr, "attnlab: DejaVu fonts not found in %s/fonts; using ImGui's built-in font\n",
                     data_dir().c_str());
        io.Fonts->Clear();
        ImFontConfig fallback;
        fallback.SizePixels = 13.0f * scale;
        ImFont* font = io.Fonts->AddFontDefault(&fallback);
        fonts.ui = fonts.small = fonts.title = fonts.mono_large = fonts.mono = fonts.mono_small = fonts.tiny = font;
    }
    io.FontDefault = fonts.ui;
    return fonts;
}

UiFonts load_presenter_fonts(const UiFonts& normal, float scale, const ImVector<ImWchar>& ranges, float base_size) {
    const std::string sans = find_font("DejaVuSans.ttf");
    const std::string mono = find_font("DejaVuSansMono.ttf");
    if (sans.empty() || mono.empty()) return normal;
    const UiFonts fonts = add_font_set(sans, mono, scale, ranges,
                                       {base_size, base_size - 5.0f, base_size + 3.0f, base_size + 6.0f, base_size - 1.0f, base_size - 5.0f,
                                        base_size - 7.0f});
    return complete(fonts) ? fonts : normal;
}

}  // namespace attn::ui
