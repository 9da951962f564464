#version 430 core
// Attention output without the (n_q × n_k) matrix (online softmax, FlashAttention-style),
// one query row per invocation: the kernel for CPU-like devices (Mesa llvmpipe runs each
// invocation in a SIMD lane; a row's q and acc then stay in registers). Real GPUs take
// attention_tiled.comp. BQ rows per workgroup, ROWS of them per invocation; keys stream
// through shared memory BK at a time. Per row i, with running max m and sum l:
//   s_j = masked_score(q_i·k_j)                    (d_k)·(d_k) → scalar, for j in the block
//   m'  = max(m, max_j s_j)                        stable softmax only (naive: shift 0)
//   l   = l·exp(m − m') + Σ_j exp(s_j − m')
//   acc = acc·exp(m − m') + Σ_j exp(s_j − m')·v_j  (d_v)
//   out = row_output(acc, l)                       0 / NaN / acc ÷ l (scores.glsl)
// Blocks hidden from every row of the workgroup are skipped when the fill is −∞ (they add
// exp(−∞) = 0); with a finite fill every cell counts.
//
// A dispatch may cover only the keys [key_begin, key_end) (scores.glsl): the running state
// then goes out and comes back through the output buffers — m and l in row_stats, acc
// unnormalised in concat — and only the dispatch that reaches n_k writes the output.
//
// Variants (prepended #defines): DK4, DV4 = vec4s per key and value row; BK; ROWS with
// THREADS = BQ / ROWS invocations per workgroup (every key read from shared memory serves
// ROWS rows). BQ = 64 is the host's too.
// Layouts: q_rows (heads × n_q × DK4), k_rows (heads × n_k × DK4), v_rows (heads × n_k × DV4),
// zero-padded; concat (n_q × heads·d_v) row-major, head h in columns [h·d_v, (h+1)·d_v);
// row_stats (heads × n_q) = (shift m_i, sum l_i), read by the pooling pass.

#ifndef DK4
#define DK4 16
#endif
#ifndef DV4
#define DV4 16
#endif
#ifndef BQ
#define BQ 64
#endif
#ifndef BK
#define BK 32
#endif
#ifndef ROWS
#define ROWS 2
#endif
#ifndef THREADS
#define THREADS 32  // BQ / ROWS, spelled out: GLSL 4.30 wants a literal local size
#endif
#if THREADS * ROWS != BQ
#error THREADS * ROWS must equal BQ
#endif

layout(local_size_x = THREADS) in;

layout(std430, binding = 0) readonly buffer Queries { vec4 q_rows[]; };
layout(std430, binding = 1) readonly buffer Keys { vec4 k_rows[]; };
layout(std430, binding = 2) readonly buffer Values { vec4 v_rows[]; };
layout(std430, binding = 3) buffer Concat { float concat[]; };
layout(std430, binding = 4) buffer RowStats { vec2 row_stats[]; };

uniform int d_v;

shared vec4 k_tile[BK * DK4];
shared vec4 v_tile[BK * DV4];
shared uint block_has_visible;

