// A weight read where its checkpoint stores it (stored_matrix.hpp states the layout).
#include "tensor/stored_matrix.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "tensor/product.hpp"

namespace attn {

namespace {

std::atomic<std::size_t> widened_bytes{0};

// E2M1's sixteen values: sign, two exponent bits, one mantissa bit.
constexpr float kE2M1[16] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f, -0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f};

// count consecutive stored elements from element `first` → out, float32.
void widen_run(const StoredMatrix& m, std::size_t first, std::size_t count, float* out) {
    if (m.mxfp4()) {
        // lut[nibble] · 2^(s − 127): torch.ldexp(lut, s − 127), which multiplies by pow(2, s − 127)
        for (std::size_t k = 0; k < count; ++k) {
            const std::size_t i = first + k;
            const unsigned char byte = m.bytes[i >> 1];
            const float scale = std::ldexp(1.0f, static_cast<int>(m.scales[i >> 5]) - 127);
            out[k] = kE2M1[(i & 1) != 0 ? byte >> 4 : byte & 0x0F] * scale;
        }
        return;
    }
    safetensors::convert_to_f32(m.bytes + first * m.element_size(), m.dtype, count, out);
}

}  // namespace

std::size_t stored_bytes_widened() { return widened_bytes.load(std::memory_order_relaxed); }
void count_stored_widening(std::size_t bytes) { widened_bytes.fetch_add(bytes, std::memory_order_relaxed); }

StoredMatrix StoredMatrix::as_stored(std::shared_ptr<const void> owner, const unsigned char* bytes, safetensors::Dtype dtype,
                                     Eigen::Index rows, Eigen::Index cols) {
    StoredMatrix m;
    m.owner = std::move(owner);
    m.bytes = bytes;
    m.dtype = dtype;
    m.rows = rows, m.cols = cols;
    m.transposed = false;
    m.stride = cols;
    m.group = m.period = std::max<Eigen::Index>(cols, 1);
    return m;
}

StoredMatrix StoredMatrix::as_mxfp4(std::shared_ptr<const void> owner, const unsigned char* blocks, const unsigned char* scales,
                                    Eigen::Index rows, Eigen::Index cols) {
    StoredMatrix m = as_stored(std::move(owner), blocks, safetensors::Dtype::F32, rows, cols);
    m.scales = scales;
    return m;
}

const char* StoredMatrix::storage_name() const { return mxfp4() ? "MXFP4" : safetensors::to_string(dtype); }

StoredMatrix StoredMatrix::columns(Eigen::Index first, Eigen::Index count, Eigen::Index every, Eigen::Index total) const {
    StoredMatrix m = *this;
    m.cols = total;
    m.group = count;
    m.period = every;
    m.offset = offset + first;
    return m;
}

StoredMatrix StoredMatrix::transpose() const {
    // element (r, c) of the transpose is this one's (c, r)
    StoredMatrix m = *this;
    m.rows = cols, m.cols = rows;
    m.transposed = !transposed;
    m.group = m.period = std::max<Eigen::Index>(m.cols, 1);
    // a whole tensor's offset is 0 (a column view is never transposed)
    m.offset = 0;
    return m;
}

float StoredMatrix::value(Eigen::Index r, Eigen::Index c) const {
    float v = 0.0f;
    widen_run(*this, index(r, c), 1, &v);
    return v;
}

bool StoredMatrix::direct() const {
    return !mxfp4() && dtype == safetensors::Dtype::F32 && reinterpret_cast<std::uintptr_t>(bytes) % alignof(float) == 0;
}

Matrix StoredMatrix::to_matrix() const {
    Matrix out(rows, cols);
    if (transposed) {
        std::vector<float> line_values(static_cast<std::size_t>(rows));
        for (Eigen::Index c = 0; c < cols; ++c) {
            widen_run(*this, static_cast<std::size_t>(line(c) * stride), line_values.size(), line_values.data());
            out.col(c) = Eigen::Map<const Eigen::VectorXf>(line_values.data(), rows);
        }
    } else {
        for (Eigen::Index r = 0; r < rows; ++r) widen_row(r, out.row(r).data());
    }
    count_stored_widening(static_cast<std::size_t>(out.size()) * sizeof(float));
    return out;
}

void StoredMatrix::widen_row(Eigen::Index r, float* out) const {
    if (transposed) {
        for (Eigen::Index c = 0; c < cols; ++c) out[c] = value(r, c);
        return;
    }
    // runs of `group` consecutive stored elements
    for (Eigen::Index c = 0; c < cols;) {
        const Eigen::Index run = std::min(group - c % group, cols - c);
        widen_run(*this, index(r, c), static_cast<std::size_t>(run), out + c);
        c += run;
    }
}

