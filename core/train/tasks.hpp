#pragma once
// Toy tasks that need attention, generated on the fly. Each leaves a pattern one can name in
// the trained heads' weights, and each says which positions are scored and which key a
// scored row should attend to.
//
// The content is m tokens drawn from k letters "a", "b", …; "|" separates. Self-attention
// tasks are next-token prediction: the model reads full[0 .. L−1) and row i's target is
// full[i + 1]; only the rows whose answer is determined are scored.
//   copy            full = s | s             rows m … 2m−1 (answer sⱼ at row m+j)   key j
//   reverse         full = s | reverse(s)    rows m … 2m−1 (answer s_{m−1−j})       key m−1−j
//   sort            full = s | sorted(s)     rows m … 2m−1                           the smallest key not yet emitted
//   induction       full = r f r: r distinct, f a gap of g ∈ [0, m) other letters, so the
//                   repeat's distance varies; rows m+g … 2m+g−2 (answer r_{j+1})  key j+1, the token after
//                                                                                    the previous occurrence
//   previous-token  the model reads s; row i's target is s_{i−1} (rows 1 … m−1)      key i−1
//   cross-reverse   cross-attention: the source is s, the target reads m separators "|";
//                   row j's target is s_{m−1−j} (every row scored)                    source key m−1−j
// With a causal mask (the default) a row sees only earlier keys, so the answer of a
// next-token task is never among them; with no mask the next token is visible and a model
// may copy it instead of learning the pattern. cross-reverse needs the later source keys:
// use no mask there.
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "tensor/random.hpp"
#include "train/model.hpp"

namespace attn::train {

enum class TaskKind { Copy, Reverse, Sort, Induction, PreviousToken, CrossReverse };
const char* to_string(TaskKind kind);
std::optional<TaskKind> task_from_string(const std::string& name);
std::vector<TaskKind> all_tasks();

struct TaskOptions {
    TaskKind kind = TaskKind::Reverse;
    int length = 6;    // m: content tokens per sequence
    int symbols = 8;   // k: content letters (induction needs k > m: r is distinct, the gap other letters)
};
std::vector<std::string> validate(const TaskOptions& options);

struct Example {
    ModelInput input;
    std::vector<int> targets;       // one per target row
    std::vector<bool> scored;       // rows the loss and the accuracy count
    std::vector<int> expected_key;  // per row: the key its head should attend to, or −1
};

// k letters, then "|": V = k + 1.
std::vector<std::string> task_vocabulary(const TaskOptions& options);
int separator_id(const TaskOptions& options);
AttentionKind task_attention(TaskKind kind);
int target_length(const TaskOptions& options);  // the longest (induction's length varies)
int source_length(const TaskOptions& options);  // 0 for self-attention tasks
// The settings a model for the task needs: vocabulary size, positions, attention kind.
void fit_model_to_task(const TaskOptions& options, ModelConfig& config);

// One example from the generator's stream.
Example make_example(const TaskOptions& options, Rng& rng);
// The probe edited: token `position` of the content (the source in cross-reverse, else the
// target's first m tokens, or all of them in previous-token) becomes `token`, and the
// example follows: the answer half, the targets and the expected keys are rebuilt from the
// new content, so the truth stays the task's. A position that follows from the content (the
// separator, the answer half) or a letter that would make induction's answer ambiguous is
// refused with the reason in *why.
bool is_content(const TaskOptions& options, bool source, int position);
std::optional<Example> edit_content(const TaskOptions& options, const Example& example, bool source, int position, int token,
                                    std::string* why);
// The example whose input this is (its truth, scored rows and expected keys), or nothing
// when the input is not one the task generates (an answer half that does not follow from
// the content, induction's halves not distinct).
std::optional<Example> example_from_input(const TaskOptions& options, const ModelInput& input);
// The content an example is drawn from (source and target ids): equal content, equal example.
std::vector<int> example_content(const Example& example);

// A held-out set: `count` distinct examples from their own stream; the trainer never trains
// on their content.
struct HeldOutSet {
    std::vector<Example> examples;
    std::set<std::vector<int>> contents;
    bool contains(const Example& example) const { return contents.count(example_content(example)) != 0; }
};
HeldOutSet make_held_out(const TaskOptions& options, int count, std::uint64_t seed);

}  // namespace attn::train
