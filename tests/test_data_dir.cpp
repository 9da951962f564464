// Where the binary finds its fonts and lessons: beside itself, never at a path fixed at build time.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include "data_dir.hpp"

namespace fs = std::filesystem;

namespace {

// A fresh folder under the system's temporary folder, removed at the end of the test.
struct TemporaryRoot {
    fs::path path;
    TemporaryRoot() {
        path = fs::temp_directory_path() / ("attnlab-data-dir-" + std::to_string(std::random_device{}()));
        fs::remove_all(path);
        fs::create_directories(path);
        path = fs::canonical(path);
    }
    ~TemporaryRoot() { fs::remove_all(path); }
    fs::path binary(const std::string& relative) const {
        const fs::path file = path / relative;
        fs::create_directories(file.parent_path());
        std::ofstream(file) << "";
        return file;
    }
    fs::path folder(const std::string& relative) const {
        fs::create_directories(path / relative);
        return path / relative;
    }
};

}  // namespace

TEST_CASE("an installed binary finds share/attnlab beside its bin folder", "[data_dir]") {
    TemporaryRoot root;
    const fs::path binary = root.binary("usr/bin/attnlab");
    const fs::path data = root.folder("usr/share/attnlab");
    CHECK(attn::data_dir_for(binary.string()) == data.string());
}

TEST_CASE("a binary one folder deeper (a test in build/tests/gui) finds build/share/attnlab", "[data_dir]") {
    TemporaryRoot root;
    const fs::path binary = root.binary("build/tests/gui/test_gui_window");
    const fs::path data = root.folder("build/share/attnlab");
    CHECK(attn::data_dir_for(binary.string()) == data.string());
}

TEST_CASE("the nearer share/attnlab wins over one a folder further up", "[data_dir]") {
    TemporaryRoot root;
    const fs::path binary = root.binary("opt/attnlab/bin/attnlab");
    const fs::path nearer = root.folder("opt/attnlab/share/attnlab");
    root.folder("opt/share/attnlab");
    CHECK(attn::data_dir_for(binary.string()) == nearer.string());
}

TEST_CASE("a symlink to the binary finds the files beside the real binary", "[data_dir]") {
    TemporaryRoot root;
    const fs::path binary = root.binary("opt/attnlab/bin/attnlab");
    const fs::path data = root.folder("opt/attnlab/share/attnlab");
    root.folder("usr/local/bin");
    fs::create_symlink(binary, root.path / "usr/local/bin/attnlab");
    CHECK(attn::data_dir_for((root.path / "usr/local/bin/attnlab").string()) == data.string());
}

TEST_CASE("with no share/attnlab anywhere, the expected place is named", "[data_dir]") {
    TemporaryRoot root;
    const fs::path binary = root.binary("usr/bin/attnlab");
    CHECK(attn::data_dir_for(binary.string()) == (root.path / "usr/share/attnlab").string());
}

TEST_CASE("this test binary, in the build tree, finds the lessons and fonts of assets/", "[data_dir]") {
    CHECK(fs::is_regular_file(attn::data_dir() + "/lessons/03-masks.json"));
    CHECK(fs::is_regular_file(attn::data_dir() + "/fonts/DejaVuSans.ttf"));
    CHECK(fs::equivalent(attn::data_dir() + "/lessons", ATTNLAB_SOURCE_LESSONS));
}