void main() {
    const int tid = int(gl_LocalInvocationID.x);
    const int t = tile_offset + int(gl_WorkGroupID.x);
    const int h = tile_head(t);
    const int i0 = tile_block(t) * BQ;
    const int i_last = min(i0 + BQ, n_q) - 1;
    const bool resuming = key_begin > 0, finishing = key_end >= n_k;
    // This invocation owns rows i0 + tid + r·THREADS, r < ROWS.
    int rows_i[ROWS];
    bool rows_valid[ROWS];
    vec4 q[ROWS * DK4];
    vec4 acc[ROWS * DV4];
    float m[ROWS];  // the largest score seen (the softmax shift when stable)
    float l[ROWS];
    for (int r = 0; r < ROWS; ++r) {
        rows_i[r] = i0 + tid + r * THREADS;
        rows_valid[r] = rows_i[r] < n_q;
        const int row_start = rows_i[r] * heads * d_v + h * d_v;
        for (int c = 0; c < DK4; ++c) q[r * DK4 + c] = rows_valid[r] ? q_rows[(h * n_q + rows_i[r]) * DK4 + c] : vec4(0.0);
        for (int c = 0; c < DV4; ++c) {
            vec4 a = vec4(0.0);
            if (resuming && rows_valid[r])
                for (int e = 0; e < 4; ++e)
                    if (4 * c + e < d_v) a[e] = concat[row_start + 4 * c + e];
            acc[r * DV4 + c] = a;
        }
        const vec2 state = resuming && rows_valid[r] ? row_stats[h * n_q + rows_i[r]] : row_start_state(h);  // the sink's cell, or nothing
        m[r] = state.x;
        l[r] = state.y;
    }

    for (int j0 = key_begin; j0 < key_end; j0 += BK) {
        const int cols = min(BK, key_end - j0);
        // Skip decisions are the same for the whole workgroup (uniform control flow).
        if (fill_is_minus_inf) {
            if (keys_ended(i_last, j0)) break;
            if (run_block_hidden(i0, i_last + 1, j0, j0 + cols)) continue;
            if (mask_kind == MASK_PADDING || mask_kind == MASK_CUSTOM) {
                if (tid == 0) block_has_visible = 0u;
                barrier();
                bool any_visible = false;
                for (int r = 0; r < ROWS; ++r)
                    for (int jj = 0; jj < cols && rows_valid[r] && !any_visible; ++jj)
                        any_visible = visible(rows_i[r], j0 + jj);
                if (any_visible) atomicOr(block_has_visible, 1u);
                barrier();
                const bool hidden = block_has_visible == 0u;
                barrier();
                if (hidden) continue;
            }
        }
        // (BK, d_k) keys and (BK, d_v) values into shared memory.
        for (int idx = tid; idx < BK * DK4; idx += THREADS) {
            const int j = j0 + idx / DK4;
            k_tile[idx] = j < key_end ? k_rows[(h * n_k + j) * DK4 + idx % DK4] : vec4(0.0);
        }
        for (int idx = tid; idx < BK * DV4; idx += THREADS) {
            const int j = j0 + idx / DV4;
            v_tile[idx] = j < key_end ? v_rows[(h * n_k + j) * DV4 + idx % DV4] : vec4(0.0);
        }
        barrier();
        // Four keys at a time, so every array index below is a compile-time constant once the
        // loops over r and c unroll (llvmpipe then keeps q and acc in registers).
        for (int g = 0; g < cols; g += 4) {
            vec4 s[ROWS];
            for (int e = 0; e < 4; ++e) {
                const int jj = g + e;
                float q_dot_k[ROWS];
                for (int r = 0; r < ROWS; ++r) q_dot_k[r] = 0.0;
                for (int c = 0; c < DK4; ++c) {
                    const vec4 key = k_tile[min(jj, BK - 1) * DK4 + c];
                    for (int r = 0; r < ROWS; ++r) q_dot_k[r] += dot(q[r * DK4 + c], key);
                }
                for (int r = 0; r < ROWS; ++r)
                    s[r][e] = jj < cols && rows_valid[r] ? masked_score(q_dot_k[r], h, rows_i[r], j0 + jj) : minus_infinity();
            }
            float correction[ROWS];
            vec4 p[ROWS];
            for (int r = 0; r < ROWS; ++r) {
                const float m_new = max(m[r], max(max(s[r].x, s[r].y), max(s[r].z, s[r].w)));
                if (m_new == minus_infinity()) {  // every score so far is −∞: nothing to add
                    correction[r] = 1.0;
                    p[r] = vec4(0.0);
                    continue;
                }
                const float shift = naive_softmax ? 0.0 : m_new;
                correction[r] = naive_softmax ? 1.0 : exp(m[r] - m_new);  // 0 when m = −∞
                p[r] = mix(exp(s[r] - shift), vec4(0.0), equal(s[r], vec4(minus_infinity())));
                l[r] = l[r] * correction[r] + (p[r].x + p[r].y + p[r].z + p[r].w);
                m[r] = m_new;
            }
            const int base = g * DV4;
            for (int c = 0; c < DV4; ++c) {
                const vec4 v0 = v_tile[base + c], v1 = v_tile[base + DV4 + c];
                const vec4 v2 = v_tile[base + 2 * DV4 + c], v3 = v_tile[base + 3 * DV4 + c];
                for (int r = 0; r < ROWS; ++r)
                    acc[r * DV4 + c] = acc[r * DV4 + c] * correction[r] + p[r].x * v0 + p[r].y * v1 + p[r].z * v2 + p[r].w * v3;
            }
        }
        barrier();
    }

    for (int r = 0; r < ROWS; ++r) {
        if (!rows_valid[r]) continue;
        const int row_start = rows_i[r] * heads * d_v + h * d_v;
        for (int c = 0; c < DV4; ++c) {
            const vec4 o = finishing ? row_output(acc[r * DV4 + c], l[r]) : acc[r * DV4 + c];
            for (int e = 0; e < 4; ++e)
                if (4 * c + e < d_v) concat[row_start + 4 * c + e] = o[e];
        }
        // Finished: the shift the weights were taken with (0 for the naive softmax) and the sum.
        row_stats[h * n_q + rows_i[r]] = vec2(finishing && naive_softmax ? 0.0 : m[r], l[r]);
    }
}