void StoredMatrix::widen_columns(Eigen::Index begin, Eigen::Index width, float* out) const {
    if (transposed) {
        for (Eigen::Index c = 0; c < width; ++c)
            widen_run(*this, static_cast<std::size_t>(line(begin + c) * stride), static_cast<std::size_t>(rows), out + c * rows);
        return;
    }
    for (Eigen::Index r = 0; r < rows; ++r)
        for (Eigen::Index c = 0; c < width;) {
            const Eigen::Index at = begin + c, run = std::min(group - at % group, width - c);
            widen_run(*this, index(r, at), static_cast<std::size_t>(run), out + r * width + c);
            c += run;
        }
}

Cell StoredMatrix::first_non_finite() const {
    // A fast look at the stored bits first (a NaN or ∞ has every exponent bit set); the
    // row-major search only when one is there.
    bool any = false;
    auto scan = [&](std::size_t first, std::size_t count) {
        if (mxfp4()) {
            // Every E2M1 number is finite: only a scale of 2^127 or more can make ∞ (6·2^127 > the
            // largest float) or NaN (0·2^128). The scales of the run's 32s, then.
            for (std::size_t k = first >> 5; count != 0 && k <= (first + count - 1) >> 5 && !any; ++k) any = scales[k] >= 254;
            return;
        }
        const unsigned char* p = bytes + first * element_size();
        switch (dtype) {
            case safetensors::Dtype::F32:
                for (std::size_t i = 0; i < count && !any; ++i) {
                    std::uint32_t bits;
                    std::memcpy(&bits, p + 4 * i, 4);
                    any = (bits & 0x7f800000u) == 0x7f800000u;
                }
                break;
            case safetensors::Dtype::BF16:
            case safetensors::Dtype::F16: {
                const std::uint16_t exponent = dtype == safetensors::Dtype::BF16 ? 0x7f80u : 0x7c00u;
                for (std::size_t i = 0; i < count && !any; ++i) {
                    std::uint16_t bits;
                    std::memcpy(&bits, p + 2 * i, 2);
                    any = (bits & exponent) == exponent;
                }
                break;
            }
        }
    };
    // every stored line this matrix reads
    const Eigen::Index lines = transposed ? cols : rows;
    for (Eigen::Index l = 0; l < lines && !any; ++l) {
        if (transposed) scan(static_cast<std::size_t>(line(l) * stride), static_cast<std::size_t>(rows));
        else
            for (Eigen::Index c = 0; c < cols && !any;) {
                const Eigen::Index run = std::min(group - c % group, cols - c);
                scan(index(l, c), static_cast<std::size_t>(run));
                c += run;
            }
    }
    if (!any) return {};
    for (Eigen::Index r = 0; r < rows; ++r)
        for (Eigen::Index c = 0; c < cols; ++c)
            if (!std::isfinite(value(r, c))) return {static_cast<int>(r), static_cast<int>(c)};
    return {};
}

// [SECTION] Products read from the stored bytes

namespace {

// Columns widened at a time: a multiple of kProductColumnStep, so the pieces cut the product
// where product_into may, and (with depth 3,072) a piece of 2.4 MB.
constexpr Eigen::Index kStoredPieceColumns = 4 * kProductColumnStep;

using Strided = Eigen::Map<const Matrix, 0, Eigen::OuterStride<>>;

}  // namespace

void stored_product_into(const Matrix& a, const StoredMatrix& b, Matrix& out, ProductKernel kernel, const Matrix* bias, int chunks) {
    out.resize(a.rows(), b.cols);
    // Columns [begin, begin + width) as one strided block of aligned F32: read in place.
    auto in_place = [&](Eigen::Index begin, Eigen::Index width) {
        return b.direct() && (b.group >= b.cols || begin / b.group == (begin + width - 1) / b.group);
    };
    // out[:, begin, begin + width) from the stored columns there
    auto columns = [&](Eigen::Index begin, Eigen::Index width) {
        auto into = out.middleCols(begin, width);
        auto multiply = [&](const auto& block) {  // block: (depth × width)
            if (bias != nullptr) into = (a * block).rowwise() + bias->row(0).segment(begin, width);
            else if (kernel == ProductKernel::row_major) into.noalias() = a * block;  // (n, k)·(k, w)
            else into = a * block;                                                   // through a column-major temporary
        };
        if (in_place(begin, width)) {  // the lines are consecutive float32
            const float* first = reinterpret_cast<const float*>(b.bytes) + b.line(begin) * (b.transposed ? b.stride : 1);
            if (b.transposed) multiply(Strided(first, width, b.rows, Eigen::OuterStride<>(b.stride)).transpose());
            else multiply(Strided(first, b.rows, width, Eigen::OuterStride<>(b.stride)));
            return;
        }
        thread_local std::vector<float> widened;
        widened.resize(static_cast<std::size_t>(width * b.rows));
        b.widen_columns(begin, width, widened.data());
        if (b.transposed) multiply(Eigen::Map<const Matrix>(widened.data(), width, b.rows).transpose());
        else multiply(Eigen::Map<const Matrix>(widened.data(), b.rows, width));
    };
    detail::for_column_pieces(a.rows(), a.cols(), b.cols, false, chunks, [&](Eigen::Index piece_begin, Eigen::Index piece_width) {
        if (in_place(piece_begin, piece_width)) return columns(piece_begin, piece_width);  // the whole piece
        const Eigen::Index end = piece_begin + piece_width;
        for (Eigen::Index begin = piece_begin; begin < end; begin += kStoredPieceColumns)
            columns(begin, std::min(kStoredPieceColumns, end - begin));
    });
}

