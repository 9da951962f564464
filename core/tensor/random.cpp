#include "tensor/random.hpp"

#include <cmath>

namespace attn {

// splitmix64: tiny, fast, and every seed (0 included) gives a good stream.
Rng::Rng(std::uint64_t seed) : state_(seed) {}

std::uint64_t Rng::next_u64() {
    std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

float Rng::uniform() { return static_cast<float>(next_u64() >> 40) * (1.0f / 16777216.0f); }

float Rng::normal() {
    // Box–Muller on doubles; u1 in (0, 1] so the log is finite.
    double u1 = (static_cast<double>(next_u64() >> 11) + 1.0) * (1.0 / 9007199254740992.0);
    double u2 = static_cast<double>(next_u64() >> 11) * (1.0 / 9007199254740992.0);
    return static_cast<float>(std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2));
}

std::uint64_t hash_text(const std::string& text) {
    std::uint64_t h = 0xcbf29ce484222325ull;
    for (unsigned char c : text) {
        h ^= c;
        h *= 0x100000001b3ull;
    }
    return h;
}

Vector token_embedding(const std::string& token, int d_model) {
    Rng rng(hash_text(token));
    Vector e(d_model);
    for (int j = 0; j < d_model; ++j) e(j) = rng.normal();
    return e;
}

Matrix xavier_uniform(int rows, int cols, std::uint64_t seed) {
    Rng rng(seed);
    const float a = std::sqrt(6.0f / static_cast<float>(rows + cols));
    Matrix m(rows, cols);
    for (int i = 0; i < rows; ++i)
        for (int j = 0; j < cols; ++j) m(i, j) = (2.0f * rng.uniform() - 1.0f) * a;
    return m;
}

Matrix normal_matrix(int rows, int cols, std::uint64_t seed, float stddev) {
    Rng rng(seed);
    Matrix m(rows, cols);
    for (int i = 0; i < rows; ++i)
        for (int j = 0; j < cols; ++j) m(i, j) = stddev * rng.normal();
    return m;
}

// [SECTION] NumPy's legacy RandomState: MT19937 seeded by init_genrand.
NumpyLegacyRandom::NumpyLegacyRandom(std::uint32_t seed) {
    mt_[0] = seed;
    for (int i = 1; i < 624; ++i)
        mt_[i] = 1812433253u * (mt_[i - 1] ^ (mt_[i - 1] >> 30)) + static_cast<std::uint32_t>(i);
    index_ = 624;
}

std::uint32_t NumpyLegacyRandom::next_u32() {
    if (index_ >= 624) {
        for (int i = 0; i < 624; ++i) {
            std::uint32_t y = (mt_[i] & 0x80000000u) | (mt_[(i + 1) % 624] & 0x7fffffffu);
            mt_[i] = mt_[(i + 397) % 624] ^ (y >> 1) ^ ((y & 1u) ? 0x9908b0dfu : 0u);
        }
        index_ = 0;
    }
    std::uint32_t y = mt_[index_++];
    y ^= y >> 11;
    y ^= (y << 7) & 0x9d2c5680u;
    y ^= (y << 15) & 0xefc60000u;
    y ^= y >> 18;
    return y;
}

double NumpyLegacyRandom::random_sample() {
    // 53-bit double from two draws, as numpy's random_double.
    const std::uint32_t a = next_u32() >> 5, b = next_u32() >> 6;
    return (a * 67108864.0 + b) / 9007199254740992.0;
}

double NumpyLegacyRandom::gauss() {
    if (has_gauss_) {
        has_gauss_ = false;
        return cached_gauss_;
    }
    double x1, x2, r2;
    do {
        x1 = 2.0 * random_sample() - 1.0;
        x2 = 2.0 * random_sample() - 1.0;
        r2 = x1 * x1 + x2 * x2;
    } while (r2 >= 1.0 || r2 == 0.0);
    const double f = std::sqrt(-2.0 * std::log(r2) / r2);
    cached_gauss_ = f * x1;
    has_gauss_ = true;
    return f * x2;
}

Matrix NumpyLegacyRandom::randn(int rows, int cols) {
    Matrix m(rows, cols);
    for (int i = 0; i < rows; ++i)
        for (int j = 0; j < cols; ++j) m(i, j) = static_cast<float>(gauss());
    return m;
}

}  // namespace attn
