#pragma once
// The symbols the titles and shapes of the cards are written with (UTF-8; the fonts load
// these ranges).
namespace attn::ui::glyph {

inline constexpr const char* kTimes = "\xC3\x97";      // ×
inline constexpr const char* kDot = "\xC2\xB7";        // ·
inline constexpr const char* kT = "\xE1\xB5\x80";      // ᵀ
inline constexpr const char* kSqrt = "\xE2\x88\x9A";   // √
inline constexpr const char* kArrow = "\xE2\x86\x92";  // →

}  // namespace attn::ui::glyph
