// libFuzzer target: any bytes through the scenario loader, and small scenarios through the
// engine and the trace writer.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string text(reinterpret_cast<const char*>(data), size);
    const attn::ScenarioLoad load = attn::scenario_from_text(text, "fuzz-input");
    if (load.scenario) attn::fuzz::exercise(*load.scenario);
    return 0;
}
