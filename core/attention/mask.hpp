#pragma once
// Which keys a query sees: the one description of every mask. The full engine builds the
// (n_q × n_k) matrix from it, the streaming engine and the GPU host ask it per cell and per
// block, the incremental path reads the matrix, the edits seed a custom mask with it.
// shaders/scores.glsl holds the GLSL copy of visible(); a GPU test checks the two cell for
// cell over every kind.
#include <vector>

#include "tensor/matrix.hpp"
#include "attention/scenario.hpp"

namespace attn {

struct MaskRule {
    MaskKind kind = MaskKind::None;
    int window = 1;                                      // sliding window: i − w < j ≤ i; band: |i − j| ≤ w
    int n_keys = 0;
    const std::vector<bool>* key_is_padding = nullptr;   // one flag per key (validated), or empty: none
    const MaskMatrix* custom = nullptr;                  // (n_q × n_k), true = visible
    int chunk = 1;                                       // chunked: ⌊j/C⌋ = ⌊i/C⌋ and j ≤ i

    bool visible(int i, int j) const;
    // Causal, sliding-window, chunked and band masks show each row one run of keys, [first, last): the
    // run of row i (clamped to [0, n_keys), possibly empty). Other kinds: [0, n_keys).
    void visible_run(int i, int& first, int& last) const;
    bool is_run() const {
        return kind == MaskKind::Causal || kind == MaskKind::SlidingWindow || kind == MaskKind::Chunked || kind == MaskKind::Band ||
               kind == MaskKind::None;
    }
    // The first key of query i's chunk: i − i mod C.
    int chunk_start(int i) const { return i - i % chunk; }
    // True when no query in [i0, i1) sees any key in [j0, j1): a block that can be skipped.
    bool block_hidden(int i0, int i1, int j0, int j1) const;
    // True when every query in [i0, i1) sees every key in [j0, j1) (false when unsure).
    bool block_visible(int i0, int i1, int j0, int j1) const;
    // False for a fully masked row: query i sees no key at all.
    bool row_sees_a_key(int i) const;
};

// The padding flags of the key side: the source's in cross-attention, else the target's
// (in direct input, one flag per row of K).
const std::vector<bool>& key_padding(const Scenario& scenario);
// The scenario's rule for n_keys keys. The rule points into the scenario: keep it alive.
MaskRule mask_rule(const Scenario& scenario, int n_keys);

// (n_q × n_k), true = visible.
MaskMatrix mask_matrix(const MaskRule& rule, int n_queries);
// The fully masked row rule (docs/conventions.md): the rows with no visible key, whatever the
// fill value. The trace lists them per head; −∞ gives them zero weights and a zero output, a
// finite fill uniform weights.
std::vector<int> fully_masked_rows(const MaskRule& rule, int n_queries);

}  // namespace attn
