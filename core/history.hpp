#pragma once
// Undo and redo over whole scenarios. A scenario is small plain data (a few matrices), so
// a snapshot per edit is simple and exact; the depth is bounded.
#include <deque>

#include "scenario.hpp"

namespace attn {

class History {
public:
    explicit History(size_t max_depth = 256) : max_depth_(max_depth) {}

    // Call before applying an edit, with the scenario as it is before the edit.
    void record(const Scenario& before);
    bool can_undo() const { return !undo_.empty(); }
    bool can_redo() const { return !redo_.empty(); }
    // Swap current with the previous (undo) or next (redo) scenario; false when none.
    bool undo(Scenario& current);
    bool redo(Scenario& current);
    void clear();

private:
    size_t max_depth_;
    std::deque<Scenario> undo_, redo_;
};

}  // namespace attn
