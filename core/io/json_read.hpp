#pragma once
// Reading files and JSON documents that may be hostile.
//
// read_text_file refuses anything that is not a regular file (a FIFO would block open()
// forever; /dev/zero never ends) before reading a byte, and files over the format's size.
// parse_json builds the document through a SAX handler that enforces, while it reads, what
// the DOM parser cannot: a nesting depth, a count of values (so memory stays a small
// multiple of the file's size however the file is shaped) and keys that appear once per
// object. Every limit it refuses names the format and the limit.
#include <cstddef>
#include <cstdint>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace attn {

// What one format's documents may hold. The DOM costs at most about 80 bytes a value (an
// object member with its key), so max_values bounds the memory a document takes.
struct JsonLimits {
    const char* format = "JSON";        // "scenario", "safetensors header": named in messages
    int max_depth = 32;                  // nested arrays and objects; the top level is depth 1
    std::size_t max_values = 1u << 22;   // every value counted: numbers, strings, arrays, objects
};

// The formats' limits, stated once (docs/reliability.md).
namespace json_limits {
inline constexpr JsonLimits kScenario{"scenario", 16, 1u << 23};   // sessions and scenarios
inline constexpr JsonLimits kLesson{"lesson", 16, 1u << 20};
inline constexpr JsonLimits kModel{"trained-model", 16, 1u << 23};
inline constexpr JsonLimits kConfig{"config", 8, 1u << 16};
inline constexpr std::uintmax_t kConfigBytes = 1u << 20;  // a model folder's config.json
// tokenizer_config.json: Gemma 3's lists about 6,000 added tokens (1.2 MB)
inline constexpr JsonLimits kTokenizerConfig{"tokenizer_config", 8, 1u << 20};
inline constexpr std::uintmax_t kTokenizerConfigBytes = 16u << 20;
inline constexpr JsonLimits kVocabulary{"vocabulary", 2, 1u << 22};
inline constexpr JsonLimits kSafetensorsHeader{"safetensors header", 4, 1u << 20};
inline constexpr JsonLimits kSmall{"settings", 8, 1u << 14};
}  // namespace json_limits

// The document, or nullopt with "SOURCE: line L, column C: …" appended to errors: a syntax
// error, a number too large for a double, a key that appears twice in one object, nesting
// deeper or more values than the format allows. A failed allocation is a message too.
std::optional<nlohmann::json> parse_json(const std::string& text, const std::string& source_name,
                                         std::vector<std::string>& errors, const JsonLimits& limits);
std::optional<nlohmann::json> parse_json(const char* begin, const char* end, const std::string& source_name,
                                         std::vector<std::string>& errors, const JsonLimits& limits);

// The whole file, or nullopt with the reason appended to errors: "PATH: no such file",
// "PATH: is a FIFO, not a KIND file", "PATH: N bytes; a KIND file is at most M bytes", …
std::optional<std::string> read_text_file(const std::string& path, std::uintmax_t max_bytes, const std::string& kind,
                                          std::vector<std::string>& errors);

// What stands at PATH when it is not a regular file, in words ("a FIFO", "a folder", "a
// character device", …), or why it cannot be looked at ("too many levels of symbolic
// links", "no such file"); nullopt for a regular file (or a symlink to one).
std::optional<std::string> not_a_regular_file(const std::string& path);

// A file descriptor opened for reading, checked to be a regular file after opening (the
// FIFO never blocks: it is opened without waiting for a writer, then refused); -1 with the
// reason appended to errors. The caller closes it.
int open_regular_file(const std::string& path, const std::string& kind, std::vector<std::string>& errors);

// Runs a loader whose result has `errors`; a failed allocation anywhere inside it becomes
// "SOURCE: not enough memory to read this KIND file", never an abort, and what the caller
// had is untouched.
template <class Load, class Body>
Load guard_memory(const std::string& source, const std::string& kind, Body&& body) {
    try {
        return body();
    } catch (const std::bad_alloc&) {
    } catch (const std::length_error&) {
    }
    Load failed;
    failed.errors.push_back(source + ": not enough memory to read this " + kind + " file");
    return failed;
}

// Byte offset → "line L, column C" in text.
std::string line_column(const char* text, std::size_t size, std::size_t offset);

// Bytes the system could still give this process (MemAvailable, or the address-space
// limit when lower); nullopt when it cannot be read.
std::optional<std::uint64_t> available_memory_bytes();
// "1.5 GiB", "320 MiB", "12 KiB": a size as people read it.
std::string byte_size_text(std::uint64_t bytes);

}  // namespace attn