namespace {

// Element i of a stored run as float32: F32 and BF16 by their bits (loops over them vectorise),
// F16 through its table.
template <safetensors::Dtype D>
inline float stored_at(const unsigned char* p, Eigen::Index i) {
    if constexpr (D == safetensors::Dtype::F32) {
        float f;
        std::memcpy(&f, p + 4 * i, 4);
        return f;
    } else if constexpr (D == safetensors::Dtype::BF16) {
        std::uint16_t half;
        std::memcpy(&half, p + 2 * i, 2);
        const std::uint32_t bits = static_cast<std::uint32_t>(half) << 16;
        float f;
        std::memcpy(&f, &bits, 4);
        return f;
    } else {
        std::uint16_t half;
        std::memcpy(&half, p + 2 * i, 2);
        return safetensors::f16_to_f32(half);
    }
}

// A one-row product reads each weight once, in runs as short as a row or a line of a 768-wide
// matrix (1.5 KB in BF16). Where the runs it reads one after another do not follow one another
// in memory (four rows at a time, a row's run at a time), the hardware's prefetcher starts each
// new run cold, so the kernel asks ahead for the run it reads next (the rows below) while it
// reads this one: the next run arrives as this one ends. F32 and BF16 lines are one run
// (line_products_share).
constexpr std::size_t kCacheLine = 64;
// How far ahead a line-by-line read asks: about the bytes one core has in flight.
constexpr std::size_t kPrefetchBytes = 4096;

// Rows narrower than this (bytes) are asked for in memory order, this far ahead (Ahead).
constexpr std::size_t kNarrowRow = 4096, kLinearAhead = 8192;

inline void prefetch(const unsigned char* p) { __builtin_prefetch(p, 0, 3); }

// into[i] += Σ_j x_j·row_j[i] over four stored rows, asking ahead for what the next blocks read
// a cache line at a time, in one of two ways (Ahead): the same run of the rows `ahead` bytes
// further on (rows of a few KB and more: the next block's rows, as this block reads its own), or
// the bytes from `linear` on, as many lines as a step reads (narrow rows of a whole tensor, one
// run of memory four rows at a time: asked for in the order they lie, the reads four short rows
// apart reached this machine's memory a fifth slower). Restrict-qualified, so that the compiler
// knows the float stores cannot reach the stored bytes, and vectorises the loop.
struct Ahead {
    std::size_t rows = 0;                   // bytes from each row's element to the one asked for; 0: none
    const unsigned char* linear = nullptr;  // or the next line of a run asked for in memory order
};

template <safetensors::Dtype D>
void add_four_rows(float* __restrict into, const unsigned char* __restrict p0, const unsigned char* __restrict p1,
                   const unsigned char* __restrict p2, const unsigned char* __restrict p3, const float (&x)[4], Eigen::Index length,
                   Ahead ahead) {
    const float x0 = x[0], x1 = x[1], x2 = x[2], x3 = x[3];
    constexpr Eigen::Index per_line = static_cast<Eigen::Index>(kCacheLine / (D == safetensors::Dtype::F32 ? 4 : 2));
    Eigen::Index i = 0;
    if (ahead.rows != 0 || ahead.linear != nullptr)
        for (; i + per_line <= length; i += per_line) {
            if (ahead.linear != nullptr) {  // four lines a step: what the step reads
                prefetch(ahead.linear), prefetch(ahead.linear + kCacheLine), prefetch(ahead.linear + 2 * kCacheLine),
                    prefetch(ahead.linear + 3 * kCacheLine);
                ahead.linear += 4 * kCacheLine;
            } else {
                const std::size_t at = ahead.rows + static_cast<std::size_t>(i) * (kCacheLine / per_line);
                prefetch(p0 + at), prefetch(p1 + at), prefetch(p2 + at), prefetch(p3 + at);
            }
            for (Eigen::Index e = i; e < i + per_line; ++e)
                into[e] += x0 * stored_at<D>(p0, e) + x1 * stored_at<D>(p1, e) + x2 * stored_at<D>(p2, e) + x3 * stored_at<D>(p3, e);
        }
    for (; i < length; ++i)
        into[i] += x0 * stored_at<D>(p0, i) + x1 * stored_at<D>(p1, i) + x2 * stored_at<D>(p2, i) + x3 * stored_at<D>(p3, i);
}

template <safetensors::Dtype D>
void add_row(float* __restrict into, const unsigned char* __restrict p, float x, Eigen::Index length) {
    for (Eigen::Index i = 0; i < length; ++i) into[i] += x * stored_at<D>(p, i);
}

// Asks for `bytes` from p, a cache line at a time.
inline void prefetch_run(const unsigned char* p, std::size_t bytes) {
    for (std::size_t at = 0; at < bytes; at += kCacheLine) prefetch(p + at);
}

// Eight floats and eight 32-bit words as one value (GCC's and Clang's vector extensions: one
// AVX register, or two SSE ones where the build targets no AVX). Local to the kernels below,
// never passed to a function (that would change the calling convention with the target).
using Floats8 = float __attribute__((vector_size(32)));
using Words8 = std::uint32_t __attribute__((vector_size(32)));

// The eight lanes of v summed as a tree.
inline float lanes_sum(const Floats8& v) { return ((v[0] + v[4]) + (v[2] + v[6])) + ((v[1] + v[5]) + (v[3] + v[7])); }

// x·line over k F32 elements: four accumulators of eight lanes (independent chains of
// multiply-adds, 128 bytes of the line a step), summed as vectors, then their lanes as a tree.
float f32_line_dot(const float* __restrict x, const unsigned char* __restrict line, Eigen::Index k) {
    Floats8 acc[4] = {};
    auto add_eight = [&](Eigen::Index r, Floats8& into) {  // elements r … r + 7
        Floats8 w, xs;
        std::memcpy(&w, line + 4 * r, sizeof w);
        std::memcpy(&xs, x + r, sizeof xs);
        into += xs * w;
    };
    Eigen::Index r = 0;
    for (; r + 32 <= k; r += 32) add_eight(r, acc[0]), add_eight(r + 8, acc[1]), add_eight(r + 16, acc[2]), add_eight(r + 24, acc[3]);
    for (; r + 8 <= k; r += 8) add_eight(r, acc[0]);
    float sum = lanes_sum((acc[0] + acc[1]) + (acc[2] + acc[3]));
    for (; r < k; ++r) sum += x[r] * stored_at<safetensors::Dtype::F32>(line, r);
    return sum;
}

// x·line over k stored elements in `Lanes` partial sums, summed as a tree at the end (vector
// adds, not a chain of dependent scalar ones).
template <safetensors::Dtype D, int Lanes>
float dot_line_in(const float* __restrict x, const unsigned char* __restrict line, Eigen::Index k) {
    float partial[Lanes] = {};
    Eigen::Index r = 0;
    for (; r + Lanes <= k; r += Lanes)
        for (int j = 0; j < Lanes; ++j) partial[j] += x[r + j] * stored_at<D>(line, r + j);
    for (; r + 8 <= k; r += 8)
        for (int j = 0; j < 8; ++j) partial[j] += x[r + j] * stored_at<D>(line, r + j);
    for (int width = Lanes / 2; width >= 4; width /= 2)
        for (int j = 0; j < width; ++j) partial[j] += partial[j + width];
    float sum = (partial[0] + partial[2]) + (partial[1] + partial[3]);
    for (; r < k; ++r) sum += x[r] * stored_at<D>(line, r);
    return sum;
}

// F16 lines this long and longer are summed in 32 lanes (four independent chains of
// multiply-adds), shorter ones (the tests' tiny models) in 16: a few steps of the loop, where the
// wider tree costs as much.
constexpr Eigen::Index kLongLine = 256;

float f16_line_dot(const float* __restrict x, const unsigned char* __restrict line, Eigen::Index k) {
    constexpr safetensors::Dtype D = safetensors::Dtype::F16;
    return k >= kLongLine ? dot_line_in<D, 32>(x, line, k) : dot_line_in<D, 16>(x, line, k);
}

// The row x split into its even and odd elements, for BF16 lines read two elements a 32-bit word
// (bf16_pairs_dot). Made once a product set, before the threads start.
struct SplitRow {
    std::vector<float> even, odd;  // x[0], x[2], …; x[1], x[3], …
    explicit SplitRow(const Matrix& a = Matrix()) : even(static_cast<std::size_t>((a.size() + 1) / 2)), odd(static_cast<std::size_t>(a.size() / 2)) {
        for (Eigen::Index i = 0; i < a.size(); ++i) (i % 2 == 0 ? even : odd)[static_cast<std::size_t>(i / 2)] = a(i);
    }
};

// x·line over k BF16 elements, read as 32-bit words of two: word j holds element 2j in its low
// half and 2j + 1 in its high half, so that element 2j is the word shifted left by 16 and element
// 2j + 1 the word with its low half cleared: one operation an element, where widening each
// 16-bit element takes two (a zero-extension, then the shift). Each half meets its own x (the
// even and odd elements of x, split once). Four accumulators of eight lanes, independent chains
// of multiply-adds, 64 bytes of the line a step; summed as vectors, then their eight lanes as a
// tree. With the elements widened one at a time (and 32 lanes summed through memory), a
// SmolLM2-135M BF16 decode step's products ran at 25–29 GB/s on two cores where this kernel runs
// at 32–38 GB/s (docs/models.md, "Speed of writing").
float bf16_pairs_dot(const SplitRow& x, const unsigned char* __restrict line, Eigen::Index k) {
    const float* __restrict even = x.even.data();
    const float* __restrict odd = x.odd.data();
    const Eigen::Index pairs = k / 2;
    const Words8 high_half = {0xFFFF0000u, 0xFFFF0000u, 0xFFFF0000u, 0xFFFF0000u, 0xFFFF0000u, 0xFFFF0000u, 0xFFFF0000u, 0xFFFF0000u};
    Floats8 low_a = {}, high_a = {}, low_b = {}, high_b = {};
    auto add_eight = [&](Eigen::Index j, Floats8& low, Floats8& high) {  // words j … j + 7
        Words8 words;
        Floats8 x_even, x_odd;
        std::memcpy(&words, line + 4 * j, sizeof words);
        std::memcpy(&x_even, even + j, sizeof x_even);
        std::memcpy(&x_odd, odd + j, sizeof x_odd);
        low += x_even * reinterpret_cast<Floats8>(words << 16);
        high += x_odd * reinterpret_cast<Floats8>(words & high_half);
    };
    Eigen::Index j = 0;
    for (; j + 16 <= pairs; j += 16) add_eight(j, low_a, high_a), add_eight(j + 8, low_b, high_b);
    if (j + 8 <= pairs) add_eight(j, low_a, high_a), j += 8;
    float sum = lanes_sum((low_a + high_a) + (low_b + high_b));
    constexpr safetensors::Dtype D = safetensors::Dtype::BF16;
    for (; j < pairs; ++j) sum += even[j] * stored_at<D>(line, 2 * j) + odd[j] * stored_at<D>(line, 2 * j + 1);
    if (k % 2 != 0) sum += even[static_cast<std::size_t>(pairs)] * stored_at<D>(line, k - 1);
    return sum;
}

// A product's lines, shared among a region's threads. Each thread starts with its static share (a
// contiguous range, as schedule(static) would give it) and takes lines from the front of its own
// range, a chunk at a time; a thread whose range is empty takes the back half of the longest
// range left and goes on from there. Threads run at different speeds on a shared memory bus:
// with static shares alone, the thread that ended first waited 16 % of a SmolLM2-135M BF16 decode
// step's product time for the other (docs/models.md, "Speed of writing"). Each line is still
// summed by one call of one kernel, whichever thread takes it: the same sums every run.
class LineRanges {
  public:
    LineRanges(Eigen::Index lines, int threads, Eigen::Index chunk) : ranges_(static_cast<std::size_t>(threads)), chunk_(std::max<Eigen::Index>(chunk, 1)) {
        if (lines > Eigen::Index{0xFFFFFFFF}) throw std::length_error("a product of more than 2^32 lines");
        for (int t = 0; t < threads; ++t)
            ranges_[static_cast<std::size_t>(t)].range.store(pack(lines * t / threads, lines * (t + 1) / threads), std::memory_order_relaxed);
    }

