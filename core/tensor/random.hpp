#pragma once
// Deterministic numbers: the same seed gives the same numbers on every machine and
// compiler (std::*_distribution does not promise that, so the generator is written here).
#include <cstdint>
#include <string>

#include "tensor/matrix.hpp"

namespace attn {

class Rng {
public:
    explicit Rng(std::uint64_t seed);
    std::uint64_t next_u64();
    float uniform();          // [0, 1)
    float normal();           // N(0, 1), Box–Muller
private:
    std::uint64_t state_;
};

std::uint64_t hash_text(const std::string& text);   // FNV-1a, 64 bits

// The embedding of a token: N(0, 1) components seeded from its text, so the same text
// always gives the same vector; dimension j does not depend on d_model (prefix-stable).
Vector token_embedding(const std::string& token, int d_model);

// Xavier/Glorot uniform: U(−a, a), a = √(6 / (rows + cols)).
Matrix xavier_uniform(int rows, int cols, std::uint64_t seed);
Matrix normal_matrix(int rows, int cols, std::uint64_t seed, float stddev = 1.0f);

// NumPy's legacy global generator (np.random.seed(s); np.random.randn(rows, cols)):
// MT19937 and the polar Box–Muller method, so the articles' NumPy examples replay exactly.
class NumpyLegacyRandom {
public:
    explicit NumpyLegacyRandom(std::uint32_t seed);
    double random_sample();
    double gauss();
    Matrix randn(int rows, int cols);
private:
    std::uint32_t mt_[624];
    int index_;
    bool has_gauss_ = false;
    double cached_gauss_ = 0.0;
    std::uint32_t next_u32();
};

}  // namespace attn
