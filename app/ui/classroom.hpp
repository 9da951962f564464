#pragma once
// The classroom panels (issue 5): the menu bar and shortcuts, lessons, the focused stage
// view, presenter mode, article checks, files and exports, compare, hand checks. Each
// panel_*.cpp owns its part; this header is their shared surface. No GL in here.
#include <string>

#include <imgui.h>

#include "cli.hpp"
#include "ui/app_state.hpp"
#include "ui/heatmap.hpp"

namespace attn::ui {

// panel_menu.cpp: the menu bar, the keyboard shortcuts, the path popup, the notices.
void start_classroom(AppState& state, const cli::Options& options);  // once, before the first frame
void draw_menu_bar(AppState& state);
void handle_shortcuts(AppState& state);
void draw_notices(AppState& state);
int notice_lines(const AppState& state);
void add_notice(AppState& state, std::string text, bool error);

// panel_lesson.cpp
void ensure_lessons_loaded(AppState& state);
bool open_lesson(AppState& state, int index, int step);
bool open_lesson_named(AppState& state, const std::string& file_or_name, int step);
void lesson_next(AppState& state);
void lesson_previous(AppState& state);
void leave_lesson(AppState& state);
const LessonStep* current_step(const AppState& state);
void draw_lesson_text(AppState& state);
// The stage with its inputs, large (lesson mode, presenter mode).
void draw_stage_view(AppState& state, HeatmapTextures& textures, Stage stage);
void draw_scaling_plot(AppState& state, ImVec2 avail);

// panel_articles.cpp: View → Article checks.
void draw_articles(AppState& state);

// panel_compare.cpp: View → Compare. prepare_compare runs before anything draws (a new B
// drops the heatmap textures).
void prepare_compare(AppState& state, HeatmapTextures& textures);
void draw_compare(AppState& state, HeatmapTextures& textures);

// panel_hand_check.cpp: right-click a cell → "Check my value".
void handle_hand_check_click(AppState& state);
void draw_hand_check(AppState& state);

}  // namespace attn::ui
