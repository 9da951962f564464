#pragma once
// A weight matrix held once, however many scenarios and traces use it. Copying a
// SharedMatrix copies a pointer; the matrix itself is copied only when a holder edits it
// while another still holds it (copy on write). A model's layer, the scenario each pass
// builds from it and the trace of that pass share one W_Q; an edit in the pipeline copies
// that one matrix, and the model's stays as it was.
//
// Reading: the matrix is `*w` or `w.get()` (Eigen's operators need the Matrix itself:
// `x * *w`), `w->row(i)`, or `w.rows()`, `w(i, j)`, `w.size()`. A const Matrix& parameter
// takes a SharedMatrix as it is. Writing: `w = matrix` replaces it; `w.edit()` is the
// matrix to change in place, this holder's own.
//
// Threads: one SharedMatrix object is used by one thread at a time, as a Matrix is; two
// objects that share a matrix may be on two threads (a job's copy of the scenario and the
// window's), since neither writes the shared matrix: edit() copies it first.
//
// Stored weights: a checkpoint's matrix may be held where the file stores it (a StoredMatrix:
// the mapped bytes, F32, F16 or BF16, stored_matrix.hpp), so opening a model copies nothing.
// rows(), cols(), (i, j), first_non_finite(), row_into() and product_into (product.hpp) read
// the stored bytes; get() — a heatmap of the weight, an export — widens the whole matrix to
// float32 once and keeps it beside the bytes; edit() gives this holder a float32 copy of its own.
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>  // std::call_once
#include <optional>
#include <utility>

#include "tensor/matrix.hpp"
#include "tensor/stored_matrix.hpp"

namespace attn {

class SharedMatrix {
public:
    SharedMatrix() = default;
    SharedMatrix(Matrix m)
        : held_(m.size() != 0 || m.rows() != 0 || m.cols() != 0 ? std::make_shared<Held>(std::move(m), next_version()) : nullptr) {}
    template <typename Derived>
    SharedMatrix(const Eigen::MatrixBase<Derived>& m) : SharedMatrix(Matrix(m)) {}
    explicit SharedMatrix(StoredMatrix stored) : held_(std::make_shared<Held>(std::move(stored), next_version())) {}
    template <typename Derived>
    SharedMatrix& operator=(const Eigen::MatrixBase<Derived>& m) { return *this = SharedMatrix(Matrix(m)); }
    SharedMatrix& operator=(Matrix m) { return *this = SharedMatrix(std::move(m)); }
    SharedMatrix(const SharedMatrix&) = default;
    SharedMatrix(SharedMatrix&&) noexcept = default;
    SharedMatrix& operator=(const SharedMatrix&) = default;
    SharedMatrix& operator=(SharedMatrix&&) noexcept = default;

    // The float32 matrix (a stored one widened here, once).
    const Matrix& get() const {
        if (!held_) return empty();
        if (held_->stored) std::call_once(held_->widened, [held = held_.get()] { held->matrix = held->stored->to_matrix(); });
        return held_->matrix;
    }
    const Matrix& operator*() const { return get(); }
    const Matrix* operator->() const { return &get(); }
    operator const Matrix&() const { return get(); }

    Eigen::Index rows() const { return held_ ? (held_->stored ? held_->stored->rows : held_->matrix.rows()) : 0; }
    Eigen::Index cols() const { return held_ ? (held_->stored ? held_->stored->cols : held_->matrix.cols()) : 0; }
    Eigen::Index size() const { return rows() * cols(); }
    float operator()(Eigen::Index row, Eigen::Index col) const {
        return held_ && held_->stored ? held_->stored->value(row, col) : get()(row, col);
    }
    const float* data() const { return get().data(); }
    // Row i into out (cols() floats), without widening a stored matrix.
    void row_into(Eigen::Index row, float* out) const {
        if (held_ && held_->stored) held_->stored->widen_row(row, out);
        else Eigen::Map<Vector>(out, cols()) = get().row(row);
    }
    Vector row_vector(Eigen::Index row) const {
        Vector out(cols());
        row_into(row, out.data());
        return out;
    }
    // The same values, version and stored bytes in a holder of their own: a stored matrix widened
    // through it (a view drawing one layer's weights) is widened for it alone, and freed with it,
    // while the model's holder stays bytes only. A float32 matrix is shared as it is.
    SharedMatrix own_holder() const {
        if (!held_ || !held_->stored) return *this;
        SharedMatrix apart;
        apart.held_ = std::make_shared<Held>(*held_->stored, held_->version);
        return apart;
    }
    // The checkpoint bytes these values are read from; nullptr for a float32 matrix of its own.
    const StoredMatrix* stored() const { return held_ && held_->stored ? &*held_->stored : nullptr; }
    // True when values is this holder's float32 matrix (a stored one only once widened).
    bool holds(const Matrix* values) const { return held_ && values == &held_->matrix; }

