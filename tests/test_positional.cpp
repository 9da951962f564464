#include <catch2/catch.hpp>

#include <cmath>

#include "attention/attention_rules.hpp"
#include "attention/positional.hpp"
#include "tensor/random.hpp"

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

namespace {

// Hugging Face's rotary embedding, written out: inverse frequencies in float32, the angle
// float(p)·f_i, q·cos + rotate_half(q)·sin on the first r dimensions (or the interleaved pairs).
Matrix hf_rotary(const Matrix& m, const std::vector<double>& inv_freq, bool rotate_half) {
    Matrix out = m;
    const int pairs = static_cast<int>(inv_freq.size());
    for (Eigen::Index p = 0; p < m.rows(); ++p)
        for (int i = 0; i < pairs; ++i) {
            const float angle = static_cast<float>(p) * static_cast<float>(inv_freq[static_cast<size_t>(i)]);
            const double c = std::cos(angle), s = std::sin(angle);
            const int a = rotate_half ? i : 2 * i, b = rotate_half ? i + pairs : 2 * i + 1;
            out(p, a) = static_cast<float>(m(p, a) * c - m(p, b) * s);
            out(p, b) = static_cast<float>(m(p, b) * c + m(p, a) * s);
        }
    return out;
}

std::vector<double> plain_inverse_frequencies(double theta, int r) {
    std::vector<double> f;
    for (int i = 0; i < r / 2; ++i) f.push_back(1.0 / std::pow(theta, 2.0 * i / r));
    return f;
}

}  // namespace

TEST_CASE("RoPE's variants turn q as Hugging Face's rotary embedding does", "[rope]") {
    const Matrix m = normal_matrix(40, 8, 3);
    SECTION("rotate_half, base 500000") {
        RopeOptions rope;
        rope.pairing = RopePairing::RotateHalf;
        rope.theta = 500000.0f;
        const Matrix got = apply_rotary(m, rope), want = hf_rotary(m, plain_inverse_frequencies(500000.0, 8), true);
        CHECK((got - want).cwiseAbs().maxCoeff() <= 2e-5f);
        CHECK(got.row(0) == m.row(0));  // position 0 turns nothing
        for (int p = 0; p < 40; ++p) CHECK_THAT(got.row(p).norm(), WithinAbs(m.row(p).norm(), 1e-4));
    }
    SECTION("Pythia's partial rotary: the first 4 of 8 dimensions, the rest as they are") {
        RopeOptions rope;
        rope.pairing = RopePairing::RotateHalf;
        rope.rotary_dims = 4;
        const Matrix got = apply_rotary(m, rope);
        Matrix want = m;
        want.leftCols(4) = hf_rotary(m.leftCols(4), plain_inverse_frequencies(10000.0, 4), true);
        CHECK((got - want).cwiseAbs().maxCoeff() <= 2e-5f);
        CHECK(got.rightCols(4) == m.rightCols(4));
    }
    SECTION("interleaved with another base differs from rotate_half") {
        RopeOptions rope;
        rope.theta = 1000.0f;
        const Matrix interleaved = apply_rotary(m, rope);
        CHECK((interleaved - hf_rotary(m, plain_inverse_frequencies(1000.0, 8), false)).cwiseAbs().maxCoeff() <= 2e-5f);
        rope.pairing = RopePairing::RotateHalf;
        CHECK((apply_rotary(m, rope) - interleaved).cwiseAbs().maxCoeff() > 0.1f);
    }
    SECTION("the default options are the app's own rotation, bit for bit") {
        CHECK(apply_rotary(m, RopeOptions{}) == apply_rotary(m));
        CHECK(rotate_row(m.row(7), 7, RopeOptions{}, 8) == rotate_row(m.row(7), 7));
    }
}