    // The next lines of thread t: [begin, end); false once no range has any left.
    bool next(int t, Eigen::Index& begin, Eigen::Index& end) {
        std::atomic<std::uint64_t>& own = ranges_[static_cast<std::size_t>(t)].range;
        for (;;) {
            std::uint64_t r = own.load(std::memory_order_acquire);
            if (front(r) < back(r)) {
                const Eigen::Index taken = std::min(front(r) + chunk_, back(r));
                if (!own.compare_exchange_weak(r, pack(taken, back(r)), std::memory_order_acq_rel)) continue;
                begin = front(r), end = taken;
                return true;
            }
            if (!take_half(t)) return false;
        }
    }

  private:
    // The back half of the longest other range becomes thread t's own (false: every range is empty).
    bool take_half(int t) {
        for (;;) {
            std::size_t longest = 0;
            Eigen::Index most = 0;
            for (std::size_t v = 0; v < ranges_.size(); ++v) {
                const std::uint64_t r = ranges_[v].range.load(std::memory_order_acquire);
                if (static_cast<int>(v) != t && back(r) - front(r) > most) most = back(r) - front(r), longest = v;
            }
            if (most == 0) return false;
            std::uint64_t r = ranges_[longest].range.load(std::memory_order_acquire);
            if (back(r) <= front(r)) continue;
            const Eigen::Index middle = front(r) + (back(r) - front(r)) / 2;  // one line left: it is taken whole
            if (!ranges_[longest].range.compare_exchange_weak(r, pack(front(r), middle), std::memory_order_acq_rel)) continue;
            ranges_[static_cast<std::size_t>(t)].range.store(pack(middle, back(r)), std::memory_order_release);
            return true;
        }
    }
    static std::uint64_t pack(Eigen::Index front, Eigen::Index back) {
        return static_cast<std::uint64_t>(front) << 32 | static_cast<std::uint64_t>(back);
    }
    static Eigen::Index front(std::uint64_t r) { return static_cast<Eigen::Index>(r >> 32); }
    static Eigen::Index back(std::uint64_t r) { return static_cast<Eigen::Index>(r & 0xFFFFFFFFu); }

