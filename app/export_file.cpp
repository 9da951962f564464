#include "export_file.hpp"

#include "export.hpp"

namespace attn::export_file {

namespace {

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }
bool ends_with(const std::string& s, const std::string& suffix) {
    return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}
std::vector<std::string> dim_labels(Eigen::Index n) {
    std::vector<std::string> labels;
    for (Eigen::Index i = 0; i < n; ++i) labels.push_back("d" + std::to_string(i));
    return labels;
}

}  // namespace

Labels labels_for(const Trace& trace, const std::string& name) {
    Labels labels;
    const Matrix* m = find_matrix(trace, name);
    if (m == nullptr) return labels;
    if (starts_with(name, "w_") || starts_with(name, "block.w_")) {  // weights: d_model × d_model, no tokens
        labels.rows = dim_labels(m->rows());
        labels.cols = dim_labels(m->cols());
        return labels;
    }
    // Keys on the rows: K, V (and the source side of cross-attention); queries otherwise.
    const bool key_rows = starts_with(name, "source_") || ends_with(name, ".k") || ends_with(name, ".v") || ends_with(name, ".k_unrotated");
    const std::vector<std::string>& row_tokens = key_rows ? trace.key_tokens : trace.query_tokens;
    if (static_cast<Eigen::Index>(row_tokens.size()) == m->rows()) labels.rows = row_tokens;
    // Query × key matrices: scores, scaled, masked, weights, bias.
    const bool key_cols = ends_with(name, "scores") || ends_with(name, ".weights") || ends_with(name, ".position_bias");
    if (key_cols && static_cast<Eigen::Index>(trace.key_tokens.size()) == m->cols()) labels.cols = trace.key_tokens;
    else labels.cols = dim_labels(m->cols());
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
