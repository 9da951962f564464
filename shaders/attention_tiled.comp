#version 430 core
// Attention output without the (n_q × n_k) matrix, register-tiled for real GPUs. A
// workgroup of 16 × 16 invocations owns BQ = 64 query rows of one head and streams the keys
// BK = 64 at a time. Invocation (tx, ty) owns the rows i0 + 4·ty + r (r < 4):
//   S = Q·Kᵀ    its 4 × 4 scores: those rows × the keys j0 + tx + 16·c (c < 4), from Q and
//               K chunks of KC4 vec4 in shared memory   (64, d_k)·(d_k, 64) → (64, 64)
//   m' = max(m, rowmax S)   the row max across the 16 invocations of a row: a clustered
//               subgroup max where the GPU has one (USE_SUBGROUPS), else through shared memory
//   P  = exp(S − m')        into shared memory, (64, 64); or, with USE_SHUFFLE, kept in
//               registers and read by P·V from the lane of the row that holds it
//   l  = l·exp(m − m') + rowsum P      each invocation sums its own keys; the 16 partial
//               sums of a row are added once, at the end
//   O  = O·exp(m − m') + P·V           (64, 64)·(64, d_v): its 4 rows × the vec4 columns
//               tx + 16·g (g < DVG), V in chunks of VC keys
//   out = row_output(O, l)             scores.glsl: 0 / NaN / O ÷ l
// Every value read from shared memory serves 4 rows or 4 keys, and the shared memory stays
// under 32 KiB, the least a GL 4.3 device offers (Q and K chunks 9 KiB, P 16.3 KiB, the
// row-max scratch 4 KiB).
//
// The same contract as attention_rows.comp: tiles from scores.glsl's tile_head/tile_block,
// a dispatch may cover only the keys [key_begin, key_end) with the running state kept in
// row_stats (m, l) and concat (O unnormalised), and hidden key blocks are skipped under −∞.
// Variants: DK4, DV4 (vec4s per key and value row), VC (keys per P·V chunk, VC·DV4 ≤ 256, a
// power of two), USE_SUBGROUPS, USE_SHUFFLE (with USE_SUBGROUPS). The subgroup variants
// take a row's 16 invocations to be 16 aligned lanes of one subgroup (as on NVIDIA's and
// AMD's GPUs); create()'s probe against the CPU engine refuses a device where they are not.

// The host puts the #extension lines of USE_SUBGROUPS and USE_SHUFFLE right after #version
// (they must come before every declaration, scores.glsl's included).
#ifdef USE_SHUFFLE
#pragma optionNV(unroll all)
#endif

#ifndef DK4
#define DK4 16
#endif
#ifndef DV4
#define DV4 16
#endif
#ifndef VC
#define VC 16
#endif
#define BQ 64
#define BK 64
#define KC4 4                   // vec4s of d_k per QKᵀ chunk: 64 rows × 4 = 256, one per invocation
#define KS (KC4 + 1)            // padded row stride of the key chunk: no two lanes share a bank
#define PS (BK + 1)             // padded row stride of P
#define DVG ((DV4 + 15) / 16)   // vec4 output columns per invocation
#define KV_SIZE (BK * KS > VC * DV4 ? BK * KS : VC * DV4)

layout(local_size_x = 16, local_size_y = 16) in;

layout(std430, binding = 0) readonly buffer Queries { vec4 q_rows[]; };
layout(std430, binding = 1) readonly buffer Keys { vec4 k_rows[]; };
layout(std430, binding = 2) readonly buffer Values { vec4 v_rows[]; };
layout(std430, binding = 3) buffer Concat { float concat[]; };
layout(std430, binding = 4) buffer RowStats { vec2 row_stats[]; };

uniform int d_v;

shared vec4 q_chunk[BQ * KC4];
shared vec4 kv_chunk[KV_SIZE];
#ifndef USE_SHUFFLE
shared float p_tile[BQ * PS];
#endif
#ifndef USE_SUBGROUPS
shared float row_scratch[BQ * 16];
#endif
shared uint block_has_visible;

