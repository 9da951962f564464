#pragma once
// Plain-text rendering of a trace and of article verdicts, for the command line.
#include <string>
#include <vector>

#include "teaching/articles.hpp"
#include "attention/trace.hpp"

namespace attn {

std::string format_matrix(const std::string& title, const Matrix& m,
                          const std::vector<std::string>& row_labels,
                          const std::vector<std::string>& col_labels, int decimals = 4);
std::string format_trace(const Trace& trace, int decimals = 4);
// One head's tables: Q, K, V, the scores (and ALiBi's bias), scaled, masked, the weights and
// the head's output, each title after `prefix` ("head 2: ").
std::string format_head(const Trace& trace, int head, const std::string& prefix, int decimals = 4);
// Column labels counted from 1, as everything on screen and in messages counts: d1, d2, …
std::vector<std::string> numbered_columns(int n, const char* prefix);
std::string format_verdicts(const std::vector<Verdict>& verdicts);

}  // namespace attn
