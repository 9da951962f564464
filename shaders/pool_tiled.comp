#version 430 core
// The weights heatmap at display size (as pool.comp: cell (rb, cb) is the max of
// w_ij = exp(s_ij − m_i) / l_i over its rows and columns, m_i and l_i from the attention
// pass), register-tiled for real GPUs as attention_tiled.comp is. A workgroup of 16 × 16
// invocations owns BQ = 64 region rows of one head and streams the region's keys BK = 64 at
// a time. Invocation (tx, ty) owns the rows i0 + 4·ty + r (r < 4):
//   S = Q·Kᵀ    its 4 × 4 scores: those rows × the keys j0 + tx + 16·c (c < 4), from Q and
//               K chunks of KC4 vec4 in shared memory   (64, d_k)·(d_k, 64) → (64, 64)
//   w = row_weight(masked_score(S), m, l)              scores.glsl: 0 / NaN / exp(s − m) ÷ l
//   cells       the max of w per (row bin, column bin): each invocation folds its run of
//               cells that share a bin into one atomicMax on a block of cells in shared
//               memory (the ≤ 64 row bins of its rows × the ≤ 64 column bins of the key
//               tile); after each key tile the block goes to the heatmap, one atomicMax per
//               cell that holds a weight.
// Weights are ≥ 0, where the order of the float bits is the order of the floats, and a NaN
// (bits above +∞) wins, as in core's max_pool. A dispatch may cover only the keys
// [key_begin, key_end) of the region: the maxima fold in all the same. Shared memory: Q and
// K chunks 9 KiB, the cells 16 KiB. Variant: DK4 (vec4s per query and key row).

#ifndef DK4
#define DK4 16
#endif
#define BQ 64
#define BK 64
#define KC4 4         // vec4s of d_k per QKᵀ chunk: 64 rows × 4 = 256, one per invocation
#define KS (KC4 + 1)  // padded row stride of the key chunk

layout(local_size_x = 16, local_size_y = 16) in;

layout(std430, binding = 0) readonly buffer Queries { vec4 q_rows[]; };
layout(std430, binding = 1) readonly buffer Keys { vec4 k_rows[]; };
layout(std430, binding = 3) buffer Pooled { uint pooled_bits[]; };  // (heads × bins_rows × bins_cols), zeroed
layout(std430, binding = 4) readonly buffer RowStats { vec2 row_stats[]; };

uniform int row_begin;
uniform int row_end;
uniform int col_begin;
uniform int col_end;
uniform int bins_rows;
uniform int bins_cols;

shared vec4 q_chunk[BQ * KC4];
shared vec4 k_chunk[BK * KS];
shared uint cells[64 * 64];  // (row bin − rb_lo, column bin − cb_lo)

// As pool.comp: the b with ⌊b·len/bins⌋ ≤ x − begin < ⌊(b+1)·len/bins⌋.
int bin_of(int x, int begin, int len, int bins) { return int((uint(x - begin + 1) * uint(bins) + uint(len) - 1u) / uint(len)) - 1; }

