#include "tensor/matrix.hpp"

#include <cmath>

namespace attn {

Cell first_non_finite(const Matrix& m) {
    for (Eigen::Index i = 0; i < m.rows(); ++i)
        for (Eigen::Index j = 0; j < m.cols(); ++j)
            if (!std::isfinite(m(i, j))) return {static_cast<int>(i), static_cast<int>(j)};
    return {};
}

}  // namespace attn
