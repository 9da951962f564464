#include "ui/colormap.hpp"

#include <algorithm>
#include <cmath>

namespace attn::ui {

namespace {

// matplotlib's viridis at t = 0, 0.1, …, 1 (its 256-entry table sampled every 25.5 steps).
constexpr Rgb kViridis[] = {
    {68, 1, 84},    {72, 36, 117},  {65, 68, 135},  {53, 95, 141},   {42, 120, 142}, {33, 145, 140},
    {34, 168, 132}, {68, 191, 112}, {122, 209, 81}, {189, 223, 38},  {253, 231, 37},
};

// ColorBrewer RdBu (11 classes), ordered from most negative to most positive.
constexpr Rgb kRdBu[] = {
    {5, 48, 97},     {33, 102, 172},  {67, 147, 195}, {146, 197, 222}, {209, 229, 240}, {247, 247, 247},
    {253, 219, 199}, {244, 165, 130}, {214, 96, 77},  {178, 24, 43},   {103, 0, 31},
};

template <size_t N>
Rgb interpolate(const Rgb (&table)[N], float t) {
    if (!(t > 0.0f)) t = 0.0f;  // NaN lands on 0 too; callers draw NaN separately
    t = std::min(t, 1.0f);
    const float position = t * static_cast<float>(N - 1);
    const size_t i = std::min(static_cast<size_t>(position), N - 2);
    const float f = position - static_cast<float>(i);
    // Rounded half up: the mix lies in [0, 255], where that is lround's rounding (at every texel of
    // a texture: no call).
    auto mix = [f](std::uint8_t a, std::uint8_t b) {
        return static_cast<std::uint8_t>(static_cast<float>(a) + (static_cast<float>(b) - a) * f + 0.5f);
    };
    return {mix(table[i].r, table[i + 1].r), mix(table[i].g, table[i + 1].g), mix(table[i].b, table[i + 1].b)};
}

float linear(std::uint8_t channel) {
    const float c = static_cast<float>(channel) / 255.0f;
    return c <= 0.04045f ? c / 12.92f : std::pow((c + 0.055f) / 1.055f, 2.4f);
}

}  // namespace

Rgb viridis(float t) { return interpolate(kViridis, t); }

Rgb diverging(float t) { return interpolate(kRdBu, 0.5f * (t + 1.0f)); }

Rgb category_colour(int k) {
    // Okabe & Ito (2008), a violet in place of black (the masked cells are greys).
    static constexpr Rgb kOkabeIto[] = {{230, 159, 0}, {86, 180, 233}, {0, 158, 115}, {240, 228, 66},
                                        {0, 114, 178}, {213, 94, 0},   {204, 121, 167}, {153, 102, 204}};
    constexpr int n = static_cast<int>(sizeof kOkabeIto / sizeof kOkabeIto[0]);
    return kOkabeIto[((k % n) + n) % n];
}

Rgb scale_color(ColorScale scale, float value, float limit) {
    // weights run 0 … 1; a scaled routing (DeepSeek-V3's × 2.5) runs to its own largest, the limit
    if (scale == ColorScale::Weights) return viridis(limit > 1.0f ? value / limit : value);
    return diverging(limit > 0.0f ? value / limit : 0.0f);
}

float relative_luminance(Rgb c) { return 0.2126f * linear(c.r) + 0.7152f * linear(c.g) + 0.0722f * linear(c.b); }

// 0.179 is where black and white text have equal contrast ratios against the background.
bool text_should_be_dark(Rgb background) { return relative_luminance(background) > 0.179f; }

}  // namespace attn::ui
