#pragma once
// Plain-text rendering of a trace and of article verdicts, for the command line.
#include <string>
#include <vector>

#include "articles.hpp"
#include "trace.hpp"

namespace attn {

std::string format_matrix(const std::string& title, const Matrix& m,
                          const std::vector<std::string>& row_labels,
                          const std::vector<std::string>& col_labels, int decimals = 4);
std::string format_trace(const Trace& trace, int decimals = 4);
std::string format_verdicts(const std::vector<Verdict>& verdicts);

}  // namespace attn