    struct alignas(64) Range {  // a cache line each: a thread's claims do not move the others' lines
        std::atomic<std::uint64_t> range{0};
    };
    std::vector<Range> ranges_;
    Eigen::Index chunk_;
};

// Lines a thread takes at a time: about 8 KB of them.
Eigen::Index line_chunk(const StoredMatrix& b) {
    return static_cast<Eigen::Index>(std::max<std::size_t>(1, 8192 / std::max<std::size_t>(static_cast<std::size_t>(b.rows) * b.element_size(), 1)));
}

// This thread's lines of out = x·b for a b stored as lines (column c is one stored line of k
// elements: out[c] = x·line(c)), read in place and widened in registers, taken from `ranges`. No
// barrier: the caller's region runs the next product straight on.
// F32 and BF16 lines are read in the order they lie with nothing asked for ahead: the lines of
// a tensor follow one another, one run of memory the hardware's prefetcher follows, and asking
// for the line after next as well made a SmolLM2-135M F32 decode step 17.6–18.3 ms where it
// took 16.0–16.5 ms without (alternating runs, the same minutes). F16 lines, widened through a
// table, keep the ask.
template <safetensors::Dtype D>
void line_products_share(const float* x, const SplitRow& split, const StoredMatrix& b, float* out, LineRanges& ranges) {
    const Eigen::Index k = b.rows, n = b.cols;
    const std::size_t size = b.element_size(), line_bytes = static_cast<std::size_t>(k) * size;
    // A whole tensor's line c is line offset + c: no division a line (a few percent of a line's time).
    const bool whole = b.group == n;
    auto line_of = [&](Eigen::Index c) { return whole ? b.offset + c : b.line(c); };
    auto line_at = [&](Eigen::Index c) { return b.bytes + static_cast<std::size_t>(line_of(c) * b.stride) * size; };
    // F16 lines ask for the line this far ahead (lines); the others ask for none.
    const Eigen::Index ahead = D != safetensors::Dtype::F16
                                   ? 0
                                   : static_cast<Eigen::Index>(std::max<std::size_t>(1, kPrefetchBytes / std::max<std::size_t>(line_bytes, 1)));
    const int t = omp_get_thread_num();
    for (Eigen::Index begin = 0, end = 0; ranges.next(t, begin, end);)
        for (Eigen::Index c = begin; c < end; ++c) {
            if constexpr (D == safetensors::Dtype::BF16) {
                out[c] = bf16_pairs_dot(split, line_at(c), k);
            } else if constexpr (D == safetensors::Dtype::F32) {
                out[c] = f32_line_dot(x, line_at(c), k);
            } else {
                if (c + ahead < n) prefetch_run(line_at(c + ahead), line_bytes);
                out[c] = f16_line_dot(x, line_at(c), k);
            }
        }
}

// This thread's share of x·b for a b stored as the engine's rows: its rows read straight
// through, four at a time (the accumulator is read and written once for four rows' elements),
// x[r]·row added into `acc` (n floats of the thread's own). No barrier, as above.
template <safetensors::Dtype D>
void row_products_share(const float* x, const StoredMatrix& b, float* acc) {
    const Eigen::Index k = b.rows, n = b.cols;
    const std::size_t size = b.element_size();
    const std::size_t below = static_cast<std::size_t>(4 * b.stride) * size;  // the rows four below: what the next block reads
    // A whole tensor of narrow rows is one run of memory: asked for in order, kLinearAhead on.
    const std::size_t row_bytes = static_cast<std::size_t>(n) * size;
    const bool linear = b.group == n && b.offset == 0 && b.stride == n && row_bytes < kNarrowRow;
    const Eigen::Index blocks = (k + 3) / 4;
#pragma omp for schedule(static) nowait
    for (Eigen::Index block = 0; block < blocks; ++block) {
        const Eigen::Index r = block * 4;
        if (r + 4 > k) {  // the last rows, one at a time
            for (Eigen::Index rr = r; rr < k; ++rr)
                for (Eigen::Index c = 0; c < n;) {
                    const Eigen::Index length = std::min(b.group - c % b.group, n - c);
                    add_row<D>(acc + c, b.bytes + b.index(rr, c) * size, x[rr], length);
                    c += length;
                }
            continue;
        }
        const float xs4[4] = {x[r], x[r + 1], x[r + 2], x[r + 3]};
        Ahead ahead;  // none for the last blocks: nothing is asked for beyond the tensor
        if (linear && static_cast<std::size_t>(r + 4) * row_bytes + kLinearAhead <= static_cast<std::size_t>(k) * row_bytes)
            ahead.linear = b.bytes + b.index(r, 0) * size + kLinearAhead;
        else if (!linear && r + 8 <= k)
            ahead.rows = below;
        for (Eigen::Index c = 0; c < n;) {
            const Eigen::Index length = std::min(b.group - c % b.group, n - c);
            add_four_rows<D>(acc + c, b.bytes + b.index(r, c) * size, b.bytes + b.index(r + 1, c) * size, b.bytes + b.index(r + 2, c) * size,
                             b.bytes + b.index(r + 3, c) * size, xs4, length, ahead);
            c += length;
        }
    }
}

template <safetensors::Dtype D>
void product_share(const float* x, const SplitRow& split, const StoredMatrix& b, float* out, float* acc, LineRanges* ranges) {
    if (b.transposed) line_products_share<D>(x, split, b, out, *ranges);
    else row_products_share<D>(x, b, acc);
}

// Views that tile one stored tensor's rows exactly, each column of it in one view (GPT-2's Q, K
// and V out of c_attn): the tensor itself, to be read once, row after row, where the views would
// each read their third of every row. nullopt when the products are not such views.
std::optional<StoredMatrix> tiled_tensor(const std::vector<StoredRowProduct>& products) {
    if (products.size() < 2) return std::nullopt;
    const StoredMatrix& first = *products.front().weight;
    Eigen::Index columns = 0;
    for (const StoredRowProduct& p : products) {
        const StoredMatrix& b = *p.weight;
        if (b.transposed || b.bytes != first.bytes || b.dtype != first.dtype || b.stride != first.stride || b.rows != first.rows)
            return std::nullopt;
        columns += b.cols;
    }
    if (columns != first.stride) return std::nullopt;
    std::vector<char> taken(static_cast<std::size_t>(first.stride), 0);
    for (const StoredRowProduct& p : products)
        for (Eigen::Index c = 0; c < p.weight->cols; ++c) {
            const Eigen::Index at = p.weight->line(c);
            if (at < 0 || at >= first.stride || taken[static_cast<std::size_t>(at)]) return std::nullopt;
            taken[static_cast<std::size_t>(at)] = 1;
        }
    StoredMatrix whole = first;
    whole.cols = whole.group = whole.period = first.stride;
    whole.offset = 0;
    return whole;
}

}  // namespace

