// The hostile-file readers every loader shares: files that are not regular files are refused
// before they are opened for reading, and JSON is refused at the first key repeated in an
// object, the first level past the format's depth and the first value past its count.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>

#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "joined.hpp"
#include "io/json_read.hpp"

using namespace attn;
using attn::testing::joined;
using Catch::Matchers::Contains;

namespace {

std::string parse_errors(const std::string& text, const JsonLimits& limits = {}) {
    std::vector<std::string> errors;
    const auto document = parse_json(text, "doc.json", errors, limits);
    if (document) errors.push_back("(parsed)");
    return joined(errors);
}

std::string nested(int depth) { return std::string(static_cast<std::size_t>(depth), '[') + std::string(static_cast<std::size_t>(depth), ']'); }

}  // namespace

TEST_CASE("a key that appears twice in one object is refused, naming the key, where and which object") {
    CHECK_THAT(parse_errors(R"({"heads": 1, "heads": 2})"), Contains("doc.json: line 1, column 14") &&
                                                                Contains("key 'heads' appears twice in the same object (the top level)"));
    CHECK_THAT(parse_errors("{\"block\": {\"d_ff\": 4,\n \"d_ff\": 8}}"),
               Contains("line 2, column 2") && Contains("key 'd_ff' appears twice") && Contains("(at 'block')"));
    CHECK_THAT(parse_errors(R"({"layers": [{}, {"w": 1, "w": 1}]})"), Contains("(at 'layers[2]')"));
    // The same key in two different objects is no repeat; nor is a key equal to a value.
    CHECK(parse_errors(R"({"a": {"x": 1}, "b": {"x": 1}, "x": "x"})") == "(parsed)\n");
    // Keys that differ only after an escape are different keys; the same key escaped is the same.
    CHECK(parse_errors(R"({"a": 1, "a\u0000": 2})") == "(parsed)\n");
    CHECK_THAT(parse_errors(R"({"a": 1, "\u0061": 2})"), Contains("key 'a' appears twice"));
}

TEST_CASE("nesting is bounded by the format, at exactly its depth") {
    const JsonLimits limits{"test", 5, 1000};
    CHECK(parse_errors(nested(5), limits) == "(parsed)\n");
    CHECK_THAT(parse_errors(nested(6), limits),
               Contains("doc.json: line 1, column 6") && Contains("nested deeper than 5 levels (inside '[1][1][1][1]')") &&
                   Contains("; a test file nests at most 5"));
    CHECK_THAT(parse_errors(R"({"a": {"b": {"c": {"d": {"e": {}}}}}})", limits), Contains("nested deeper than 5 levels"));
    // A million brackets stop at the sixth: the rest of the text is never built.
    CHECK_THAT(parse_errors(std::string(1'000'000, '['), limits), Contains("nested deeper than 5 levels"));
}

TEST_CASE("the count of values is bounded by the format, at exactly its count") {
    const JsonLimits limits{"test", 8, 10};
    CHECK(parse_errors("[1, 2, 3, 4, 5, 6, 7, 8, 9]", limits) == "(parsed)\n");   // the array and nine numbers
    CHECK_THAT(parse_errors("[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]", limits),
               Contains("more than 10 values; a test file holds at most 10"));
    CHECK_THAT(parse_errors(R"({"a": [], "b": [], "c": {}, "d": "", "e": null, "f": true, "g": 1.5, "h": -1, "i": 0, "j": []})",
                            limits),
               Contains("more than 10 values"));
}

TEST_CASE("syntax errors and overflowing numbers keep their messages") {
    CHECK_THAT(parse_errors(R"({"tokens": ["a", "b",})"), Contains("doc.json: line 1, column 22: not valid JSON") && Contains("unexpected '}'"));
    CHECK_THAT(parse_errors("{\"a\": \"\xFF\"}"), Contains("\\xFF") && Contains("(text must be UTF-8)"));
    CHECK_THAT(parse_errors("[1e999]"), Contains("doc.json: not valid JSON: number overflow"));
    CHECK_THAT(parse_errors("{} x"), Contains("not valid JSON") && Contains("expected end of input"));
    CHECK_THAT(parse_errors(""), Contains("not valid JSON"));
}

TEST_CASE("the document built is the one nlohmann's own parser builds") {
    const std::string text = R"({"q": [[1, -2.5e3], [3, 4]], "name": "caf\u00e9 \ud83d\ude00", "flag": true, "none": null,
                                "big": 18446744073709551615, "neg": -9223372036854775808, "nested": {"a": [{}, []]}})";
    std::vector<std::string> errors;
    const auto document = parse_json(text, "doc.json", errors, JsonLimits{});
    REQUIRE(document);
    CHECK(*document == nlohmann::json::parse(text));
    CHECK((*document)["big"].is_number_unsigned());
    CHECK((*document)["neg"].is_number_integer());
}

