#include "tensor/export.hpp"

#include <cmath>
#include <cstdio>
#include <sstream>

namespace attn {

namespace {

std::string number(float x, const char* format, int decimals) {
    if (std::isnan(x)) return "nan";
    if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
    char buf[64];
    std::snprintf(buf, sizeof buf, format, decimals, static_cast<double>(x));
    return buf;
}

std::string csv_field(const std::string& s) {
    if (s.find_first_of(",\"\n") == std::string::npos) return s;
    std::string quoted = "\"";
    for (char c : s) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
    return quoted + "\"";
}

std::string latex_text(const std::string& s) {
    std::string out;
    for (char c : s) {
        if (std::string("&%$#_{}").find(c) != std::string::npos) out += '\\';
        out += c;
    }
    return out;
}

std::string label(const std::vector<std::string>& labels, Eigen::Index i) {
    return i < static_cast<Eigen::Index>(labels.size()) ? labels[static_cast<size_t>(i)] : std::to_string(i + 1);
}

}  // namespace

std::string matrix_to_csv(const Matrix& m, const std::vector<std::string>& row_labels,
                          const std::vector<std::string>& col_labels) {
    std::ostringstream out;
    const bool rows_labelled = !row_labels.empty();
    if (!col_labels.empty()) {
        if (rows_labelled) out << "";
        for (Eigen::Index j = 0; j < m.cols(); ++j) out << (j || rows_labelled ? "," : "") << csv_field(label(col_labels, j));
        out << "\n";
    }
    for (Eigen::Index i = 0; i < m.rows(); ++i) {
        if (rows_labelled) out << csv_field(label(row_labels, i));
        for (Eigen::Index j = 0; j < m.cols(); ++j) out << (j || rows_labelled ? "," : "") << number(m(i, j), "%.*g", 9);
        out << "\n";
    }
    return out.str();
}

Matrix matrix_from_csv(const std::string& csv, bool has_header, bool has_row_labels) {
    std::vector<std::vector<float>> rows;
    std::istringstream in(csv);
    std::string line;
    bool first = true;
    while (std::getline(in, line)) {
        if (first && has_header) {
            first = false;
            continue;
        }
        first = false;
        std::vector<float> row;
        std::istringstream cells(line);
        std::string cell;
        bool label_skipped = !has_row_labels;
        while (std::getline(cells, cell, ',')) {
            if (!label_skipped) {
                label_skipped = true;
                continue;
            }
            row.push_back(cell == "inf" ? INFINITY : cell == "-inf" ? -INFINITY : cell == "nan" ? NAN : std::stof(cell));
        }
        rows.push_back(row);
    }
    Matrix m(static_cast<Eigen::Index>(rows.size()), rows.empty() ? 0 : static_cast<Eigen::Index>(rows[0].size()));
    for (size_t i = 0; i < rows.size(); ++i)
        for (size_t j = 0; j < rows[i].size() && static_cast<Eigen::Index>(j) < m.cols(); ++j)
            m(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(j)) = rows[i][j];
    return m;
}

std::string matrix_to_markdown(const Matrix& m, const std::vector<std::string>& row_labels,
                               const std::vector<std::string>& col_labels, int decimals) {
    std::ostringstream out;
    out << "| |";
    for (Eigen::Index j = 0; j < m.cols(); ++j) out << " " << label(col_labels, j) << " |";
    out << "\n|---|";
    for (Eigen::Index j = 0; j < m.cols(); ++j) out << "---:|";
    out << "\n";
    for (Eigen::Index i = 0; i < m.rows(); ++i) {
        out << "| " << label(row_labels, i) << " |";
        for (Eigen::Index j = 0; j < m.cols(); ++j) out << " " << number(m(i, j), "%.*f", decimals) << " |";
        out << "\n";
    }
    return out.str();
}

std::string matrix_to_latex(const Matrix& m, const std::vector<std::string>& row_labels,
                            const std::vector<std::string>& col_labels, int decimals) {
    std::ostringstream out;
    out << "\\begin{tabular}{l" << std::string(static_cast<size_t>(m.cols()), 'r') << "}\n";
    for (Eigen::Index j = 0; j < m.cols(); ++j) out << " & " << latex_text(label(col_labels, j));
    out << " \\\\\n\\hline\n";
    for (Eigen::Index i = 0; i < m.rows(); ++i) {
        out << latex_text(label(row_labels, i));
        for (Eigen::Index j = 0; j < m.cols(); ++j) {
            const float x = m(i, j);
            out << " & " << (std::isinf(x) ? (x < 0 ? "$-\\infty$" : "$\\infty$") : number(x, "%.*f", decimals));
        }
        out << " \\\\\n";
    }
    out << "\\end{tabular}\n";
    return out.str();
}

}  // namespace attn
