#pragma once
// Undo and redo over whole scenarios, bounded by steps and by bytes.
//
// A step is a snapshot of the scenario before an edit. Small fields are copied; every large
// field (a matrix or a list above kChunkBytes, e.g. the embeddings of a 65,536-token
// sequence) is cut into chunks that are shared with the neighbouring snapshot wherever they
// did not change. Editing one cell of a 65,536 × 64 embedding therefore costs one chunk
// (64 KiB) of history, not a copy of the matrix. The fields are found generically
// (core/tensor/reflect.hpp), so a field added to Scenario is kept without being listed here.
//
// bytes() counts every shared chunk once. When a new step would take the history above
// max_bytes, the oldest steps are dropped; the newest step is always kept, so one undo
// always works whatever the size of the scenario.
#include <cstddef>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "attention/scenario.hpp"

namespace attn {

class History {
public:
    static constexpr size_t kDefaultMaxDepth = 256;
    static constexpr size_t kDefaultMaxBytes = size_t{256} << 20;  // 256 MiB
    static constexpr size_t kChunkBytes = size_t{64} << 10;        // the unit of sharing

    explicit History(size_t max_depth = kDefaultMaxDepth, size_t max_bytes = kDefaultMaxBytes)
        : max_depth_(max_depth), max_bytes_(max_bytes) {}

    // Call before applying an edit, with the scenario as it is before the edit. action names
    // the edit for the Edit menu ("Undo set W_Q[1,2]").
    void record(const Scenario& before, std::string action = {});
    bool can_undo() const { return !undo_.empty(); }
    bool can_redo() const { return !redo_.empty(); }
    // The action the next undo or redo reverts or replays; empty when none or unnamed.
    const std::string& undo_action() const;
    const std::string& redo_action() const;
    // Swap current with the previous (undo) or next (redo) scenario; false when none.
    bool undo(Scenario& current);
    bool redo(Scenario& current);
    void clear();

    size_t undo_depth() const { return undo_.size(); }
    size_t redo_depth() const { return redo_.size(); }
    // The memory the history holds: the snapshots' small fields plus each shared chunk once.
    size_t bytes() const;

    struct Chunk {
        std::shared_ptr<const void> data;  // a std::vector of the field's element type
        size_t bytes = 0;
    };
    struct Piece {  // one large field, cut into chunks
        int leaf = 0;           // which field, in the order the fields are visited
        const void* type = nullptr;  // the field's type (a tag), so a chunk is shared only with its own kind
        long rows = 0, cols = 0;     // the shape (matrices) or the count (lists, in rows)
        std::vector<Chunk> chunks;
    };
    struct Snapshot {
        Scenario rest;  // the scenario with its large fields emptied
        std::vector<Piece> pieces;
        size_t small_bytes = 0;
        std::string action;
    };

private:
    // Chunks equal to a chunk of `like` or `other` (the neighbouring steps) are shared.
    static Snapshot freeze(Scenario scenario, std::string action, const Snapshot* like, const Snapshot* other);
    static Scenario thaw(const Snapshot& snapshot);
    void trim();

    size_t max_depth_, max_bytes_;
    std::deque<Snapshot> undo_, redo_;
};

}  // namespace attn
