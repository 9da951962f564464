#pragma once
// A trace matrix as a file for a spreadsheet, slides or a worksheet, with token labels
// where its rows or columns are tokens. Pure logic (no window): the Export menu calls it.
#include <string>
#include <vector>

#include "attention/trace.hpp"

namespace attn::export_file {

enum class Format { Csv, Markdown, Latex };

struct Labels {
    std::vector<std::string> rows, cols;  // empty: none (dimensions are numbered 0..)
};
// Token labels for a named trace matrix ("head0.weights": queries × keys; "w_q": none).
Labels labels_for(const Trace& trace, const std::string& name);

// The matrix `name` in the format; false with *error set when the trace has no such matrix.
bool matrix_text(const Trace& trace, const std::string& name, Format format, int decimals, std::string& out, std::string* error);

// The file extension a format is usually saved with: "csv", "md", "tex".
const char* extension(Format format);

}  // namespace attn::export_file
