#pragma once
// What the views offer the menu bar and the keyboard. Every frame each view adds its own
// menu sections, key handlers and menu-bar notes (its offer_* function); the menu bar
// (panel_menu.cpp) draws them without knowing which view they come from, and the shortcuts
// run the handlers in the order they were offered. No GL.
#include <functional>
#include <string>
#include <vector>

namespace attn::ui {

// One line of a menu: an item, or (with no `chosen`) a line of disabled text.
struct MenuItem {
    std::string label;
    std::string shortcut;             // shown beside the label ("F5", "Esc")
    bool checked = false, enabled = true;
    std::function<void()> chosen;     // what choosing it does; null: a line of text
    std::string id;                   // the widget the tests look for ("menu.lesson.0"); empty: none
    std::string tooltip;              // shown on hover
    bool separator_before = false;
};

// A view's part of a menu: its items, made only while that menu is open (a menu's items may
// need work first: the lessons are read from disk when the Lessons menu first opens).
struct MenuSection {
    std::string menu;                 // "Lessons", "View"
    std::function<std::vector<MenuItem>()> items;
    // Where it stands in its menu: sections by position, equal ones in the order offered. The
    // menus stand File, Edit, the views' own (Lessons), View, Export.
    int position = 50;
};

struct Offers {
    std::vector<MenuSection> sections;
    // Each frame, in order, while no text field or popup has the keyboard: true takes the
    // frame's keys (Esc closes Check my value, then Compare, and only then leaves a lesson).
    std::vector<std::function<bool()>> keys;
    std::vector<std::string> notes;   // right of the menus: "lesson mode"
};

}  // namespace attn::ui