TEST_CASE("what is not a regular file is refused before it is read: a FIFO, a device, a loop") {
    namespace fs = std::filesystem;
    const fs::path dir = fs::temp_directory_path() / "attnlab-test-json-read";
    fs::remove_all(dir);
    fs::create_directories(dir);
    std::vector<std::string> errors;

    // A FIFO with no writer: open() would wait for one forever.
    const std::string fifo = (dir / "pipe.json").string();
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    CHECK_FALSE(read_text_file(fifo, 1 << 20, "scenario", errors));
    CHECK_THAT(joined(errors), Contains(fifo + ": is a FIFO (named pipe), not a scenario file"));

    errors.clear();
    fs::create_symlink("/dev/zero", dir / "zero.json");
    CHECK_FALSE(read_text_file((dir / "zero.json").string(), 1 << 20, "config", errors));
    CHECK_THAT(joined(errors), Contains("zero.json: is a character device, not a config file"));

    errors.clear();
    fs::create_symlink(dir / "loop.json", dir / "loop.json");
    CHECK_FALSE(read_text_file((dir / "loop.json").string(), 1 << 20, "lesson", errors));
    CHECK_THAT(joined(errors), Contains("loop.json: cannot open: too many levels of symbolic links"));

    errors.clear();
    CHECK_FALSE(read_text_file((dir / "absent.json").string(), 1 << 20, "lesson", errors));
    CHECK_THAT(joined(errors), Contains("absent.json: cannot open: no such file"));

    errors.clear();
    CHECK_FALSE(read_text_file(dir.string(), 1 << 20, "lesson", errors));
    CHECK_THAT(joined(errors), Contains(": is a folder, not a lesson file"));

    CHECK(not_a_regular_file(fifo) == std::optional<std::string>("is a FIFO (named pipe)"));
    CHECK(not_a_regular_file((dir / "loop.json").string())->find("too many levels") != std::string::npos);

    // A symlink to a regular file is read through.
    std::ofstream(dir / "real.json") << "{}";
    fs::create_symlink(dir / "real.json", dir / "link.json");
    errors.clear();
    CHECK(read_text_file((dir / "link.json").string(), 1 << 20, "scenario", errors) == std::optional<std::string>("{}"));
    CHECK_FALSE(not_a_regular_file((dir / "link.json").string()));
    fs::remove_all(dir);
}

TEST_CASE("sizes are said as people read them") {
    CHECK(byte_size_text(512) == "512 bytes");
    CHECK(byte_size_text(1536) == "1.5 KiB");
    CHECK(byte_size_text(std::uint64_t(320) << 20) == "320 MiB");
    CHECK(byte_size_text(std::uint64_t(275) << 30) == "275 GiB");
    const auto available = available_memory_bytes();
    REQUIRE(available);
    CHECK(*available > (std::uint64_t(1) << 20));
}

// ASan's operator new reports an allocation it cannot make and stops the process instead of
// throwing std::bad_alloc, so under ASan there is no bad_alloc to catch: this case runs in
// the builds without it (the sanitized build compiles this file plain, and says so by
// ATTNLAB_SANITIZED_BUILD: its process still has ASan's allocator).
#if !defined(__SANITIZE_ADDRESS__) && !defined(ATTNLAB_SANITIZED_BUILD)
TEST_CASE("a document larger than the memory left is a message, not an abort") {
    std::string text = "[";
    for (int i = 0; i < (1 << 22); ++i) text += "0,";
    text.back() = ']';
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        // The child may grow by 32 MiB; the document's 2^22 values need about 100.
        std::uint64_t pages = 0;
        std::ifstream("/proc/self/statm") >> pages;
        const rlim_t limit = pages * static_cast<rlim_t>(::sysconf(_SC_PAGESIZE)) + (32u << 20);
        struct rlimit cap {limit, limit};
        ::setrlimit(RLIMIT_AS, &cap);
        std::vector<std::string> errors;
        const auto document = parse_json(text, "big.json", errors, JsonLimits{"test", 4, 1u << 30});
        ::_exit(document ? 1 : joined(errors).find("big.json: not enough memory to read this test file") != std::string::npos ? 0 : 2);
    }
    int status = 0;
    ::waitpid(child, &status, 0);
    REQUIRE(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
}
#endif