// The max (or sum) of x over the 16 invocations that share this invocation's row ty.
float row_max(float x, int row, int tx) {
#ifdef USE_SUBGROUPS
    return subgroupClusteredMax(x, 16);
#else
    barrier();
    row_scratch[row * 16 + tx] = x;
    barrier();
    float best = row_scratch[row * 16];
    for (int u = 1; u < 16; ++u) best = max(best, row_scratch[row * 16 + u]);
    return best;
#endif
}
float row_sum(float x, int row, int tx) {
#ifdef USE_SUBGROUPS
    return subgroupClusteredAdd(x, 16);
#else
    barrier();
    row_scratch[row * 16 + tx] = x;
    barrier();
    float total = 0.0;
    for (int u = 0; u < 16; ++u) total += row_scratch[row * 16 + u];
    return total;
#endif
}

void main() {
    const int tx = int(gl_LocalInvocationID.x), ty = int(gl_LocalInvocationID.y);
    const int tid = ty * 16 + tx;
    const int t = tile_offset + int(gl_WorkGroupID.x);
    const int h = tile_head(t);
    const int i0 = tile_block(t) * BQ;
    const int i_last = min(i0 + BQ, n_q) - 1;
    const bool resuming = key_begin > 0, finishing = key_end >= n_k;

    int rows_i[4];
    float m[4], l[4];
    vec4 acc[4 * DVG];
    for (int r = 0; r < 4; ++r) {
        rows_i[r] = i0 + 4 * ty + r;
        const bool valid = rows_i[r] < n_q;
        const vec2 state = resuming && valid ? row_stats[h * n_q + rows_i[r]] : row_start_state(h);  // the sink's cell, or nothing
        m[r] = state.x;
        l[r] = tx == 0 ? state.y : 0.0;  // the row's sum lives in one invocation; the others add to 0
        const int row_start = rows_i[r] * heads * d_v + h * d_v;
        for (int g = 0; g < DVG; ++g) {
            const int c4 = tx + 16 * g;
            vec4 a = vec4(0.0);
            if (resuming && valid && c4 < DV4)
                for (int e = 0; e < 4; ++e)
                    if (4 * c4 + e < d_v) a[e] = concat[row_start + 4 * c4 + e];
            acc[r * DVG + g] = a;
        }
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
                for (int r = 0; r < 4 && !any_visible; ++r)
                    for (int c = 0; c < 4 && !any_visible; ++c) {
                        const int j = j0 + tx + 16 * c;
                        any_visible = rows_i[r] < n_q && j < key_end && visible(rows_i[r], j);
                    }
                if (any_visible) atomicOr(block_has_visible, 1u);
                barrier();
                const bool hidden = block_has_visible == 0u;
                barrier();
                if (hidden) continue;
            }
        }

        // S = Q·Kᵀ: (64, d_k)·(d_k, 64), KC4 vec4 of d_k at a time.
        float s[16];  // s[4·r + c]: row 4·ty + r, key tx + 16·c
        for (int e = 0; e < 16; ++e) s[e] = 0.0;
        for (int c0 = 0; c0 < DK4; c0 += KC4) {
            {
                const int row = tid / KC4, cc = tid % KC4, i = i0 + row;
                q_chunk[row * KC4 + cc] = i < n_q && c0 + cc < DK4 ? q_rows[(h * n_q + i) * DK4 + c0 + cc] : vec4(0.0);
                const int j = j0 + row;  // BK = BQ: the same invocation loads key `row`
                kv_chunk[row * KS + cc] = j < key_end && c0 + cc < DK4 ? k_rows[(h * n_k + j) * DK4 + c0 + cc] : vec4(0.0);
            }
            barrier();
            for (int cc = 0; cc < KC4; ++cc) {
                vec4 qv[4], kv[4];
                for (int r = 0; r < 4; ++r) qv[r] = q_chunk[(4 * ty + r) * KC4 + cc];
                for (int c = 0; c < 4; ++c) kv[c] = kv_chunk[(tx + 16 * c) * KS + cc];
                for (int r = 0; r < 4; ++r)
                    for (int c = 0; c < 4; ++c) s[4 * r + c] += dot(qv[r], kv[c]);
            }
            barrier();
        }

        // The online softmax, row by row: scale, ALiBi and the mask, the new max, P.
        for (int r = 0; r < 4; ++r) {
            const int i = rows_i[r];
            float tile_max = minus_infinity();
            for (int c = 0; c < 4; ++c) {
                const int j = j0 + tx + 16 * c;
                const float score = i < n_q && j < key_end ? masked_score(s[4 * r + c], h, i, j) : minus_infinity();
                s[4 * r + c] = score;
                tile_max = max(tile_max, score);
            }
            const float m_new = max(m[r], row_max(tile_max, 4 * ty + r, tx));
            float correction = 1.0;
            if (m_new == minus_infinity()) {  // every score so far is −∞: nothing to add
                for (int c = 0; c < 4; ++c) s[4 * r + c] = 0.0;
            } else {
                const float shift = naive_softmax ? 0.0 : m_new;
                correction = naive_softmax ? 1.0 : exp(m[r] - m_new);  // 0 when m = −∞
                float sum = 0.0;
                for (int c = 0; c < 4; ++c) {
                    const float score = s[4 * r + c];
                    const float p = score == minus_infinity() ? 0.0 : exp(score - shift);
                    s[4 * r + c] = p;
                    sum += p;
                }
                l[r] = l[r] * correction + sum;
                m[r] = m_new;
            }
            for (int g = 0; g < DVG; ++g) acc[r * DVG + g] *= correction;
#ifndef USE_SHUFFLE
            for (int c = 0; c < 4; ++c) p_tile[(4 * ty + r) * PS + tx + 16 * c] = s[4 * r + c];
#endif
        }
