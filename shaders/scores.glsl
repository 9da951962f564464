// Shared by attention.comp and pool.comp (the loader inserts it after their #version line):
// which keys a query sees, and the score of one (query, key) cell after scaling, ALiBi and
// the mask — the same steps, in the same float order, as the CPU engine.

#define MASK_NONE 0
#define MASK_CAUSAL 1
#define MASK_PADDING 2
#define MASK_SLIDING_WINDOW 3
#define MASK_CUSTOM 4

layout(std430, binding = 5) readonly buffer KeyPadding { uint key_is_padding[]; };   // bit j: key j is padding
layout(std430, binding = 6) readonly buffer CustomMask { uint custom_visible[]; };   // (n_q × custom_words) bits, 1 = visible
layout(std430, binding = 7) readonly buffer AlibiSlopes { float alibi_slopes[]; };   // one per head

uniform int n_q;
uniform int n_k;
uniform int heads;
uniform int mask_kind;
uniform int window;
uniform int custom_words;        // uints per query row of the custom mask
uniform float scale;             // 1/√d_k, or 1
uniform float masked_fill;       // the value written into masked cells (may be −∞)
uniform bool fill_is_minus_inf;  // masked cells then weigh exactly 0, so hidden blocks can be skipped
uniform bool naive_softmax;      // exp(s) / Σ exp(s), no max subtracted
uniform bool use_alibi;

float minus_infinity() { return uintBitsToFloat(0xff800000u); }

bool bit_set(uint word, int bit) { return ((word >> uint(bit)) & 1u) != 0u; }

bool visible(int i, int j) {
    switch (mask_kind) {
        case MASK_CAUSAL: return j <= i;
        case MASK_PADDING: return !bit_set(key_is_padding[j >> 5], j & 31);
        case MASK_SLIDING_WINDOW: return j <= i && j > i - window;
        case MASK_CUSTOM: return bit_set(custom_visible[i * custom_words + (j >> 5)], j & 31);
    }
    return true;
}

// q·k → (q·k)·scale − m_h·|i − j| (ALiBi), or the fill value when key j is hidden from query i.
float masked_score(float q_dot_k, int h, int i, int j) {
    float s = q_dot_k * scale;
    if (use_alibi) s -= alibi_slopes[h] * float(abs(i - j));
    return visible(i, j) ? s : masked_fill;
}
