#pragma once
// Matrices as text for spreadsheets, slides and worksheets.
#include <string>
#include <vector>

#include "tensor/matrix.hpp"

namespace attn {

// CSV: a header row of column labels (when given), then one row per matrix row, the row
// label first (when given). Numbers with 9 significant digits, so float32 round-trips;
// non-finite values as inf, -inf, nan.
std::string matrix_to_csv(const Matrix& m, const std::vector<std::string>& row_labels,
                          const std::vector<std::string>& col_labels);
// Parses the numbers back (labels skipped): for round-trip checks and imports.
Matrix matrix_from_csv(const std::string& csv, bool has_header, bool has_row_labels);

std::string matrix_to_markdown(const Matrix& m, const std::vector<std::string>& row_labels,
                               const std::vector<std::string>& col_labels, int decimals);
std::string matrix_to_latex(const Matrix& m, const std::vector<std::string>& row_labels,
                            const std::vector<std::string>& col_labels, int decimals);

}  // namespace attn
