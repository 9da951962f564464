#include "trace.hpp"

namespace attn {

namespace {

const Matrix* head_matrix(const HeadTrace& h, const std::string& field) {
    if (field == "q") return &h.q;
    if (field == "k") return &h.k;
    if (field == "v") return &h.v;
    if (field == "q_unrotated") return &h.q_unrotated;
    if (field == "k_unrotated") return &h.k_unrotated;
    if (field == "scores") return &h.scores;
    if (field == "position_bias") return &h.position_bias;
    if (field == "scaled_scores") return &h.scaled_scores;
    if (field == "masked_scores") return &h.masked_scores;
    if (field == "weights") return &h.weights;
    if (field == "output") return &h.output;
    return nullptr;
}

const Matrix* named_matrix(const Trace& t, const std::string& name) {
    if (name.rfind("head", 0) == 0) {
        const auto dot = name.find('.');
        if (dot == std::string::npos || dot == 4) return nullptr;
        int index = 0;
        for (size_t i = 4; i < dot; ++i) {
            if (name[i] < '0' || name[i] > '9' || index > 100000) return nullptr;
            index = index * 10 + (name[i] - '0');
        }
        if (index >= static_cast<int>(t.head.size())) return nullptr;
        return head_matrix(t.head[index], name.substr(dot + 1));
    }
    if (name.rfind("block.", 0) == 0) {
        const std::string f = name.substr(6);
        const BlockTrace& b = t.block;
        if (f == "residual") return &b.residual;
        if (f == "norm1") return &b.norm1;
        if (f == "ffn_hidden") return &b.ffn_hidden;
        if (f == "ffn_output") return &b.ffn_output;
        if (f == "residual2") return &b.residual2;
        if (f == "output") return &b.output;
        return nullptr;
    }
    if (name == "x") return &t.x;
    if (name == "pe") return &t.pe;
    if (name == "x_pe") return &t.x_pe;
    if (name == "source_x") return &t.source_x;
    if (name == "source_pe") return &t.source_pe;
    if (name == "source_x_pe") return &t.source_x_pe;
    if (name == "w_q") return &t.w_q;
    if (name == "w_k") return &t.w_k;
    if (name == "w_v") return &t.w_v;
    if (name == "w_o") return &t.w_o;
    if (name == "concat") return &t.concat;
    if (name == "output") return &t.output;
    return nullptr;
}

}  // namespace

const Matrix* find_matrix(const Trace& trace, const std::string& name) {
    const Matrix* m = named_matrix(trace, name);
    return m != nullptr && m->size() != 0 ? m : nullptr;
}

std::vector<std::string> matrix_names(const Trace& trace) {
    std::vector<std::string> candidates = {"x", "pe", "x_pe", "source_x", "source_pe", "source_x_pe",
                                           "w_q", "w_k", "w_v"};
    for (size_t h = 0; h < trace.head.size(); ++h)
        for (const char* f : {"q_unrotated", "k_unrotated", "q", "k", "v", "scores", "position_bias", "scaled_scores",
                              "masked_scores", "weights", "output"})
            candidates.push_back("head" + std::to_string(h) + "." + f);
    for (const char* f : {"concat", "w_o", "output", "block.residual", "block.norm1", "block.ffn_hidden",
                          "block.ffn_output", "block.residual2", "block.output"})
        candidates.emplace_back(f);
    std::vector<std::string> names;
    for (auto& c : candidates)
        if (find_matrix(trace, c)) names.push_back(c);
    return names;
}

}  // namespace attn
