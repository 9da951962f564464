#pragma once
// out = a·b on every core, bit for bit the numbers Eigen's own product gives.
//
// The engine runs Eigen's products on the calling thread (EIGEN_DONT_PARALLELIZE: it decides
// itself where threads pay off). A layer's projections, W_O, the MLP and the LM head are one
// product each, too few to share among threads by heads; this one shares it by its output's
// columns: thread t computes out[:, cols_t] = a · b[:, cols_t].
//
// Why the numbers do not change: each output element is one dot product over k, and Eigen
// sums it in depth blocks (kc) that depend on k and the caches only. What else decides its
// summation order is the kernel path of its column: out is row-major, so Eigen computes outᵀ =
// bᵀ·aᵀ and out's columns are the kernel's rows, taken in register blocks of mr rows (3
// packets: 24 floats with AVX, 12 with SSE, 48 with AVX-512), then 2 packets, 1 packet (whose
// kernel keeps two accumulators, even and odd k), half a packet, one row. A GEMV (one row of a
// against bᵀ, the tied LM head) takes b's rows in blocks of 8, 4, 2, 1. Splitting at multiples of
// 48 (a multiple of every mr and of 8) gives every column the block it had in the whole
// product: the remainder after the last full block is the same columns. tests/test_engine.cpp
// checks it bit for bit over a table of shapes.
//
// Only worth it for large products, and only at the top level: inside a parallel region (the
// heads' loop) it runs on the calling thread.
#include <algorithm>
#include <initializer_list>
#include <type_traits>
#include <vector>

#include <omp.h>

#include "tensor/worker_errors.hpp"
#include "tensor/matrix.hpp"
#include "tensor/shared_matrix.hpp"

