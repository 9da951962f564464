#pragma once
// A view of the window (as ImHex's views are): a class that owns its state, offers its menu
// items and keys (menus.hpp), draws itself, and keeps its part of a session file. The window
// (window.hpp) holds the views beside the small shared context (context.hpp) and calls each
// one at the same points of a frame; a view never sees another view, and what spans views goes
// through the context's typed requests. No GL in here.
#include <string>

#include "options.hpp"
#include "session_file.hpp"
#include "test_hooks.hpp"
#include "ui/context.hpp"
#include "ui/menus.hpp"

namespace attn::ui {

class HeatmapTextures;

class View {
public:
    virtual ~View() = default;

    // Once, before the first frame: what the command line (and the test hooks) ask of it.
    virtual void start(MapContext, const cli::Options&, const TestHooks&) {}
    // Each frame, first: its menu sections, keys and notes.
    virtual void offer(MapContext, Offers&) {}
    // Each frame, after the keys and before anything draws: what landed, edits to follow.
    virtual void update(MapContext, HeatmapTextures&) {}
    // Each frame, after the main window: its floating windows and popups.
    virtual void draw_floating(MapContext, HeatmapTextures&) {}
    // Work under way off the window's thread that will change the picture (the window keeps
    // redrawing while there is), and waiting for all of it (screenshots, tests).
    virtual bool busy() const { return false; }
    virtual void finish_work() {}

    // A session file. `keep`: its part of one; `sign`: a string that changes whenever that
    // part does, cheap enough for every frame (autosave compares them).
    virtual void keep(session_file::ViewChoices&, session_file::Attachments&) const {}
    virtual void sign(std::string&) const {}
    // A session replaces the work, in three steps: `leave` what the view showed; `show` the
    // session's view, before its scenario is queued (a lesson step queues its own, which the
    // session's then replaces); `reopen` the models it kept, once the scenario
    // `scenario_name` is queued (each failure a notice, the rest stays open).
    virtual void leave(MapContext) {}
    virtual void show(MapContext, const session_file::ViewChoices&) {}
    virtual void reopen(MapContext, const session_file::SessionLoad&, const std::string& /*scenario_name*/) {}
    // The user's own scenario when the view shows another in its place (a lesson's step); null
    // otherwise. What a quit would lose is measured on it.
    virtual const Scenario* stands_in_for() const { return nullptr; }
};

}  // namespace attn::ui
