// Every input the GPT-2 fuzz targets ever crashed on, replayed in every build.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "fuzz/fuzz_gpt2.hpp"

TEST_CASE("every input the safetensors and BPE fuzzers ever crashed on runs without a crash") {
    namespace fs = std::filesystem;
    for (const char* target : {"safetensors", "bpe"}) {
        int files = 0;
        for (const auto& entry : fs::directory_iterator(fs::path(ATTNLAB_FUZZ_REGRESSIONS) / target)) {
            if (entry.path().filename() == "README.md") continue;
            INFO(entry.path().string());
            std::ifstream in(entry.path(), std::ios::binary);
            const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
            const auto* data = reinterpret_cast<const std::uint8_t*>(bytes.data());
            if (std::string(target) == "safetensors") CHECK(attn::fuzz::exercise_safetensors(data, bytes.size()));
            else CHECK(attn::fuzz::exercise_bpe(data, bytes.size()));
            ++files;
        }
        CHECK(files >= 1);
    }
}
