#pragma once
// Conventions, stated once for the whole project:
//  * Every matrix is float32 and row-major: Eigen's RowMajor storage, so .data() is the
//    memory layout a GPU buffer or a texture expects, and a JSON matrix is an array of rows.
//  * One token is one row. X is (n × d_model); Q and K are (n × d_k); V is (n × d_v);
//    scores and weights are (n_queries × n_keys): row i is what query i sees.
//  * Multi-head: W_Q, W_K, W_V are (d_model × d_model) and head h owns columns
//    [h·d_k, (h+1)·d_k). The concatenation of head outputs follows the same layout, and
//    W_O is (h·d_v × d_model).
// GCC 12's own AVX-512 intrinsics initialise a variable from itself (`__m512 __Y = __Y;`,
// GCC bug 105593) and warn about it wherever Eigen inlines them; the pragmas silence that
// warning for the intrinsic headers only, not for the project's code.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop
#endif
#include <Eigen/Dense>

namespace attn {

using Matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using Vector = Eigen::Matrix<float, 1, Eigen::Dynamic, Eigen::RowMajor>;
// true = query i may attend to key j.
using MaskMatrix = Eigen::Array<bool, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// Position of the first non-finite entry, or {-1,-1}.
struct Cell {
    int row = -1;
    int col = -1;
    bool valid() const { return row >= 0; }
};
Cell first_non_finite(const Matrix& m);

}  // namespace attn
