#include "history.hpp"

namespace attn {

void History::record(const Scenario& before) {
    undo_.push_back(before);
    if (undo_.size() > max_depth_) undo_.pop_front();
    redo_.clear();  // a new edit ends the redo branch
}

bool History::undo(Scenario& current) {
    if (undo_.empty()) return false;
    redo_.push_back(std::move(current));
    current = std::move(undo_.back());
    undo_.pop_back();
    return true;
}

bool History::redo(Scenario& current) {
    if (redo_.empty()) return false;
    undo_.push_back(std::move(current));
    current = std::move(redo_.back());
    redo_.pop_back();
    return true;
}

void History::clear() {
    undo_.clear();
    redo_.clear();
}

}  // namespace attn
