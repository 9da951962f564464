#pragma once
// What each head does, scored on a probe (the head detectors of interpretability work:
// Elhage et al. 2021, Olsson et al. 2022, TransformerLens's detect_head). The probe is the
// tokenizer's BOS when it adds one, then a block of L random tokens, then the same block
// again. Each score is the mean of one diagonal of a head's softmax weights A (n × n),
// positions counted from 0, the second copy being the probe's last L positions:
//
//   previous_token    mean over i ≥ 1 of A[i, i−1]               the token just before
//   first_token       mean over i ≥ 1 of A[i, 0]                 the first token (a sink)
//   self              mean over every i of A[i, i]               the token itself
//   duplicate_token   mean over the second copy's i of A[i, i−L]    the same token, earlier
//   induction         mean over the second copy's i of A[i, i−L+1]  the token after it
//
// A previous-token head in one layer and an induction head after it are the two halves of
// the induction circuit: "… A B … A → B".
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tensor/matrix.hpp"
#include "model/stack.hpp"
#include "attention/trace.hpp"

namespace attn::interpret {

enum class Role { PreviousToken, FirstToken, Self, DuplicateToken, Induction };
constexpr int kRoleCount = 5;
constexpr std::array<Role, kRoleCount> kRoles = {Role::PreviousToken, Role::FirstToken, Role::Self, Role::DuplicateToken,
                                                 Role::Induction};
const char* role_key(Role role);   // the export's key: "previous_token", "first_token", …
const char* role_name(Role role);  // as the grid says it: "previous-token", "first-token", …

struct RoleScores {
    std::array<float, kRoleCount> values{};
    float operator[](Role role) const { return values[static_cast<size_t>(role)]; }
    float& operator[](Role role) { return values[static_cast<size_t>(role)]; }
};

// What a probe is drawn from.
struct ProbeVocabulary {
    int size = 0;                 // ids [0, size): the embedding's rows (and the tokenizer's)
    std::vector<int> excluded;    // special tokens and ids no token has: never drawn
    std::optional<int> bos;       // the tokenizer's BOS, when it adds one before a text
    int max_positions = 0;        // the longest sequence the model reads; 0: no table limits it
};

struct Probe {
    std::vector<int> ids;         // [BOS] block block
    int repeat_length = 0;        // L
    std::uint64_t seed = 0;
    bool bos = false;             // ids[0] is the BOS
};

constexpr int kMinRepeatLength = 4;
constexpr int kDefaultRepeatLength = 20;
// The tokens the block may hold: [0, size) less the excluded ids.
int drawable_tokens(const ProbeVocabulary& vocabulary);
// The longest L the model and the vocabulary allow: the probe fits the positions, and the
// block's tokens are distinct (a token twice in a block would make "the same token earlier"
// ambiguous).
int longest_repeat_length(const ProbeVocabulary& vocabulary);
// 20, or the longest the model allows when that is fewer.
int default_repeat_length(const ProbeVocabulary& vocabulary);
// L distinct tokens drawn with the seed (the same on every machine), twice, after the BOS.
// None, with why, when L < 4 or L is more than the model or the vocabulary allows.
std::optional<Probe> make_probe(const ProbeVocabulary& vocabulary, int repeat_length, std::uint64_t seed, std::string* why);

// One head's scores from its softmax weights A (n × n) on a probe whose last L positions
// repeat the L before them. A row that is not all finite gives NaN to each score that reads it.
RoleScores score_weights(const Matrix& weights, int repeat_length);

struct HeadRoles {
    stack::HeadId head;           // layer and query head, from 0
    RoleScores scores;
};
// Every layer's query heads, in order (layer, then head), from the traces of a probe's pass.
// Empty when a trace keeps no (n × n) weights (an output-only run).
std::vector<HeadRoles> head_roles(const std::vector<Trace>& layers, int repeat_length);
// The role with the highest score at or above `threshold`, or none.
std::optional<Role> strongest_role(const RoleScores& scores, float threshold);

}  // namespace attn::interpret
