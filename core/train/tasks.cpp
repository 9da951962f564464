#include "train/tasks.hpp"

#include <algorithm>
#include <numeric>

namespace attn::train {

namespace {

struct TaskName {
    TaskKind kind;
    const char* name;
};
constexpr TaskName kTaskNames[] = {
    {TaskKind::Copy, "copy"},           {TaskKind::Reverse, "reverse"},
    {TaskKind::Sort, "sort"},           {TaskKind::Induction, "induction"},
    {TaskKind::PreviousToken, "previous-token"}, {TaskKind::CrossReverse, "cross-reverse"},
};

int random_below(Rng& rng, int n) { return static_cast<int>(rng.next_u64() % static_cast<std::uint64_t>(n)); }

}  // namespace

const char* to_string(TaskKind kind) {
    for (const TaskName& t : kTaskNames)
        if (t.kind == kind) return t.name;
    return "?";
}

std::optional<TaskKind> task_from_string(const std::string& name) {
    for (const TaskName& t : kTaskNames)
        if (name == t.name) return t.kind;
    return std::nullopt;
}

std::vector<TaskKind> all_tasks() {
    std::vector<TaskKind> kinds;
    for (const TaskName& t : kTaskNames) kinds.push_back(t.kind);
    return kinds;
}

std::vector<std::string> validate(const TaskOptions& o) {
    std::vector<std::string> errors;
    if (o.length < 2 || o.length > 64)
        errors.push_back("task length is " + std::to_string(o.length) + ": expected 2 to 64 content tokens");
    if (o.symbols < 2 || o.symbols > 26)
        errors.push_back("task symbols is " + std::to_string(o.symbols) + ": expected 2 to 26 letters");
    if (o.kind == TaskKind::Induction && o.symbols <= o.length)
        errors.push_back("induction draws " + std::to_string(o.length) + " distinct tokens and fills the gap with others: it needs more symbols than that, not " +
                         std::to_string(o.symbols));
    return errors;
}

std::vector<std::string> task_vocabulary(const TaskOptions& o) {
    std::vector<std::string> vocabulary;
    for (int i = 0; i < o.symbols; ++i) vocabulary.push_back(std::string(1, static_cast<char>('a' + i)));
    vocabulary.push_back("|");
    return vocabulary;
}

int separator_id(const TaskOptions& o) { return o.symbols; }

AttentionKind task_attention(TaskKind kind) {
    return kind == TaskKind::CrossReverse ? AttentionKind::Cross : AttentionKind::Self;
}

int target_length(const TaskOptions& o) {
    switch (o.kind) {
        case TaskKind::Induction: return 3 * o.length - 2;  // the longest: a gap of m − 1
        case TaskKind::PreviousToken:
        case TaskKind::CrossReverse: return o.length;
        default: return 2 * o.length;
    }
}

int source_length(const TaskOptions& o) { return o.kind == TaskKind::CrossReverse ? o.length : 0; }

void fit_model_to_task(const TaskOptions& o, ModelConfig& config) {
    config.vocab_size = o.symbols + 1;
    config.max_positions = std::max(target_length(o), source_length(o));
    config.attention = task_attention(o.kind);
}

namespace {

// The example for content s (and, for induction, the gap's filler letters).
Example example_of(const TaskOptions& o, std::vector<int> s, const std::vector<int>& fillers) {
    const int m = o.length;
    const int separator = separator_id(o);
    Example e;
    const int n = target_length(o);
    e.scored.assign(static_cast<size_t>(n), false);
    e.expected_key.assign(static_cast<size_t>(n), -1);
    auto next_token = [&](const std::vector<int>& full) {  // read full[0 .. L−1), predict full[1 .. L)
        e.input.tokens.assign(full.begin(), full.end() - 1);
        e.targets.assign(full.begin() + 1, full.end());
    };
    auto at = [](std::vector<int>& v, int i) -> int& { return v[static_cast<size_t>(i)]; };
    switch (o.kind) {
        case TaskKind::Copy:
        case TaskKind::Reverse:
        case TaskKind::Sort: {
            std::vector<int> second = s;
            if (o.kind == TaskKind::Reverse) std::reverse(second.begin(), second.end());
            if (o.kind == TaskKind::Sort) std::sort(second.begin(), second.end());
            std::vector<int> full = s;
            full.push_back(separator);
            full.insert(full.end(), second.begin(), second.end());
            next_token(full);
            std::vector<bool> emitted(static_cast<size_t>(m), false);
            for (int j = 0; j < m; ++j) {
                e.scored[static_cast<size_t>(m + j)] = true;  // row m+j (the separator, then the answers so far) predicts second[j]
                int key = o.kind == TaskKind::Copy ? j : m - 1 - j;
                if (o.kind == TaskKind::Sort) {
                    key = -1;  // the first source position holding second[j] not yet emitted
                    for (int i = 0; i < m && key < 0; ++i)
                        if (!emitted[static_cast<size_t>(i)] && at(s, i) == at(second, j)) key = i;
                    emitted[static_cast<size_t>(key)] = true;
                }
                at(e.expected_key, m + j) = key;
            }
            break;
        }
        case TaskKind::Induction: {
            // r, then g ∈ [0, m) filler letters not in r, then r again: the distance between
            // the two occurrences varies, so no fixed positional offset finds the earlier one.
            const int gap = static_cast<int>(fillers.size());
            std::vector<int> full = s;
            full.insert(full.end(), fillers.begin(), fillers.end());
            full.insert(full.end(), s.begin(), s.end());
            next_token(full);
            const int length = static_cast<int>(e.input.tokens.size());
            e.scored.assign(static_cast<size_t>(length), false);
            e.expected_key.assign(static_cast<size_t>(length), -1);
            for (int j = 0; j + 1 < m; ++j) {
                e.scored[static_cast<size_t>(m + gap + j)] = true;  // row m+g+j reads r_j again and predicts r_{j+1}
                at(e.expected_key, m + gap + j) = j + 1;            // the token after r_j's first occurrence
            }
            break;
        }
        case TaskKind::PreviousToken: {
            e.input.tokens = s;
            e.targets = s;
            for (int i = 1; i < m; ++i) {
                at(e.targets, i) = at(s, i - 1);
                e.scored[static_cast<size_t>(i)] = true;
                at(e.expected_key, i) = i - 1;
            }
            break;
        }
        case TaskKind::CrossReverse: {
            e.input.source = s;
            e.input.tokens.assign(static_cast<size_t>(m), separator);
            e.targets.assign(s.rbegin(), s.rend());
            for (int j = 0; j < m; ++j) {
                e.scored[static_cast<size_t>(j)] = true;
                at(e.expected_key, j) = m - 1 - j;
            }
            break;
        }
    }
    return e;
}

}  // namespace

Example make_example(const TaskOptions& o, Rng& rng) {
    const int m = o.length;
    std::vector<int> s(static_cast<size_t>(m));
    if (o.kind == TaskKind::Induction) {
        // m distinct tokens: a partial Fisher–Yates shuffle of the k letters.
        std::vector<int> letters(static_cast<size_t>(o.symbols));
        std::iota(letters.begin(), letters.end(), 0);
        for (int i = 0; i < m; ++i) std::swap(letters[static_cast<size_t>(i)], letters[static_cast<size_t>(i + random_below(rng, o.symbols - i))]);
        std::copy(letters.begin(), letters.begin() + m, s.begin());
    } else {
        for (int& token : s) token = random_below(rng, o.symbols);
    }
    std::vector<int> fillers;
    if (o.kind == TaskKind::Induction) {
        // g ∈ [0, m) letters not in r.
        std::vector<bool> in_r(static_cast<size_t>(o.symbols), false);
        for (int token : s) in_r[static_cast<size_t>(token)] = true;
        std::vector<int> others;
        for (int t = 0; t < o.symbols; ++t)
            if (!in_r[static_cast<size_t>(t)]) others.push_back(t);
        const int gap = random_below(rng, m);
        for (int i = 0; i < gap; ++i) fillers.push_back(others[static_cast<size_t>(random_below(rng, static_cast<int>(others.size())))]);
    }
    return example_of(o, s, fillers);
}

bool is_content(const TaskOptions& o, bool source, int position) {
    // The content is the source in cross-reverse, else the target's first m tokens.
    return source == (o.kind == TaskKind::CrossReverse) && position >= 0 && position < o.length;
}

namespace {

// The content an input was made from: s, its first m source (cross-reverse) or target
// tokens, and induction's gap letters. False when the input is too short (or, in induction,
// too long) to hold them.
bool content_of(const TaskOptions& o, const ModelInput& input, std::vector<int>& s, std::vector<int>& fillers) {
    const int m = o.length;
    const std::vector<int>& from = o.kind == TaskKind::CrossReverse ? input.source : input.tokens;
    if (static_cast<int>(from.size()) < m) return false;
    s.assign(from.begin(), from.begin() + m);
    fillers.clear();
    if (o.kind == TaskKind::Induction) {
        const int gap = static_cast<int>(input.tokens.size()) - (2 * m - 1);
        if (gap < 0 || gap >= m) return false;
        fillers.assign(input.tokens.begin() + m, input.tokens.begin() + m + gap);
    }
    return true;
}

// Why content s (and the gap) is not one the task makes: a letter outside the task's, or in
// induction a repeated letter of r or one of r's letters in the gap, either of which would
// make "the token after the earlier occurrence" more than one answer. Empty when it is.
std::string content_fault(const TaskOptions& o, const std::vector<int>& s, const std::vector<int>& fillers) {
    const std::string letters = "one of the task's " + std::to_string(o.symbols) + " letters";
    std::vector<int> first(static_cast<size_t>(o.symbols), -1);  // letter → its first token in r
    for (int i = 0; i < static_cast<int>(s.size()); ++i) {
        const int t = s[static_cast<size_t>(i)];
        if (t < 0 || t >= o.symbols) return "token " + std::to_string(i + 1) + " is not " + letters;
        if (o.kind != TaskKind::Induction) continue;
        int& seen = first[static_cast<size_t>(t)];
        if (seen >= 0)
            return "induction's first " + std::to_string(o.length) + " tokens are distinct: tokens " + std::to_string(seen + 1) +
                   " and " + std::to_string(i + 1) + " would hold the same letter";
        seen = i;
    }
    for (int t : fillers) {
        if (t < 0 || t >= o.symbols) return "a letter of the gap is not " + letters;
        if (first[static_cast<size_t>(t)] >= 0)
            return "the gap between the two halves already uses the letter of token " + std::to_string(first[static_cast<size_t>(t)] + 1) +
                   ": the repeat would be ambiguous";
    }
    return {};
}

}  // namespace

std::optional<Example> edit_content(const TaskOptions& o, const Example& e, bool source, int position, int token,
                                    std::string* why) {
    auto refuse = [&](const std::string& reason) -> std::optional<Example> {
        if (why) *why = reason;
        return std::nullopt;
    };
    if (token < 0 || token >= o.symbols) return refuse("token " + std::to_string(token) + " is not one of the task's " + std::to_string(o.symbols) + " letters");
    if (!is_content(o, source, position))
        return refuse("position " + std::to_string(position + 1) + " follows from the content (the first " + std::to_string(o.length) +
                      (o.kind == TaskKind::CrossReverse ? " source tokens" : " tokens") + "): edit those");
    std::vector<int> s, fillers;
    if (!content_of(o, e.input, s, fillers)) return refuse("the example does not hold the task's " + std::to_string(o.length) + " content tokens");
    s[static_cast<size_t>(position)] = token;
    if (std::string fault = content_fault(o, s, fillers); !fault.empty()) return refuse(fault);
    return example_of(o, s, fillers);
}

std::optional<Example> example_from_input(const TaskOptions& o, const ModelInput& input) {
    std::vector<int> s, fillers;
    if (!content_of(o, input, s, fillers) || !content_fault(o, s, fillers).empty()) return std::nullopt;
    Example e = example_of(o, s, fillers);
    if (e.input.tokens != input.tokens || e.input.source != input.source) return std::nullopt;
    return e;
}

std::vector<int> example_content(const Example& e) {
    std::vector<int> content = e.input.source;
    content.push_back(-1);
    content.insert(content.end(), e.input.tokens.begin(), e.input.tokens.end());
    return content;
}

HeldOutSet make_held_out(const TaskOptions& o, int count, std::uint64_t seed) {
    HeldOutSet set;
    Rng rng(seed * 0xD1B54A32D192ED03ull + 0x4E1D0u);
    // Small spaces (2 letters, 2 tokens) have few distinct examples: stop trying after a while.
    for (int tries = 0; static_cast<int>(set.examples.size()) < count && tries < 20 * count + 100; ++tries) {
        Example e = make_example(o, rng);
        if (set.contents.insert(example_content(e)).second) set.examples.push_back(std::move(e));
    }
    return set;
}

}  // namespace attn::train