TEST_CASE("Llama 3's RoPE scaling: long wavelengths ÷ factor, short ones kept, a blend between", "[rope]") {
    RopeOptions rope;
    rope.pairing = RopePairing::RotateHalf;
    rope.theta = 500000.0f;
    rope.scaling = RopeScalingKind::Llama3;
    rope.factor = 32.0f;  // Llama 3.2
    rope.low_freq_factor = 1.0f;
    rope.high_freq_factor = 4.0f;
    rope.original_max_positions = 8192;
    const std::vector<float> scaled = rope_inverse_frequencies(rope, 64, 0);
    const std::vector<double> plain = plain_inverse_frequencies(500000.0, 64);
    REQUIRE(scaled.size() == 32);
    int kept = 0, divided = 0, blended = 0;
    for (size_t i = 0; i < plain.size(); ++i) {
        const double wavelen = 2 * M_PI / plain[i];
        double want = plain[i];
        if (wavelen > 8192.0) {
            want = plain[i] / 32.0;
            ++divided;
        } else if (wavelen >= 8192.0 / 4.0) {
            const double smooth = (8192.0 / wavelen - 1.0) / (4.0 - 1.0);
            want = (1 - smooth) * plain[i] / 32.0 + smooth * plain[i];
            ++blended;
        } else {
            ++kept;
        }
        INFO("pair " << i);
        CHECK(std::abs(scaled[i] - want) <= 1e-5 * want);
    }
    CHECK(kept > 0);
    CHECK(divided > 0);
    CHECK(blended > 0);
    rope.scaling = RopeScalingKind::Linear;
    rope.factor = 8.0f;
    CHECK(std::abs(rope_inverse_frequencies(rope, 64, 0)[5] - plain[5] / 8.0) <= 1e-5 * plain[5]);
}

TEST_CASE("YaRN: fast pairs kept, slow ones ÷ factor, a linear ramp between, the same table at every length", "[rope]") {
    // gpt-oss-20b: θ 150000, head_dim 64, factor 32, beta_fast 32, beta_slow 1, trained on 4096,
    // truncate false. The ramp runs from dim 8.0928 to 17.398 (the dims turning 32 and 1 times in
    // 4096 positions); the expected values are _compute_yarn_parameters' formula in float64.
    RopeOptions rope;
    rope.pairing = RopePairing::RotateHalf;
    rope.theta = 150000.0f;
    rope.scaling = RopeScalingKind::Yarn;
    rope.factor = 32.0f;
    rope.original_max_positions = 4096;
    rope.truncate = false;
    const std::vector<std::pair<int, double>> expected = {{0, 1.0},
                                                          {8, 0.050813274815461475},
                                                          {9, 0.03170569618466377},
                                                          {10, 0.019335001126540362},
                                                          {12, 0.006794959489732219},
                                                          {16, 0.00045648391922324086},
                                                          {17, 0.00012931870124506317},
                                                          {20, 1.818833668168956e-05},
                                                          {31, 3.0235114281192144e-07}};
    const std::vector<double> plain = plain_inverse_frequencies(150000.0, 64);
    for (int length : {1, 5000}) {  // no switch at the original length (LongRoPE's), one table
        const std::vector<float> f = rope_inverse_frequencies(rope, 64, length);
        REQUIRE(f.size() == 32);
        for (const auto& [pair, want] : expected) {
            INFO("pair " << pair);
            CHECK(std::abs(f[static_cast<size_t>(pair)] - want) <= 2e-6 * want);
        }
        CHECK(f[8] == Approx(plain[8]).epsilon(1e-6));          // before the ramp: kept
        CHECK(f[20] == Approx(plain[20] / 32.0).epsilon(1e-6)); // after it: interpolated
    }
    // truncate (the default) rounds the ramp's ends out to dims 8 and 18: pair 9 moves on it
    rope.truncate = true;
    const double ramp = (9.0 - 8.0) / (18.0 - 8.0);
    CHECK(rope_inverse_frequencies(rope, 64, 1)[9] == Approx(plain[9] / 32.0 * ramp + plain[9] * (1 - ramp)).epsilon(2e-6));
}

