#include <catch2/catch.hpp>

#include <cmath>

#include "attention_rules.hpp"
#include "positional.hpp"
#include "random.hpp"

using namespace attn;
using Catch::Matchers::WithinAbs;

TEST_CASE("sinusoidal encoding follows the 2017 formula / pairs sharing one frequency") {
    const int d = 16;
    const Matrix pe = sinusoidal_encoding(50, d);
    for (int p : {0, 1, 7, 49})
        for (int i = 0; i < d / 2; ++i) {
            const double angle = p / std::pow(10000.0, 2.0 * i / d);
            CHECK_THAT(pe(p, 2 * i), WithinAbs(std::sin(angle), 1e-6));
            CHECK_THAT(pe(p, 2 * i + 1), WithinAbs(std::cos(angle), 1e-6));
        }
}

TEST_CASE("learned encoding is seeded and prefix-stable") {
    const Matrix a = learned_encoding(5, 8, 3), b = learned_encoding(9, 8, 3), c = learned_encoding(5, 8, 4);
    CHECK(a == b.topRows(5));
    CHECK(a != c);
}

TEST_CASE("rotary encoding preserves each row's length") {
    const Matrix m = normal_matrix(10, 8, 1);
    const Matrix r = apply_rotary(m);
    for (int i = 0; i < 10; ++i) CHECK_THAT(r.row(i).norm(), WithinAbs(m.row(i).norm(), 1e-5));
}

TEST_CASE("ALiBi slopes form the geometric sequence of the paper") {
    CHECK(alibi_slope(0, 8) == Approx(0.5));
    CHECK(alibi_slope(7, 8) == Approx(1.0 / 256));
    const Matrix b = alibi_terms(0.5f, 3, 4);
    CHECK(b(0, 3) == Approx(-1.5));
    CHECK(b(2, 2) == 0.0f);
}
