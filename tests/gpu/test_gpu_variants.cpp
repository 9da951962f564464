// Every kernel variant the GPU backend can build, checked by glslang, Khronos' reference
// GLSL compiler: the GL tests compile on Mesa llvmpipe, which offers no subgroup
// operations, so the variants only a real GPU takes are compiled here (glslang-tools).
#include <catch2/catch.hpp>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <unistd.h>

#include "gpu/backend.hpp"

namespace fs = std::filesystem;

namespace {

std::string read_text(const fs::path& path) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

}  // namespace

TEST_CASE("every GPU kernel variant compiles under glslang", "[gpu-host][variants]") {
    const std::string validator = ATTNLAB_GLSLANG;
    INFO("glslangValidator was not found when the build was configured: install glslang-tools "
         "(./scripts/run-tests.sh does)");
    REQUIRE_FALSE(validator.empty());
    const fs::path dir = fs::temp_directory_path() / ("attnlab-variants-" + std::to_string(::getpid()));
    fs::create_directories(dir);
    const std::vector<attn::gpu::ShaderVariant> variants = attn::gpu::shader_variants();
    int subgroup_variants = 0, shuffle_variants = 0;
    for (size_t i = 0; i < variants.size(); ++i) {
        const attn::gpu::ShaderVariant& v = variants[i];
        subgroup_variants += v.label.find("subgroups") != std::string::npos;
        shuffle_variants += v.label.find("shuffles") != std::string::npos;
        const fs::path source = dir / ("variant" + std::to_string(i) + ".comp"), log = dir / ("variant" + std::to_string(i) + ".log");
        std::ofstream(source) << v.source;
        const std::string command = "\"" + validator + "\" -S comp \"" + source.string() + "\" > \"" + log.string() + "\" 2>&1";
        const int status = std::system(command.c_str());
        INFO(v.label << ":\n" << read_text(log));
        CHECK(status == 0);
    }
    CHECK(subgroup_variants > 0);
    CHECK(shuffle_variants > 0);
    fs::remove_all(dir);
}

TEST_CASE("glslang refuses a broken variant, so the check above can fail", "[gpu-host][variants]") {
    const std::string validator = ATTNLAB_GLSLANG;
    REQUIRE_FALSE(validator.empty());
    std::string source = attn::gpu::shader_variants().back().source;
    source += "\nvoid broken() { subgroupShuffle(1.0); }\n";  // too few arguments
    const fs::path file = fs::temp_directory_path() / ("attnlab-broken-" + std::to_string(::getpid()) + ".comp");
    std::ofstream(file) << source;
    const std::string command = "\"" + validator + "\" -S comp \"" + file.string() + "\" > /dev/null 2>&1";
    CHECK(std::system(command.c_str()) != 0);
    fs::remove(file);
}