TEST_CASE("LongRoPE: each pair's frequency ÷ its short factor up to the original length, its long one beyond, and cos and sin × the attention factor",
          "[rope]") {
    RopeOptions rope;
    rope.pairing = RopePairing::RotateHalf;
    rope.scaling = RopeScalingKind::LongRope;
    rope.rotary_dims = 6;  // of d_k 8: dims 6 and 7 pass
    rope.original_max_positions = 4;
    rope.short_factor = Vector::Constant(3, 1.0f);
    rope.long_factor = (Vector(3) << 1.5f, 4.0f, 20.0f).finished();
    const std::vector<double> plain = plain_inverse_frequencies(10000.0, 6);
    for (int length : {1, 4, 5, 100}) {
        INFO(length << " tokens");
        CHECK(long_rope_factors(rope, length) == (length > 4));
        const std::vector<float> f = rope_inverse_frequencies(rope, 8, length);
        REQUIRE(f.size() == 3);
        for (size_t i = 0; i < 3; ++i) {
            const double want = plain[i] / (length > 4 ? rope.long_factor(static_cast<Eigen::Index>(i)) : 1.0);
            CHECK(std::abs(f[i] - want) <= 1e-6 * want);
        }
    }
    // The attention factor a multiplies cos and sin: the turned dims grow by a, the others stay
    const Vector row = (Vector(8) << 0.3f, -1.2f, 0.8f, 0.5f, 2.0f, -0.7f, 1.5f, -0.25f).finished();
    rope.attention_factor = 1.25f;
    CHECK_FALSE(default_rope(rope));
    for (int length : {4, 9}) {
        const Vector turned = rotate_row(row, 3, rope, length);
        CHECK(turned.head(6).norm() == Approx(1.25 * row.head(6).norm()).epsilon(1e-5));
        CHECK(turned(6) == row(6));
        CHECK(turned(7) == row(7));
    }
    // A whole pass is turned for its own length: 5 rows take the long factors, 4 the short
    Matrix m(5, 8);
    for (int r = 0; r < 5; ++r) m.row(r) = row * static_cast<float>(r + 1);
    const Matrix five = apply_rotary(m, rope), four = apply_rotary(m.topRows(4), rope);
    CHECK(five.row(3) == rotate_row(m.row(3), 3, rope, 5));
    CHECK(four.row(3) == rotate_row(m.row(3), 3, rope, 4));
    CHECK((five.row(3) - four.row(3)).cwiseAbs().maxCoeff() > 1e-3f);
}

TEST_CASE("One position's turn, computed once for every head, turns a row as rotate_row does, bit for bit", "[rope]") {
    const Vector row = (Vector(8) << 0.3f, -1.2f, 0.8f, 0.5f, 2.0f, -0.7f, 1.5f, -0.25f).finished();
    RopeOptions plain;  // the default rotation
    RopeOptions half;   // rotate_half, another base, two dims left unturned
    half.pairing = RopePairing::RotateHalf;
    half.theta = 500.0f;
    half.rotary_dims = 6;
    RopeOptions yarn = half;
    yarn.rotary_dims = 0;
    yarn.scaling = RopeScalingKind::Yarn;
    yarn.factor = 32.0f;
    yarn.original_max_positions = 16;
    yarn.attention_factor = static_cast<float>(yarn_mscale(32.0));
    RopeOptions longrope = half;
    longrope.scaling = RopeScalingKind::LongRope;
    longrope.original_max_positions = 4;
    longrope.short_factor = Vector::Constant(3, 1.0f);
    longrope.long_factor = (Vector(3) << 1.5f, 4.0f, 20.0f).finished();
    longrope.attention_factor = 1.25f;
    for (const auto& [name, rope] : {std::pair{"default", plain}, std::pair{"rotate_half", half}, std::pair{"yarn", yarn},
                                     std::pair{"longrope", longrope}})
        for (int position : {0, 3, 5, 40})
            for (int length : {position + 1, 100}) {
                INFO(name << " at " << position << " of " << length);
                const Vector turned = rotate_row(row, row_turn(rope, 8, position, length));
                CHECK(turned == rotate_row(row, position, rope, length));
                if (position > 0) CHECK(turned != row);
            }
}
