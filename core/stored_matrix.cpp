// A weight read where its checkpoint stores it (stored_matrix.hpp states the layout).
#include "stored_matrix.hpp"

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "product.hpp"

namespace attn {

namespace {

std::atomic<std::size_t> widened_bytes{0};

// count consecutive stored elements from element `first` → out, float32.
void widen_run(const StoredMatrix& m, std::size_t first, std::size_t count, float* out) {
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
    return dtype == safetensors::Dtype::F32 && reinterpret_cast<std::uintptr_t>(bytes) % alignof(float) == 0;
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

}  // namespace attn
