// libFuzzer target: any bytes through the scenario loader, and small scenarios through the
// engine and the trace writer. Nothing may crash, hang or trip a sanitizer.
#include <cstddef>
#include <cstdint>
#include <string>

#include "engine.hpp"
#include "serialize.hpp"

namespace {

// Keeps one input's work small so the fuzzer explores instead of computing.
bool small_enough(const attn::Scenario& s) {
    const auto cells = [](const attn::Matrix& m) { return m.size(); };
    if (s.input == attn::InputMode::Direct) return cells(s.q) + cells(s.k) + cells(s.v) <= 4096 && s.q.rows() <= 256 && s.k.rows() <= 256;
    return s.d_model <= 128 && s.target.tokens.size() <= 128 && s.source.tokens.size() <= 128 &&
           s.target.embeddings.rows() <= 128 && s.source.embeddings.rows() <= 128 && s.block.d_ff <= 512;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string text(reinterpret_cast<const char*>(data), size);
    const attn::ScenarioLoad load = attn::scenario_from_text(text, "fuzz-input");
    if (!load.scenario || !small_enough(*load.scenario)) return 0;
    const attn::Trace trace = attn::run(*load.scenario);
    attn::RunOptions output_only;
    output_only.detail = attn::Detail::OutputOnly;
    const attn::Trace streamed = attn::run(*load.scenario, output_only);
    if (trace.ok != streamed.ok) __builtin_trap();  // both paths accept the same scenarios
    (void)attn::dump_json(attn::trace_to_json(trace));
    (void)attn::dump_json(attn::scenario_to_json(*load.scenario));
    return 0;
}
