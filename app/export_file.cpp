#include "export_file.hpp"

#include "tensor/export.hpp"
#include "attention/registry.hpp"

namespace attn::export_file {

namespace {

// "d1", "d2", …: dimensions counted from 1, as everywhere the user reads them.
std::vector<std::string> dim_labels(Eigen::Index n) {
    std::vector<std::string> labels;
    for (Eigen::Index i = 0; i < n; ++i) labels.push_back("d" + std::to_string(i + 1));
    return labels;
}

}  // namespace

Labels labels_for(const Trace& trace, const std::string& name) {
    Labels labels;
    const auto ref = parse_matrix_name(name);
    const Matrix* m = ref ? matrix_of(trace, *ref) : nullptr;
    if (m == nullptr) return labels;
    // The registry's axes: a token axis is labelled by its tokens (keys: K, V, the source side
    // of cross-attention, the columns of scores and weights), any other by its dimensions; a
    // vector's one row (a bias, γ, β) is not labelled.
    auto tokens_of = [&](Axis axis) -> const std::vector<std::string>* {
        return axis == Axis::Query ? &trace.query_tokens : axis == Axis::Key ? &trace.key_tokens : nullptr;
    };
    if (const auto* tokens = tokens_of(ref->entry->rows)) {
        if (static_cast<Eigen::Index>(tokens->size()) == m->rows()) labels.rows = *tokens;
    } else if (!(ref->entry->rows == Axis::Hidden && m->rows() == 1)) {
        labels.rows = dim_labels(m->rows());
    }
    const auto* col_tokens = tokens_of(ref->entry->cols);
    labels.cols = col_tokens != nullptr && static_cast<Eigen::Index>(col_tokens->size()) == m->cols() ? *col_tokens : dim_labels(m->cols());
    return labels;
}

bool matrix_text(const Trace& trace, const std::string& name, Format format, int decimals, std::string& out, std::string* error) {
    const Matrix* m = find_matrix(trace, name);
    if (m == nullptr) {
        if (error) *error = "no matrix named '" + name + "' in this trace";
        return false;
    }
    const Labels labels = labels_for(trace, name);
    switch (format) {
        case Format::Csv: out = matrix_to_csv(*m, labels.rows, labels.cols); break;
        case Format::Markdown: out = matrix_to_markdown(*m, labels.rows, labels.cols, decimals); break;
        case Format::Latex: out = matrix_to_latex(*m, labels.rows, labels.cols, decimals); break;
    }
    return true;
}

const char* extension(Format format) {
    switch (format) {
        case Format::Csv: return "csv";
        case Format::Markdown: return "md";
        case Format::Latex: return "tex";
    }
    return "txt";
}

}  // namespace attn::export_file
