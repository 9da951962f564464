#version 430 core
// C = A·B: (M × K)·(K × N) → (M × N), all row-major. A workgroup of 16×16 invocations
// owns a (64 × 64) block of C, each invocation a (4 × 4) piece of it held in registers;
// A and B pass through shared memory one (64 × 16) and (16 × 64) tile at a time, so every
// value loaded from the buffers is used 64 times.
//
// The result can be scattered into the head-major padded layout the attention shader
// reads: column c = h·head_cols + t of row r lands at C[(h·M + r)·head_stride + t], so each
// head's rows are contiguous and padded to whole vec4s. With head_cols = head_stride = N
// this is the plain row-major (M × N) layout.
//
// Rows are dispatched in slices: this dispatch covers rows [row_offset, row_offset + 64·groups).
#define TILE 16
#define BLOCK 64

layout(local_size_x = TILE, local_size_y = TILE) in;

layout(std430, binding = 0) readonly buffer MatrixA { float a[]; };
layout(std430, binding = 1) readonly buffer MatrixB { float b[]; };
layout(std430, binding = 2) writeonly buffer MatrixC { float c[]; };

uniform int M;
uniform int N;
uniform int K;
uniform int head_cols;
uniform int head_stride;
uniform int row_offset;

shared float tile_a[TILE][BLOCK];  // transposed: tile_a[k][row], (16, 64)
shared vec4 tile_b[TILE][TILE];    // tile_b[k][column / 4], (16, 64)

void main() {
    const int tx = int(gl_LocalInvocationID.x), ty = int(gl_LocalInvocationID.y);
    const int tid = ty * TILE + tx;
    const int row0 = row_offset + int(gl_WorkGroupID.y) * BLOCK;  // the block's first row
    const int col0 = int(gl_WorkGroupID.x) * BLOCK;               // and column
    vec4 sum[4] = vec4[4](vec4(0.0), vec4(0.0), vec4(0.0), vec4(0.0));  // rows 4·ty + r, columns 4·tx + 0..3
    for (int k0 = 0; k0 < K; k0 += TILE) {
        // (64, 16) of A and (16, 64) of B, 4 values per invocation; zeros past the edges.
        for (int e = 0; e < 4; ++e) {
            const int index = tid * 4 + e;             // 0 .. 1023
            const int r = index / TILE, k = index % TILE;  // A: row r of the block, column k0 + k
            const int row = row0 + r, ka = k0 + k;
            tile_a[k][r] = (row < M && ka < K) ? a[row * K + ka] : 0.0;
        }
        {
            const int k = tid / TILE, quad = tid % TILE;  // B: row k0 + k, columns col0 + 4·quad + 0..3
            const int kb = k0 + k, col = col0 + 4 * quad;
            vec4 v = vec4(0.0);
            if (kb < K)
                for (int e = 0; e < 4; ++e)
                    if (col + e < N) v[e] = b[kb * N + col + e];
            tile_b[k][quad] = v;
        }
        barrier();
        for (int t = 0; t < TILE; ++t) {
            const vec4 b_row = tile_b[t][tx];
            sum[0] += tile_a[t][4 * ty + 0] * b_row;
            sum[1] += tile_a[t][4 * ty + 1] * b_row;
            sum[2] += tile_a[t][4 * ty + 2] * b_row;
            sum[3] += tile_a[t][4 * ty + 3] * b_row;
        }
        barrier();
    }
    for (int r = 0; r < 4; ++r) {
        const int row = row0 + 4 * ty + r;
        if (row >= M) continue;
        for (int e = 0; e < 4; ++e) {
            const int col = col0 + 4 * tx + e;
            if (col >= N) continue;
            const int h = col / head_cols, t = col - h * head_cols;
            c[(h * M + row) * head_stride + t] = sum[r][e];
        }
    }
}