    // The matrix to change in place: copied first when another holder shares it, so no
    // other holder sees the change. A stored matrix becomes float32 of this holder's own.
    Matrix& edit() {
        if (!held_) held_ = std::make_shared<Held>(Matrix(), 0);
        else if (held_.use_count() > 1) held_ = std::make_shared<Held>(held_->stored ? held_->stored->to_matrix() : held_->matrix, 0);
        else if (held_->stored) {  // this holder's alone: widened here, unless get() did
            if (held_->matrix.size() == 0) held_->matrix = held_->stored->to_matrix();
            held_->stored.reset();
        }
        held_->version = next_version();  // the values may change from here on
        held_->first_non_finite.store(kNotScanned, std::memory_order_relaxed);
        return held_->matrix;
    }

    // attn::first_non_finite of the matrix, scanned once per content: a weight that every pass
    // shares (a model's W_Q in each layer's scenario and trace) is not read again by each run.
    Cell first_non_finite() const {
        if (!held_) return {};
        std::int64_t known = held_->first_non_finite.load(std::memory_order_relaxed);
        if (known == kNotScanned) {
            const Cell c = held_->stored ? held_->stored->first_non_finite() : attn::first_non_finite(held_->matrix);
            known = c.valid() ? (static_cast<std::int64_t>(c.row) << 32) | static_cast<std::uint32_t>(c.col) : kAllFinite;
            held_->first_non_finite.store(known, std::memory_order_relaxed);  // two threads store the same
        }
        if (known == kAllFinite) return {};
        return {static_cast<int>(known >> 32), static_cast<int>(known & 0xffffffff)};
    }

    // Names these values: equal versions are the same values (a matrix made or edited gets a
    // version no other ever had; copies share it). 0 for the empty matrix. A drawing keyed by
    // it is not made again while a weight stays as it was, whatever else changed.
    std::uint64_t version() const { return held_ ? held_->version : 0; }

    // Equal shapes and values (Eigen's ==, for the matrix itself).
    friend bool operator==(const SharedMatrix& a, const SharedMatrix& b) { return a.shares(b) || equal(a.get(), b.get()); }
    friend bool operator==(const SharedMatrix& a, const Matrix& b) { return equal(a.get(), b); }
    friend bool operator==(const Matrix& a, const SharedMatrix& b) { return equal(a, b.get()); }
    friend bool operator!=(const SharedMatrix& a, const SharedMatrix& b) { return !(a == b); }
    friend bool operator!=(const SharedMatrix& a, const Matrix& b) { return !(a == b); }
    friend bool operator!=(const Matrix& a, const SharedMatrix& b) { return !(a == b); }

    // True when both hold the very same matrix (not merely equal values).
    bool shares(const SharedMatrix& other) const { return held_ && held_ == other.held_; }

private:
    static bool equal(const Matrix& a, const Matrix& b) { return a.rows() == b.rows() && a.cols() == b.cols() && a == b; }
    static const Matrix& empty() {
        static const Matrix none;
        return none;
    }
    static constexpr std::int64_t kNotScanned = -2, kAllFinite = -1;
    struct Held {
        Held(Matrix m, std::uint64_t v) : matrix(std::move(m)), version(v) {}
        Held(StoredMatrix s, std::uint64_t v) : stored(std::move(s)), version(v) {}
        Matrix matrix;                       // a stored matrix's: filled by get(), under `widened`
        std::optional<StoredMatrix> stored;  // where the values are read from, when a checkpoint holds them
        std::once_flag widened;
        std::uint64_t version = 0;
        // first_non_finite's answer for these values: kNotScanned, kAllFinite, or row << 32 | col.
        mutable std::atomic<std::int64_t> first_non_finite{kNotScanned};
    };
    static std::uint64_t next_version() {
        static std::atomic<std::uint64_t> last{0};
        return last.fetch_add(1, std::memory_order_relaxed) + 1;
    }
    std::shared_ptr<Held> held_;  // nullptr: the empty matrix
};

}  // namespace attn
