#version 430 core
// The weights heatmap at display size, never the (n_q × n_k) matrix: pooled cell (rb, cb) is
// the max of w_ij = exp(s_ij − m_i) / l_i (row_weight, scores.glsl) over the rows of row bin
// rb and the columns of column bin cb, with m_i, l_i from the attention pass. Bin b of
// `bins` over [begin, end) covers [begin + b·len/bins, begin + (b+1)·len/bins), as core's
// pooled grid.
//
// One invocation per query row of the region, PQ rows per workgroup: a tile (scores.glsl)
// is PQ region rows of one head. Keys stream through shared memory BK at a time and the
// scores are recomputed. Each invocation keeps the max of its row over the current column
// bin and folds it into the cell with atomicMax on the float's bits: weights are ≥ 0, where
// the order of the bits is the order of the floats (and a NaN, bits above +∞, wins as in
// core's max_pool). A dispatch may cover only the keys [key_begin, key_end) of the region:
// the maxima fold in all the same.
//
// Variants: DK4 = vec4s per query/key row; BK; PQ.

#ifndef DK4
#define DK4 16
#endif
#ifndef BK
#define BK 32
#endif
#ifndef PQ
#define PQ 64
#endif

layout(local_size_x = PQ) in;

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

shared vec4 k_tile[BK * DK4];

// The bin of index x of [begin, begin + len) cut into `bins`: the b with
// ⌊b·len/bins⌋ ≤ x − begin < ⌊(b+1)·len/bins⌋, i.e. b = ⌈(x − begin + 1)·bins/len⌉ − 1.
int bin_of(int x, int begin, int len, int bins) { return int((uint(x - begin + 1) * uint(bins) + uint(len) - 1u) / uint(len)) - 1; }

void main() {
    const int tid = int(gl_LocalInvocationID.x);
    const int t = tile_offset + int(gl_WorkGroupID.x);
    const int h = tile_head(t);
    const int i0 = row_begin + tile_block(t) * PQ;
    const int i = i0 + tid;
    const int i_last = min(i0 + PQ, row_end) - 1;
    const bool row_valid = i < row_end;
    const int rows = row_end - row_begin, cols = col_end - col_begin;

    vec4 q[DK4];
    for (int c = 0; c < DK4; ++c) q[c] = row_valid ? q_rows[(h * n_q + i) * DK4 + c] : vec4(0.0);
    const vec2 stats = row_valid ? row_stats[h * n_q + i] : vec2(0.0);
    const float shift = stats.x, l = stats.y;
    const bool row_weighs = row_valid && l != 0.0;  // l = 0: no key weighs anything, the weights are 0
    const int cell_row = row_valid ? (h * bins_rows + bin_of(i, row_begin, rows, bins_rows)) * bins_cols : 0;

    int bin = bin_of(key_begin, col_begin, cols, bins_cols);
    float bin_max = 0.0;
    for (int j0 = key_begin; j0 < key_end; j0 += BK) {
        const int tile = min(BK, key_end - j0);
        // With a −∞ fill, keys after every row of the workgroup weigh 0 (causal, window, chunked; past the band).
        if (fill_is_minus_inf && keys_ended(i_last, j0)) break;
        for (int idx = tid; idx < BK * DK4; idx += PQ) {
            const int j = j0 + idx / DK4;
            k_tile[idx] = j < key_end ? k_rows[(h * n_k + j) * DK4 + idx % DK4] : vec4(0.0);
        }
        barrier();
        for (int jj = 0; jj < tile; ++jj) {
            const int j = j0 + jj;
            const int j_bin = bin_of(j, col_begin, cols, bins_cols);  // the same for every invocation
            if (j_bin != bin) {
                if (row_weighs) atomicMax(pooled_bits[cell_row + bin], floatBitsToUint(bin_max));
                bin = j_bin;
                bin_max = 0.0;
            }
            if (!row_weighs) continue;
            float q_dot_k = 0.0;
            for (int c = 0; c < DK4; ++c) q_dot_k += dot(q[c], k_tile[jj * DK4 + c]);
            const float w = row_weight(masked_score(q_dot_k, h, i, j), shift, l);
            if (w > bin_max || isnan(w)) bin_max = w;
        }
        barrier();
    }
    if (row_weighs) atomicMax(pooled_bits[cell_row + bin], floatBitsToUint(bin_max));
}