void main() {
    const int tx = int(gl_LocalInvocationID.x), ty = int(gl_LocalInvocationID.y);
    const int tid = ty * 16 + tx;
    const int t = tile_offset + int(gl_WorkGroupID.x);
    const int h = tile_head(t);
    const int i0 = row_begin + tile_block(t) * BQ;
    const int i_last = min(i0 + BQ, row_end) - 1;
    const int rows = row_end - row_begin, cols = col_end - col_begin;
    const int rb_lo = bin_of(i0, row_begin, rows, bins_rows);
    const int rb_span = bin_of(i_last, row_begin, rows, bins_rows) - rb_lo + 1;

    int rows_i[4], row_bin[4];
    float shift[4], l[4];
    bool weighs[4];
    for (int r = 0; r < 4; ++r) {
        const int i = i0 + 4 * ty + r;
        const bool valid = i <= i_last;
        const vec2 stats = valid ? row_stats[h * n_q + i] : vec2(0.0);
        rows_i[r] = i;
        shift[r] = stats.x;
        l[r] = stats.y;
        weighs[r] = valid && stats.y != 0.0;  // l = 0: no key weighs anything, the weights are 0
        row_bin[r] = valid ? bin_of(i, row_begin, rows, bins_rows) - rb_lo : 0;
    }

    for (int j0 = key_begin; j0 < key_end; j0 += BK) {
        const int j_last = min(j0 + BK, key_end) - 1;
        // Skip decisions are the same for the whole workgroup (uniform control flow).
        if (fill_is_minus_inf) {
            if (keys_ended(i_last, j0)) break;
            if (run_block_hidden(i0, i_last + 1, j0, j_last + 1)) continue;
        }
        const int cb_lo = bin_of(j0, col_begin, cols, bins_cols);
        const int cb_span = bin_of(j_last, col_begin, cols, bins_cols) - cb_lo + 1;
        for (int idx = tid; idx < rb_span * cb_span; idx += 256) cells[(idx / cb_span) * 64 + idx % cb_span] = 0u;

        // S = Q·Kᵀ: (64, d_k)·(d_k, 64), KC4 vec4 of d_k at a time (the first barrier also
        // orders the clearing of the cells before the folding).
        float s[16];  // s[4·r + c]: row 4·ty + r, key tx + 16·c
        for (int e = 0; e < 16; ++e) s[e] = 0.0;
        for (int c0 = 0; c0 < DK4; c0 += KC4) {
            {
                const int row = tid / KC4, cc = tid % KC4, i = i0 + row, j = j0 + row;
                q_chunk[row * KC4 + cc] = i <= i_last && c0 + cc < DK4 ? q_rows[(h * n_q + i) * DK4 + c0 + cc] : vec4(0.0);
                k_chunk[row * KS + cc] = j <= j_last && c0 + cc < DK4 ? k_rows[(h * n_k + j) * DK4 + c0 + cc] : vec4(0.0);
            }
            barrier();
            for (int cc = 0; cc < KC4; ++cc) {
                vec4 qv[4], kv[4];
                for (int r = 0; r < 4; ++r) qv[r] = q_chunk[(4 * ty + r) * KC4 + cc];
                for (int c = 0; c < 4; ++c) kv[c] = k_chunk[(tx + 16 * c) * KS + cc];
                for (int r = 0; r < 4; ++r)
                    for (int c = 0; c < 4; ++c) s[4 * r + c] += dot(qv[r], kv[c]);
            }
            barrier();
        }

        // Fold: runs of cells in the same bin become one atomicMax.
        int run_cell = -1;
        float run_max = 0.0;
        for (int r = 0; r < 4; ++r) {
            if (!weighs[r]) continue;
            for (int c = 0; c < 4; ++c) {
                const int j = j0 + tx + 16 * c;
                if (j > j_last) continue;
                const float w = row_weight(masked_score(s[4 * r + c], h, rows_i[r], j), shift[r], l[r]);
                if (w == 0.0) continue;  // the cells start at 0
                const int cell = row_bin[r] * 64 + bin_of(j, col_begin, cols, bins_cols) - cb_lo;
                if (cell != run_cell) {
                    if (run_cell >= 0) atomicMax(cells[run_cell], floatBitsToUint(run_max));
                    run_cell = cell;
                    run_max = w;
                } else if (w > run_max || isnan(w)) {
                    run_max = w;
                }
            }
        }
        if (run_cell >= 0) atomicMax(cells[run_cell], floatBitsToUint(run_max));
        barrier();

        for (int idx = tid; idx < rb_span * cb_span; idx += 256) {
            const int rb = idx / cb_span, cb = idx % cb_span;
            const uint bits = cells[rb * 64 + cb];
            if (bits != 0u) atomicMax(pooled_bits[(h * bins_rows + rb_lo + rb) * bins_cols + cb_lo + cb], bits);
        }
        barrier();  // before the next key tile clears the cells
    }
}
