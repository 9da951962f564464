#include "generate/sampler.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <sstream>

namespace attn::generate {

namespace {

std::string number(float v) {
    std::ostringstream out;
    out << v;
    return out.str();
}

// softmax(logits / temperature), summed in double; the logits are finite.
std::vector<float> softmax_of(const Matrix& logits, double temperature) {
    const Eigen::Index v = logits.cols();
    double max = -HUGE_VAL;
    for (Eigen::Index i = 0; i < v; ++i) max = std::max(max, static_cast<double>(logits(0, i)) / temperature);
    std::vector<double> e(static_cast<size_t>(v));
    double sum = 0.0;
    for (Eigen::Index i = 0; i < v; ++i) {
        e[static_cast<size_t>(i)] = std::exp(static_cast<double>(logits(0, i)) / temperature - max);
        sum += e[static_cast<size_t>(i)];
    }
    std::vector<float> p(static_cast<size_t>(v));
    for (size_t i = 0; i < p.size(); ++i) p[i] = static_cast<float>(e[i] / sum);
    return p;
}

// The distribution and the kept set, without the draw.
std::optional<Sampled> distribution(const Matrix& logits, const SamplerSettings& s, std::string* why) {
    const std::vector<std::string> faults = validate(s);
    if (!faults.empty()) {
        if (why) *why = faults.front();
        return std::nullopt;
    }
    if (logits.rows() != 1 || logits.cols() == 0) {
        if (why) *why = "the logits are " + std::to_string(logits.rows()) + " × " + std::to_string(logits.cols()) + ", not one row";
        return std::nullopt;
    }
    for (Eigen::Index i = 0; i < logits.cols(); ++i)
        if (!std::isfinite(logits(0, i))) {
            if (why)
                *why = "the logit of token " + std::to_string(i) + " is " + number(logits(0, i)) +
                       ": no distribution can be made of logits that are not all finite";
            return std::nullopt;
        }
    Sampled out;
    out.probability = softmax_of(logits, 1.0);
    out.tempered = s.greedy() || s.temperature == 1.0f ? out.probability : softmax_of(logits, s.temperature);
    const int v = static_cast<int>(logits.cols());
    if (s.greedy()) {
        out.kept = ranked(out.probability, 1);
    } else {
        out.kept = ranked(out.tempered, v);
        if (s.top_k > 0 && s.top_k < v) {
            out.kept.resize(static_cast<size_t>(s.top_k));
            out.top_k_cut = s.top_k;
        } else if (s.top_k > 0) {
            out.top_k_cut = v;
        }
        if (s.top_p < 1.0f) {
            double cumulative = 0.0;
            size_t keep = 0;
            while (keep < out.kept.size()) {
                cumulative += out.tempered[static_cast<size_t>(out.kept[keep])];
                ++keep;
                if (cumulative >= static_cast<double>(s.top_p)) break;
            }
            out.kept.resize(std::max<size_t>(keep, 1));
            out.top_p_cut = static_cast<int>(out.kept.size());
        }
    }
    double total = 0.0;
    for (int id : out.kept) total += out.tempered[static_cast<size_t>(id)];
    for (int id : out.kept)
        out.kept_probability.push_back(total > 0.0 ? static_cast<float>(out.tempered[static_cast<size_t>(id)] / total) : 0.0f);
    return out;
}

}  // namespace

std::vector<std::string> validate(const SamplerSettings& s) {
    std::vector<std::string> faults;
    if (!(s.temperature >= 0.0f) || !std::isfinite(s.temperature))
        faults.push_back("temperature is " + number(s.temperature) + ": it must be 0 (greedy) or more, and finite");
    if (s.top_k < 0) faults.push_back("top-k is " + std::to_string(s.top_k) + ": it must be 1 or more (0: off)");
    if (!(s.top_p > 0.0f && s.top_p <= 1.0f)) faults.push_back("top-p is " + number(s.top_p) + ": it must be in (0, 1]");
    return faults;
}

std::vector<int> ranked(const std::vector<float>& p, int count) {
    std::vector<int> ids(p.size());
    std::iota(ids.begin(), ids.end(), 0);
    const auto better = [&p](int a, int b) {
        const float pa = p[static_cast<size_t>(a)], pb = p[static_cast<size_t>(b)];
        return pa != pb ? pa > pb : a < b;
    };
    const size_t n = std::min(ids.size(), static_cast<size_t>(std::max(count, 0)));
    std::partial_sort(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(n), ids.end(), better);
    ids.resize(n);
    return ids;
}

float draw_for(std::uint64_t seed, int position) {
    Rng rng(seed ^ (0x9E3779B97F4A7C15ull * (static_cast<std::uint64_t>(position) + 1)));
    return rng.uniform();
}

std::optional<Sampled> sample(const Matrix& logits, const SamplerSettings& s, int position, std::string* why) {
    std::optional<Sampled> out = distribution(logits, s, why);
    if (!out) return out;
    if (s.greedy()) {
        out->chosen = out->kept.front();
        return out;
    }
    out->draw = draw_for(s.seed, position);
    double cumulative = 0.0;
    out->chosen = out->kept.back();  // u below 1 always lands; rounding of the sum may leave it past the last
    for (size_t i = 0; i < out->kept.size(); ++i) {
        cumulative += out->kept_probability[i];
        if (static_cast<double>(out->draw) < cumulative) {
            out->chosen = out->kept[i];
            break;
        }
    }
    return out;
}

std::optional<Sampled> preview(const Matrix& logits, const SamplerSettings& s, std::string* why) { return distribution(logits, s, why); }

std::optional<Sampled> choose(const Matrix& logits, const SamplerSettings& s, int token, std::string* why) {
    if (token < 0 || token >= logits.cols()) {
        if (why) *why = "token " + std::to_string(token) + " is not one of the model's " + std::to_string(logits.cols());
        return std::nullopt;
    }
    std::optional<Sampled> out = distribution(logits, s, why);
    if (!out) return out;
    out->chosen = token;
    out->forced = true;
    return out;
}

}  // namespace attn::generate
