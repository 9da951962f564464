#version 430 core
// RoPE in place on one head-major padded matrix (heads × n × stride): the pair (2i, 2i+1)
// of row p is rotated by the angle p·10000^(−2i/d_k). The (cos, sin) of every angle comes
// from a table the host computes in double precision exactly as the CPU engine does
// (core/positional.cpp), so both rotate by the same float constants; an odd last column
// is left as it is.
layout(local_size_x = 64) in;

layout(std430, binding = 0) buffer Rows { float rows[]; };
layout(std430, binding = 1) readonly buffer Angles { vec2 cos_sin[]; };  // (n × d_k/2)

uniform int n;
uniform int pairs;   // d_k / 2
uniform int stride;        // floats per row (d_k rounded up to a vec4)
uniform int index_offset;  // this dispatch covers (row, pair) indices from here

void main() {
    const int index = index_offset + int(gl_GlobalInvocationID.x);  // over (n × pairs)
    const int h = int(gl_GlobalInvocationID.y);
    if (index >= n * pairs) return;
    const int p = index / pairs, i = index - p * pairs;
    const vec2 cs = cos_sin[index];
    const int at = (h * n + p) * stride + 2 * i;
    const float x0 = rows[at], x1 = rows[at + 1];
    rows[at] = x0 * cs.x - x1 * cs.y;
    rows[at + 1] = x0 * cs.y + x1 * cs.x;
}