#ifndef USE_SHUFFLE
        barrier();
#endif

        // O += P·V: (64, 64)·(64, d_v), VC keys of V at a time.
        for (int v0 = 0; v0 < BK; v0 += VC) {
            for (int idx = tid; idx < VC * DV4; idx += 256) {
                const int j = j0 + v0 + idx / DV4;
                kv_chunk[idx] = j < key_end ? v_rows[(h * n_k + j) * DV4 + idx % DV4] : vec4(0.0);
            }
            barrier();
            for (int jj = 0; jj < VC; ++jj)
                for (int r = 0; r < 4; ++r) {
#ifdef USE_SHUFFLE
                    // Key v0 + jj of row r: s[4·r + c] of the lane tx' of this row, where
                    // v0 + jj = tx' + 16·c.
                    const int key = v0 + jj;
                    const float p = subgroupShuffle(s[4 * r + key / 16], (gl_SubgroupInvocationID & ~15u) + uint(key % 16));
#else
                    const float p = p_tile[(4 * ty + r) * PS + v0 + jj];
#endif
                    for (int g = 0; g < DVG; ++g) {
                        const int c4 = tx + 16 * g;
                        if (c4 < DV4) acc[r * DVG + g] += p * kv_chunk[jj * DV4 + c4];
                    }
                }
            barrier();
        }
    }

    // The 16 partial sums of each row, then the output (or the state, for the next slice).
    for (int r = 0; r < 4; ++r) {
        const float total = row_sum(l[r], 4 * ty + r, tx);
        const int i = rows_i[r];
        if (i >= n_q) continue;
        const int row_start = i * heads * d_v + h * d_v;
        for (int g = 0; g < DVG; ++g) {
            const int c4 = tx + 16 * g;
            if (c4 >= DV4) continue;
            const vec4 o = finishing ? row_output(acc[r * DVG + g], total) : acc[r * DVG + g];
            for (int e = 0; e < 4; ++e)
                if (4 * c4 + e < d_v) concat[row_start + 4 * c4 + e] = o[e];
        }
        if (tx == 0) row_stats[h * n_q + i] = vec2(finishing && naive_softmax ? 0.0 : m[r], total);
    }
}