namespace attn {

// The columns of a split start at multiples of this (see above).
constexpr Eigen::Index kProductColumnStep = 48;

namespace detail {

// Calls piece(begin, width) for the column ranges of an (n × cols) product of depth `depth`, on
// `chunks` threads (0: one per core), or once for all columns where a split does not pay or
// would change the numbers (a plain b against one row: Eigen's column-major GEMV, whose blocks
// are 64 rows). Each thread takes about four pieces, handed out as threads come free: a thread
// the OS takes away for a while (another program busy on the same cores) holds up its one
// piece, not a whole half of the product.
template <typename Piece>
void for_column_pieces(Eigen::Index n, Eigen::Index depth, Eigen::Index cols, bool gemv_by_columns, int chunks, const Piece& piece) {
    if (chunks <= 0) chunks = omp_in_parallel() ? 1 : omp_get_max_threads();
    const double flops = 2.0 * static_cast<double>(n) * static_cast<double>(depth) * static_cast<double>(cols);
    const Eigen::Index step = kProductColumnStep;
    // One row is memory-bound: worth sharing from a few hundred KB of weights on.
    if (chunks < 2 || gemv_by_columns || flops < (n == 1 ? 2.0e5 : 4.0e6) || cols < 2 * step || depth == 0) {
        piece(Eigen::Index{0}, cols);
        return;
    }
    constexpr int kPiecesPerThread = 4;
    const Eigen::Index per_piece = ((cols + chunks * kPiecesPerThread - 1) / (chunks * kPiecesPerThread) + step - 1) / step * step;
    const int pieces = static_cast<int>((cols + per_piece - 1) / per_piece);
    WorkerErrors errors;
#pragma omp parallel for num_threads(std::min(chunks, pieces)) schedule(dynamic, 1)
    for (int c = 0; c < pieces; ++c) errors.run([&] { piece(c * per_piece, std::min(per_piece, cols - c * per_piece)); });
    errors.rethrow();
}

template <typename Rhs>
constexpr bool is_matrix_or_transpose = std::is_same_v<Rhs, Matrix> || std::is_same_v<Rhs, Eigen::Transpose<const Matrix>>;

}  // namespace detail

// Which of Eigen's two evaluations of a·b (two row-major matrices) the numbers are: they differ
// in the last bits, and a caller keeps the one its numbers always were.
enum class ProductKernel {
    row_major,     // out.noalias() = a * b, Matrix(a * b): the row-major result, computed as bᵀ·aᵀ
    column_major,  // out = a * b, (a * b).rowwise() + bias: a column-major temporary (the product's
                   // plain type), then copied; its blocks of out's columns are Eigen's nr = 4, and a
                   // multiple of 4 keeps them
    // Any summation order: a caller that compares within float rounding, not bit for bit (a
    // decode step against a full recompute). One row against a weight is then shared among
    // the threads by columns too, and a stored weight is read once, element by element, with
    // no widened copy (stored_row_product_into): the memory-bound GEMV of writing.
    any_order,
};

// out = a·b (b a Matrix, or a Matrix's transpose: h·Eᵀ), its columns in `chunks` pieces, one
// per thread (0: one per core; one piece when the product is small). out must not alias a or b.
template <typename Rhs>
void product_into(const Matrix& a, const Rhs& b, Matrix& out, ProductKernel kernel = ProductKernel::row_major, int chunks = 0) {
    static_assert(detail::is_matrix_or_transpose<Rhs>, "b is a Matrix or a Matrix's transpose");
    out.resize(a.rows(), b.cols());
    const bool gemv_by_columns =
        kernel != ProductKernel::any_order && a.rows() == 1 && (std::is_same_v<Rhs, Matrix> || kernel == ProductKernel::column_major);
    detail::for_column_pieces(a.rows(), a.cols(), b.cols(), gemv_by_columns, chunks, [&](Eigen::Index begin, Eigen::Index width) {
        if (kernel != ProductKernel::column_major) out.middleCols(begin, width).noalias() = a * b.middleCols(begin, width);  // (n, k)·(k, w)
        else out.middleCols(begin, width) = a * b.middleCols(begin, width);  // through a column-major temporary
    });
}

// out = a·b + bias on every row, bias (1 × N), as (a * b).rowwise() + bias evaluates it
// (ProductKernel::column_major). out must not alias a, b or bias.
inline void product_plus_bias_into(const Matrix& a, const Matrix& b, const Matrix& bias, Matrix& out, int chunks = 0,
                                   ProductKernel kernel = ProductKernel::column_major) {
    out.resize(a.rows(), b.cols());
    const bool gemv_by_columns = kernel != ProductKernel::any_order && a.rows() == 1;
    detail::for_column_pieces(a.rows(), a.cols(), b.cols(), gemv_by_columns, chunks, [&](Eigen::Index begin, Eigen::Index width) {
        out.middleCols(begin, width) = (a * b.middleCols(begin, width)).rowwise() + bias.row(0).segment(begin, width);
    });
}

// [SECTION] Weights: a float32 matrix, or one read where its checkpoint stores it

// out = a·b (+ bias on every row, when given: bias (1 × N)) with b stored (stored_matrix.hpp):
// its columns taken a few hundred at a time, each piece read in place (aligned F32) or widened
// into a buffer of its thread, never the whole matrix.
void stored_product_into(const Matrix& a, const StoredMatrix& b, Matrix& out, ProductKernel kernel, const Matrix* bias = nullptr,
                         int chunks = 0);
// out = a·b (+ bias) for one row a (1 × k), in any summation order: every stored element read
// once where it lies and widened in registers' reach (a line, or a run of a row, at a time), the
// columns shared among the threads.
void stored_row_product_into(const Matrix& a, const StoredMatrix& b, Matrix& out, const Matrix* bias = nullptr);
// One of several one-row products read in one parallel region: out = a·weight (+ bias).
struct StoredRowProduct {
    const StoredMatrix* weight;
    Matrix* out;
    const Matrix* bias = nullptr;
};
// Every product of `products` for one row a (1 × k), as stored_row_product_into, each thread
// taking its share of one weight and going straight on to its share of the next: the
// projections that read the same row (Q, K and V; an MLP's gate and up) start the threads
// once, not once each. `threads`: 0 for every core (one for a few hundred KB of weights or
// inside a parallel region). For a given number of threads the sums are the same every run.
// The outs must not alias a.
void stored_row_products_into(const Matrix& a, const std::vector<StoredRowProduct>& products, int threads = 0);

// out = a·b for a weight, float32 or stored.
inline void product_into(const Matrix& a, const SharedMatrix& b, Matrix& out, ProductKernel kernel = ProductKernel::row_major,
                         int chunks = 0) {
    const StoredMatrix* stored = b.stored();
    if (stored && kernel == ProductKernel::any_order && a.rows() == 1) stored_row_product_into(a, *stored, out);
    else if (stored) stored_product_into(a, *stored, out, kernel == ProductKernel::any_order ? ProductKernel::row_major : kernel, nullptr, chunks);
    else product_into(a, b.get(), out, kernel, chunks);
}

// One row a against several weights, in any summation order (ProductKernel::any_order): one
// parallel region when every weight is stored, else a product each.
struct RowProduct {
    const SharedMatrix* weight;
    Matrix* out;
};
inline void row_products_into(const Matrix& a, std::initializer_list<RowProduct> products) {
    std::vector<StoredRowProduct> stored;
    for (const RowProduct& p : products)
        if (p.weight->stored() != nullptr) stored.push_back({p.weight->stored(), p.out});
    if (a.rows() == 1 && stored.size() == products.size()) return stored_row_products_into(a, stored);
    for (const RowProduct& p : products) product_into(a, *p.weight, *p.out, ProductKernel::any_order);
}

// out = a·bᵀ for a weight kept (N × k): the tied LM head's h·Eᵀ.
inline void product_transposed_into(const Matrix& a, const SharedMatrix& b, Matrix& out, int chunks = 0,
                                    ProductKernel kernel = ProductKernel::row_major) {
    const StoredMatrix* stored = b.stored();
    if (stored && kernel == ProductKernel::any_order && a.rows() == 1) stored_row_product_into(a, stored->transpose(), out);
    else if (stored) stored_product_into(a, stored->transpose(), out, ProductKernel::row_major, nullptr, chunks);
    else product_into(a, b.get().transpose(), out, ProductKernel::row_major, chunks);
}

// out = a·b + bias on every row for a weight, float32 or stored.
inline void product_plus_bias_into(const Matrix& a, const SharedMatrix& b, const Matrix& bias, Matrix& out, int chunks = 0,
                                   ProductKernel kernel = ProductKernel::column_major) {
    const StoredMatrix* stored = b.stored();
    if (stored && kernel == ProductKernel::any_order && a.rows() == 1) stored_row_product_into(a, *stored, out, &bias);
    else if (stored) stored_product_into(a, *stored, out, ProductKernel::column_major, &bias, chunks);
    else product_plus_bias_into(a, b.get(), bias, out, chunks, kernel);
}

}  // namespace attn