void stored_row_products_into(const Matrix& a, const std::vector<StoredRowProduct>& products, int threads) {
    // MXFP4 has no one-row kernel of its own: its weights are widened a piece at a time, as for
    // several rows (the same products, in another summation order).
    if (std::any_of(products.begin(), products.end(), [](const StoredRowProduct& p) { return p.weight->mxfp4(); })) {
        std::vector<StoredRowProduct> plain;
        for (const StoredRowProduct& p : products)
            if (p.weight->mxfp4()) stored_product_into(a, *p.weight, *p.out, ProductKernel::row_major, p.bias);
            else plain.push_back(p);
        if (!plain.empty()) stored_row_products_into(a, plain, threads);
        return;
    }
    if (const std::optional<StoredMatrix> whole = tiled_tensor(products)) {
        // Each column of the tensor is summed as its view's would be (the same rows, in the same
        // blocks, on the same threads): the views' columns gathered from it are their products.
        Matrix all;
        stored_row_products_into(a, {{&*whole, &all}}, threads);
        for (const StoredRowProduct& p : products) {
            p.out->resize(1, p.weight->cols);
            for (Eigen::Index c = 0; c < p.weight->cols; ++c) (*p.out)(0, c) = all(0, p.weight->line(c));
            if (p.bias != nullptr) *p.out += *p.bias;
        }
        return;
    }
    // Every scratch buffer before the region, so that nothing in it can throw: each thread's
    // accumulator for each product stored as rows.
    // Worth sharing from about a hundred thousand weights on (a few hundred KB: for_column_pieces).
    double weights = 0;
    for (const StoredRowProduct& p : products) weights += static_cast<double>(p.weight->rows) * static_cast<double>(p.weight->cols);
    if (threads <= 0) threads = omp_in_parallel() || weights < 1.0e5 ? 1 : omp_get_max_threads();
    std::vector<std::size_t> acc_at(products.size(), 0);
    std::size_t per_thread = 0;
    for (std::size_t i = 0; i < products.size(); ++i) {
        const StoredMatrix& b = *products[i].weight;
        if (a.cols() != b.rows) throw std::invalid_argument("a one-row product's depths differ: " + std::to_string(a.cols()) + " and " +
                                                            std::to_string(b.rows));
        products[i].out->resize(1, b.cols);
        if (!b.transposed) {
            acc_at[i] = per_thread;
            per_thread += static_cast<std::size_t>(b.cols);
            products[i].out->setZero();
        }
    }
    const std::size_t stride = per_thread;
    std::vector<float> scratch(stride * static_cast<std::size_t>(threads), 0.0f);
    const float* x = a.data();
    const bool bf16_lines = std::any_of(products.begin(), products.end(), [](const StoredRowProduct& p) {
        return p.weight->transposed && p.weight->dtype == safetensors::Dtype::BF16;
    });
    const SplitRow split(bf16_lines ? a : Matrix());
    std::vector<std::optional<LineRanges>> ranges(products.size());  // the lines of each product stored as lines
    for (std::size_t i = 0; i < products.size(); ++i)
        if (products[i].weight->transposed) ranges[i].emplace(products[i].weight->cols, threads, line_chunk(*products[i].weight));
#pragma omp parallel num_threads(threads)
    {
        float* mine = scratch.data() + stride * static_cast<std::size_t>(omp_get_thread_num());
        for (std::size_t i = 0; i < products.size(); ++i) {
            const StoredMatrix& b = *products[i].weight;
            float* out = products[i].out->data();
            switch (b.dtype) {
                case safetensors::Dtype::F32: product_share<safetensors::Dtype::F32>(x, split, b, out, mine + acc_at[i], ranges[i] ? &*ranges[i] : nullptr); break;
                case safetensors::Dtype::BF16: product_share<safetensors::Dtype::BF16>(x, split, b, out, mine + acc_at[i], ranges[i] ? &*ranges[i] : nullptr); break;
                case safetensors::Dtype::F16: product_share<safetensors::Dtype::F16>(x, split, b, out, mine + acc_at[i], ranges[i] ? &*ranges[i] : nullptr); break;
            }
        }
    }
    // The accumulators, in the threads' order: the same sums every run.
    for (int t = 0; t < threads && per_thread != 0; ++t)
        for (std::size_t i = 0; i < products.size(); ++i)
            if (!products[i].weight->transposed)
                Eigen::Map<Eigen::VectorXf>(products[i].out->data(), products[i].out->cols()) +=
                    Eigen::Map<const Eigen::VectorXf>(scratch.data() + stride * static_cast<std::size_t>(t) + acc_at[i], products[i].out->cols());
    for (const StoredRowProduct& p : products)
        if (p.bias != nullptr) *p.out += *p.bias;
}

void stored_row_product_into(const Matrix& a, const StoredMatrix& b, Matrix& out, const Matrix* bias) {
    stored_row_products_into(a, {{&b, &out, bias}});
}

}  // namespace attn
