#pragma once
// Colour maps for the heatmaps. Weights use viridis (perceptually uniform, sequential,
// readable in grey and by colour-blind viewers) on a legend fixed to 0..1. Signed values
// (scores, vectors, weights of the projections) use ColorBrewer's RdBu, diverging around 0
// (blue below, red above; colour-blind safe), on a legend symmetric about 0.
#include <cstdint>

namespace attn::ui {

struct Rgb {
    std::uint8_t r = 0, g = 0, b = 0;
};

enum class ColorScale {
    Weights,    // viridis over [0, 1]
    Diverging,  // RdBu over [−limit, +limit]
};

// t in [0, 1]; values outside are clamped.
Rgb viridis(float t);
// t in [−1, 1]: −1 blue, 0 near-white, +1 red.
Rgb diverging(float t);

// Colour k of a set of groups (the K/V heads query heads share): Okabe and Ito's eight colours,
// told apart with any colour vision, then again from the first.
Rgb category_colour(int k);

// Colour of a finite value under the scale; limit is the half-range of a diverging legend.
Rgb scale_color(ColorScale scale, float value, float limit);

// The drawing of special cells, outside both maps so that they cannot be read as a value.
constexpr Rgb kMaskedBackground{150, 150, 150};
constexpr Rgb kMaskedHatch{105, 105, 105};
constexpr Rgb kNonFinite{0, 0, 0};

// WCAG relative luminance of an sRGB colour, 0..1.
float relative_luminance(Rgb c);
// Black or white, whichever reads better on the background.
bool text_should_be_dark(Rgb background);

// Packs as ImGui's ImU32 (alpha in the top byte).
inline std::uint32_t pack(Rgb c, std::uint8_t alpha = 255) {
    return static_cast<std::uint32_t>(c.r) | (static_cast<std::uint32_t>(c.g) << 8) |
           (static_cast<std::uint32_t>(c.b) << 16) | (static_cast<std::uint32_t>(alpha) << 24);
}

}  // namespace attn::ui
