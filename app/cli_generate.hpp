#pragma once
// attnlab --model … --text "…" --generate N [--temperature T] [--top-k K] [--top-p P] [--seed S]:
// the model writes N tokens after the text, one at a time against its KV caches
// (core/generate), and says each step's top 5 and what the sampler kept.
#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "generate/sampler.hpp"
#include "generate/writer.hpp"

namespace attn::cli {

struct Continuation {
    nlohmann::json steps = nlohmann::json::array();  // each step's top 5, cut and choice
    std::vector<int> ids;                            // the new ids, in order
    std::string text;
    std::string printed;                             // what --print (or no export) prints
};

// Writes `count` tokens after the prompt whose pass is `pass` (every layer's trace). `label`
// names one id as the token strip does, `text_of` turns ids into the text they continue
// with. The exit code: 0, 2 (a length beyond the model's positions, a model that cannot
// write), 5 (logits that are not all finite).
int write_continuation(const generate::Writer& writer, const stack::Pass& pass, const std::vector<int>& prompt, int count,
                       const generate::SamplerSettings& sampler, const std::function<std::string(int)>& label,
                       const std::function<std::string(const std::vector<int>&)>& text_of, Continuation& out, std::ostream& err,
                       const std::string& where);

}  // namespace attn::cli
