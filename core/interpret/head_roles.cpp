#include "interpret/head_roles.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <unordered_set>

#include "tensor/random.hpp"

namespace attn::interpret {

const char* role_key(Role role) {
    switch (role) {
        case Role::PreviousToken: return "previous_token";
        case Role::FirstToken: return "first_token";
        case Role::Self: return "self";
        case Role::DuplicateToken: return "duplicate_token";
        case Role::Induction: return "induction";
    }
    return "";
}

const char* role_name(Role role) {
    switch (role) {
        case Role::PreviousToken: return "previous-token";
        case Role::FirstToken: return "first-token";
        case Role::Self: return "self";
        case Role::DuplicateToken: return "duplicate-token";
        case Role::Induction: return "induction";
    }
    return "";
}

int drawable_tokens(const ProbeVocabulary& v) {
    std::unordered_set<int> excluded;
    for (int id : v.excluded)
        if (id >= 0 && id < v.size) excluded.insert(id);
    return v.size - static_cast<int>(excluded.size());
}

int longest_repeat_length(const ProbeVocabulary& v) {
    int longest = drawable_tokens(v);
    if (v.max_positions > 0) longest = std::min(longest, (v.max_positions - (v.bos ? 1 : 0)) / 2);
    return std::max(0, longest);
}

int default_repeat_length(const ProbeVocabulary& v) { return std::min(kDefaultRepeatLength, longest_repeat_length(v)); }

std::optional<Probe> make_probe(const ProbeVocabulary& v, int repeat_length, std::uint64_t seed, std::string* why) {
    auto refuse = [&](const std::string& reason) -> std::optional<Probe> {
        if (why) *why = reason;
        return std::nullopt;
    };
    const int L = repeat_length;
    if (L < kMinRepeatLength) return refuse("the probe repeats a block of at least " + std::to_string(kMinRepeatLength) + " tokens, not " + std::to_string(L));
    const int drawable = drawable_tokens(v);
    if (L > drawable)
        return refuse("a block of " + std::to_string(L) + " distinct tokens needs that many tokens; the vocabulary has " +
                      std::to_string(drawable) + " that are not special");
    const int length = (v.bos ? 1 : 0) + 2 * L;
    if (v.max_positions > 0 && length > v.max_positions)
        return refuse("a block of " + std::to_string(L) + " twice" + (v.bos ? " after the BOS" : "") + " is " + std::to_string(length) +
                      " tokens; the model reads at most " + std::to_string(v.max_positions));
    std::unordered_set<int> excluded(v.excluded.begin(), v.excluded.end());
    // L distinct tokens: draws that repeat one or hit an excluded id are drawn again. The
    // vocabulary has at least L drawable tokens, so this ends; a small vocabulary (a toy
    // task's letters) is shuffled instead.
    Rng rng(seed);
    auto below = [&](int n) { return static_cast<int>(rng.next_u64() % static_cast<std::uint64_t>(n)); };
    std::vector<int> block;
    if (drawable <= 4 * L) {
        std::vector<int> tokens;
        for (int id = 0; id < v.size; ++id)
            if (excluded.count(id) == 0) tokens.push_back(id);
        for (int i = 0; i < L; ++i) std::swap(tokens[static_cast<size_t>(i)], tokens[static_cast<size_t>(i + below(drawable - i))]);
        block.assign(tokens.begin(), tokens.begin() + L);
    } else {
        std::unordered_set<int> drawn;
        while (static_cast<int>(block.size()) < L) {
            const int id = below(v.size);
            if (excluded.count(id) == 0 && drawn.insert(id).second) block.push_back(id);
        }
    }
    Probe probe;
    probe.repeat_length = L;
    probe.seed = seed;
    probe.bos = v.bos.has_value();
    if (v.bos) probe.ids.push_back(*v.bos);
    probe.ids.insert(probe.ids.end(), block.begin(), block.end());
    probe.ids.insert(probe.ids.end(), block.begin(), block.end());
    return probe;
}

RoleScores score_weights(const Matrix& a, int repeat_length) {
    RoleScores s;
    const Eigen::Index n = std::min(a.rows(), a.cols());
    const Eigen::Index L = repeat_length;
    auto mean = [](double sum, Eigen::Index count) {
        return count > 0 ? static_cast<float>(sum / static_cast<double>(count)) : std::numeric_limits<float>::quiet_NaN();
    };
    double previous = 0, first = 0, self = 0, duplicate = 0, induction = 0;
    for (Eigen::Index i = 0; i < n; ++i) {
        self += a(i, i);
        if (i >= 1) {
            previous += a(i, i - 1);
            first += a(i, 0);
        }
    }
    Eigen::Index second_copy = 0;
    for (Eigen::Index i = std::max<Eigen::Index>(n - L, 0); i < n && L > 0; ++i) {
        if (i - L < 0) continue;  // no earlier copy: a probe shorter than 2L
        duplicate += a(i, i - L);
        induction += a(i, i - L + 1);
        ++second_copy;
    }
    s[Role::PreviousToken] = mean(previous, n - 1);
    s[Role::FirstToken] = mean(first, n - 1);
    s[Role::Self] = mean(self, n);
    s[Role::DuplicateToken] = mean(duplicate, second_copy);
    s[Role::Induction] = mean(induction, second_copy);
    return s;
}

std::vector<HeadRoles> head_roles(const std::vector<Trace>& layers, int repeat_length) {
    std::vector<HeadRoles> roles;
    for (size_t l = 0; l < layers.size(); ++l) {
        const Trace& t = layers[l];
        if (t.settings.delta_net) continue;  // a Gated DeltaNet layer has no softmax weights to score (its implied ones are no distribution)
        for (int h = 0; h < static_cast<int>(t.head.size()); ++h) {
            const Matrix& weights = t.head[static_cast<size_t>(h)].weights;
            if (weights.rows() != t.n_queries || weights.cols() != t.n_keys) return {};
            roles.push_back({{static_cast<int>(l), h}, score_weights(weights, repeat_length)});
        }
    }
    return roles;
}

std::optional<Role> strongest_role(const RoleScores& scores, float threshold) {
    std::optional<Role> best;
    for (Role r : kRoles)
        if (scores[r] >= threshold && (!best || scores[r] > scores[*best])) best = r;
    return best;
}

}  // namespace attn::interpret
