// The GLSL copy of core's rules of attention (core/attention/attention_rules.hpp, function for
// function: masked_score, row_output, row_weight; visible() is core/attention/mask.cpp's), shared by
// every attention and pooling kernel (the loader inserts it after their #version line):
// which keys a query sees, the score of one (query, key) cell after scaling, ALiBi and the
// mask, the fully masked row and the naive softmax's overflow, and how a pass's workgroups
// map onto (query block, head) tiles. tests/attention_cases.hpp runs one table of cases on
// both kernels and checks them cell for cell against the CPU engine.
//
// core's cell_exp takes an exponential below ln FLT_MIN (≈ −87.3) as 0: GPUs flush such
// subnormals to zero, so the kernels' plain exp() is the same rule there.

#define MASK_NONE 0
#define MASK_CAUSAL 1
#define MASK_PADDING 2
#define MASK_SLIDING_WINDOW 3
#define MASK_CUSTOM 4
#define MASK_CHUNKED 5
#define MASK_BAND 6

layout(std430, binding = 5) readonly buffer KeyPadding { uint key_is_padding[]; };   // bit j: key j is padding
layout(std430, binding = 6) readonly buffer CustomMask { uint custom_visible[]; };   // (n_q × custom_words) bits, 1 = visible
// Per head: the ALiBi slopes in [0, heads), the sink logits in [heads, 2·heads) (one buffer:
// a compute shader may have no more than 8 storage blocks).
layout(std430, binding = 7) readonly buffer HeadConstants { float head_constants[]; };

uniform int n_q;
uniform int n_k;
uniform int heads;
uniform int mask_kind;
uniform int window;
uniform int chunk;               // the chunked mask's C
uniform int custom_words;        // uints per query row of the custom mask
uniform float scale;             // 1/√d_k, a custom scale, or 1
uniform float softcap;           // c > 0: s → c·tanh(s/c) (logit soft-capping); 0: none
uniform float masked_fill;       // the value written into masked cells (may be −∞)
uniform bool fill_is_minus_inf;  // masked cells then weigh exactly 0, so hidden blocks can be skipped
uniform bool naive_softmax;      // exp(s) / Σ exp(s), no max subtracted
uniform bool use_alibi;
uniform bool use_sinks;          // attention sinks: each head's logit joins its rows' max and sum
// This dispatch: workgroup g is tile tile_offset + g of the pass; it streams keys
// [key_begin, key_end) (a slice of the pass's keys when one tile's keys would take longer
// than a submission may).
uniform int tile_offset;
uniform int key_begin;
uniform int key_end;
uniform int blocks;              // query blocks of the pass
uniform bool reverse_blocks;     // causal: the longest rows first, so the work stays balanced

float minus_infinity() { return uintBitsToFloat(0xff800000u); }
float not_a_number() { return uintBitsToFloat(0x7fc00000u); }

// core's row_start: a row's running max and sum before any key, from head h's sink b —
// m = b (the naive softmax shifts by 0 but still tracks m), l = exp(b − shift) — or, without
// sinks, m = −∞ and l = 0.
vec2 row_start_state(int h) {
    if (!use_sinks) return vec2(minus_infinity(), 0.0);
    const float sink = head_constants[heads + h];
    return vec2(sink, exp(sink - (naive_softmax ? 0.0 : sink)));
}

bool bit_set(uint word, int bit) { return ((word >> uint(bit)) & 1u) != 0u; }

bool visible(int i, int j) {
    switch (mask_kind) {
        case MASK_CAUSAL: return j <= i;                           // no key after the query
        case MASK_PADDING: return !bit_set(key_is_padding[j >> 5], j & 31);
        case MASK_SLIDING_WINDOW: return j <= i && j > i - window;  // the last w keys up to the query
        case MASK_CUSTOM: return bit_set(custom_visible[i * custom_words + (j >> 5)], j & 31);
        case MASK_CHUNKED: return j <= i && j >= i - i % chunk;     // the query's own chunk, up to it
        case MASK_BAND: return j >= i - window && j <= i + window;  // w keys either side, and itself
    }
    return true;
}

// Causal, sliding window and chunked: each row sees one run of keys ending at the query. (A band's
// run goes past the query: it is decided per cell.)
bool run_mask() { return mask_kind == MASK_CAUSAL || mask_kind == MASK_SLIDING_WINDOW || mask_kind == MASK_CHUNKED; }

// Causal, sliding window, chunked and band: true when no query in [i0, i1) sees a key in [j0, j1)
// (as MaskRule::block_hidden, exact). Padding and custom are decided per cell.
bool run_block_hidden(int i0, int i1, int j0, int j1) {
    if (mask_kind == MASK_CAUSAL) return j0 > i1 - 1;
    if (mask_kind == MASK_SLIDING_WINDOW) return j0 > i1 - 1 || j1 - 1 <= i0 - window;
    if (mask_kind == MASK_CHUNKED) return j0 > i1 - 1 || j1 - 1 < i0 - i0 % chunk;
    if (mask_kind == MASK_BAND) return j0 > i1 - 1 + window || j1 - 1 < i0 - window;  // past the last query's band, or before the first's
    return false;
}

// Whether no query up to i_last sees key j0 or any after it: past the query for a run mask, past
// the last query's band for a band.
bool keys_ended(int i_last, int j0) { return (run_mask() && j0 > i_last) || (mask_kind == MASK_BAND && j0 > i_last + window); }

// Logit soft-capping, as core's capped_score. tanh is 1.0 in float from |x| ≈ 9 on: clamping
// at 15 changes nothing, and keeps a driver's exp-based tanh from inf/inf.
float capped_score(float s) { return softcap > 0.0 ? softcap * tanh(clamp(s / softcap, -15.0, 15.0)) : s; }

// q·k → (q·k)·scale − m_h·|i − j| (ALiBi), soft-capped, or the fill value when key j is
// hidden from query i.
float masked_score(float q_dot_k, int h, int i, int j) {
    float s = q_dot_k * scale;
    if (use_alibi) s -= head_constants[h] * float(abs(i - j));
    return visible(i, j) ? capped_score(s) : masked_fill;
}

// A row's output from its running sum acc = Σ_j exp(s_j − m)·v_j and l = Σ_j exp(s_j − m):
// 0 when nothing weighs anything (the fully masked row under −∞), NaN when the naive
// softmax's sum overflowed (the weights are inf/inf), else acc / l.
vec4 row_output(vec4 acc, float l) {
    if (l == 0.0) return vec4(0.0);
    if (isinf(l) || isnan(l)) return vec4(not_a_number());
    return acc / l;
}

// One weight w_ij = exp(s_ij − m_i) / l_i from the row's max and sum, by the same rule.
float row_weight(float s, float shift, float l) {
    if (s == minus_infinity() || l == 0.0) return 0.0;
    if (isinf(l) || isnan(l)) return not_a_number();
    return exp(s - shift) / l;
}

// Tile t of a pass → its head and its query block.
int tile_head(int t) { return t % heads; }
int tile_block(int t) { return reverse_blocks ? blocks - 1 - t / heads : t / heads; }
