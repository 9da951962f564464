#include "cli_generate.hpp"

#include <cstdio>
#include <ostream>
#include <sstream>

namespace attn::cli {

using nlohmann::json;

int write_continuation(const generate::Writer& writer, const stack::Pass& pass, const std::vector<int>& prompt, int count,
                       const generate::SamplerSettings& sampler, const std::function<std::string(int)>& label,
                       const std::function<std::string(const std::vector<int>&)>& text_of, Continuation& out, std::ostream& err,
                       const std::string& where) {
    const int n = static_cast<int>(prompt.size());
    // The last token written is never read, so the model reads the text but for it.
    if (writer.max_positions > 0 && n + count - 1 > writer.max_positions) {
        err << where << ": --generate " << count << " after " << n << (n == 1 ? " token" : " tokens") << " makes " << n + count
            << ": the model reads at most " << writer.max_positions << " (its position table has that many rows), so it can write at most "
            << std::max(0, writer.max_positions - n + 1) << "\n";
        return 2;
    }
    generate::Writing writing;
    std::string why;
    if (!generate::prefill(writer, pass, prompt, writing, &why)) {
        err << where << ": --generate: " << why << "\n";
        return 2;
    }
    std::ostringstream printed;
    for (int t = 0; t < count; ++t) {
        const std::optional<generate::Sampled> s = generate::sample(writing.logits, sampler, n + t, &why);
        if (!s) {
            err << where << ": --generate: step " << t + 1 << ": " << why << "\n";
            return 5;
        }
        json top = {{"ids", json::array()}, {"tokens", json::array()}, {"probabilities", json::array()}};
        for (int id : generate::ranked(s->probability, 5)) {
            top["ids"].push_back(id);
            top["tokens"].push_back(label(id));
            top["probabilities"].push_back(s->probability[static_cast<size_t>(id)]);
        }
        json kept = json::array();
        for (size_t i = 0; i < s->kept.size() && i < 5; ++i)
            kept.push_back({{"id", s->kept[i]}, {"probability", s->kept_probability[i]}});
        json step = {{"position", n + t + 1},
                     {"top5", std::move(top)},
                     {"kept", static_cast<int>(s->kept.size())},
                     {"kept_top5", std::move(kept)},
                     {"chosen_id", s->chosen},
                     {"chosen_token", label(s->chosen)},
                     {"chosen_probability", s->probability[static_cast<size_t>(s->chosen)]}};
        if (!sampler.greedy()) {
            step["tempered_probability"] = s->tempered[static_cast<size_t>(s->chosen)];
            step["draw"] = s->draw;
        }
        if (s->top_k_cut > 0) step["top_k_kept"] = s->top_k_cut;
        if (s->top_p_cut > 0) step["top_p_kept"] = s->top_p_cut;
        out.steps.push_back(std::move(step));
        out.ids.push_back(s->chosen);
        if (t + 1 < count && !generate::step(writer, writing, s->chosen, nullptr, &why)) {
            err << where << ": --generate: step " << t + 1 << ": " << why << "\n";
            return 2;
        }
    }
    out.text = text_of(out.ids);
    printed << "continuation (" << count << (count == 1 ? " token" : " tokens") << ", ";
    if (sampler.greedy()) printed << "greedy";
    else printed << "temperature " << sampler.temperature;
    if (sampler.top_k > 0) printed << ", top-k " << sampler.top_k;
    if (sampler.top_p < 1.0f) printed << ", top-p " << sampler.top_p;
    if (!sampler.greedy()) printed << ", seed " << sampler.seed;
    printed << "):\n" << out.text << "\nids:";
    for (int id : out.ids) printed << " " << id;
    printed << "\n";
    out.printed = printed.str();
    return 0;
}

}  // namespace attn::cli
