#pragma once
// What every backend guarantees about the naive softmax's overflow (core/attention/softmax.hpp,
// docs/conventions.md), checked between a reference trace (the CPU engine in full) and
// another backend's run of the same scenario:
//  - both flag the overflow on the same heads;
//  - a row far from the float limit (naive_row_far_from_overflow: no term within reach of
//    it) agrees within `tolerance` and is finite;
//  - a row within reach of the limit is not compared: exp is rounded differently on each
//    backend (GLSL allows 3 + 2·|x| ULP), and that decides whether its sum overflows.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

#include "attention/softmax.hpp"
#include "attention/trace.hpp"

namespace attn::testing {

struct OverflowRows {
    int compared = 0;      // rows far from the limit, compared
    int within_reach = 0;  // rows within reach of it, not compared
    int nan_rows = 0;      // of those, NaN on either side
};

inline OverflowRows check_overflow_agreement(const Trace& reference, const Trace& other, float tolerance) {
    OverflowRows rows;
    REQUIRE(reference.detail == Detail::Full);  // its masked scores give each row's largest
    REQUIRE(other.head.size() == reference.head.size());
    for (size_t h = 0; h < reference.head.size(); ++h) {
        INFO("head " << h + 1);
        const HeadTrace& want = reference.head[h];
        const Matrix& got = other.head[h].output;
        CHECK(other.head[h].softmax_overflow == want.softmax_overflow);
        REQUIRE(got.rows() == want.output.rows());
        REQUIRE(got.cols() == want.output.cols());
        const int n_keys = static_cast<int>(want.masked_scores.cols());
        for (Eigen::Index i = 0; i < want.output.rows(); ++i) {
            const float row_max = want.masked_scores.row(i).maxCoeff();
            if (naive_row_far_from_overflow(row_max, n_keys)) {
                INFO("row " << i + 1 << ", largest score " << row_max);
                CHECK(got.row(i).allFinite());
                CHECK((got.row(i) - want.output.row(i)).cwiseAbs().maxCoeff() <= tolerance);
                ++rows.compared;
            } else {
                ++rows.within_reach;
                rows.nan_rows += !got.row(i).allFinite() || !want.output.row(i).allFinite();
            }
        }
    }
    return rows;
}

}  // namespace attn::testing
