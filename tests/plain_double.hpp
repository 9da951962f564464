#pragma once
// The largest gap between an engine's float32 matrix and a plain loop's double one, for the tests
// that write a mechanism out from its formula (Gated DeltaNet, differential attention); a shape that
// differs fails the test.
#include <catch2/catch.hpp>

#include <Eigen/Dense>

#include "tensor/matrix.hpp"

namespace attn::testing {

inline double max_gap(const Matrix& got, const Eigen::MatrixXd& want) {
    REQUIRE(got.rows() == want.rows());
    REQUIRE(got.cols() == want.cols());
    return (got.cast<double>() - want).cwiseAbs().maxCoeff();
}

}  // namespace attn::testing
