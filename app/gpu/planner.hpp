#pragma once
// Which work the GPU backend submits next: pure arithmetic, no GL, so that a test can drive
// it with a simulated device (an H100's width, a slow one, a fast one) at any n.
//
// A run is one or two passes; each pass is `tiles` workgroups (a block of query rows of one
// head) streaming the keys [key_lo, key_hi). The planner cuts a pass into submissions whose
// predicted time fits a budget, and learns the device's speed from what each one took:
//
//   next(budget) ──▶ Slice (tiles [tile0, tile0 + tiles) × keys [j0, j1), its planned ms)
//        ▲                 │ the backend dispatches it, fences it, measures it
//        └── learn(slice, measured ms) ◀──┘  then advance(slice)
#include <cstddef>
#include <functional>
#include <vector>

#include "attention/mask.hpp"

namespace attn::gpu {

enum class Pass { Attention, Pooling };

// How long a submission takes on this device, learned from measured submissions.
struct Speed {
    // Milliseconds per flop of the whole device (its throughput), and of one tile on its own
    // (the least time a tile takes, however idle the device). Both start cautious (1 GFLOP/s)
    // and only come down on evidence: a measured time is never less than the work took, so
    // measured ÷ flops is never below either true figure. (Flops here are a slice's cost:
    // its work and its tiles' overhead.)
    double device_ms_per_flop = 1e-6;
    double tile_ms_per_flop = 1e-6;
    // Greedy scheduling's bound (Graham): the flops spread over the whole device, plus the
    // largest tile on its own (the last one may start when all the others are done).
    double predict_ms(double flops, double largest) const { return flops * device_ms_per_flop + largest * tile_ms_per_flop; }
};

struct PassPlan {
    Pass pass = Pass::Attention;
    int tiles = 0, key_lo = 0, key_hi = 0, key_step = 64;
    std::function<double(int tile, int j0, int j1)> work;  // the flops tile `tile` spends on keys [j0, j1)
    double tile_overhead = 0.0;  // what a tile in a submission costs besides, in flops' worth
};

// A pass's tiles: blocks of block_rows rows of [row_begin, row_end), heads innermost (tile t
// is block t ÷ heads, head t mod heads), each streaming the keys [key_lo, key_hi) in steps of
// key_step at flops_per_cell for each (row, key).
struct TileGrid {
    Pass pass = Pass::Attention;
    int row_begin = 0, row_end = 0, block_rows = 64, heads = 1;
    int key_lo = 0, key_hi = 0, key_step = 64;
    double flops_per_cell = 0.0;
};
// The work of each tile, as the shaders do it: under a −∞ causal or window mask
// (skip_hidden) a block streams only the span from its first row's first visible key to its
// last row's last, and with reverse the blocks go last-first (a causal mask's longest rows
// first). Each tile in a submission also costs a key step's worth (tile_overhead). The rule
// must outlive the plan.
PassPlan tile_pass(const TileGrid& grid, const MaskRule& rule, bool skip_hidden, bool reverse);

// One submission: tiles [tile0, tile0 + tiles) of pass `pass` over the keys [j0, j1).
struct Slice {
    int pass = 0;  // index into the planner's passes
    int tile0 = 0, tiles = 0, j0 = 0, j1 = 0;
    double flops = 0.0;       // its work
    double cost = 0.0;        // its work and its tiles' overhead: what its time is predicted from
    double largest = 0.0;     // its largest tile's cost
    double planned_ms = 0.0;  // Speed::predict_ms(cost, largest)
};

class Planner {
public:
    // fill_tiles: workgroups that keep every compute unit of the device busy.
    explicit Planner(int fill_tiles = 2048) : fill_tiles_(fill_tiles) {}

    void start(std::vector<PassPlan> passes);  // a new run; the speeds are kept
    void clear() { start({}); }
    bool done() const { return cursor_pass_ >= passes_.size(); }
    const PassPlan& pass() const { return passes_[cursor_pass_]; }  // the next slice's; not done()
    double planned_flops() const { return planned_flops_; }

    // The next piece of work: the most whose predicted time fits budget_ms (see planner.cpp).
    Slice next(double budget_ms);
    // What the slice took: the speeds learn from it. bound_ms: the submission bound (a
    // slower-than-planned submission far under it is not a warning).
    void learn(const Slice& slice, double measured_ms, double bound_ms);
    void advance(const Slice& slice);

    Speed speed[2];  // per Pass
    int fill_tiles() const { return fill_tiles_; }

private:
    Speed& speed_of(const PassPlan& p) { return speed[static_cast<int>(p.pass)]; }

    int fill_tiles_;
    std::vector<PassPlan> passes_;
    double planned_flops_ = 0.0;
    // Where the next submission starts: pass, first tile, first key; a group of tiles
    // [tile, group_end) going through the keys in slices when whole tiles do not fill a
    // submission.
    size_t cursor_pass_ = 0;
    int cursor_tile_ = 0, cursor_key_ = 0, group_end_ = 0;
};

}  // namespace attn::gpu
