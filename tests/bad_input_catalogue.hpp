#pragma once
// The catalogue of bad input, one entry per kind, shared by the command-line tests (each
// exits non-zero with a message naming the file and the key or cell and what was expected)
// and the app's tests (opening one keeps the current state and says why).
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <sys/stat.h>

namespace attn::testing {

struct BadInput {
    std::string item;               // what is wrong, as the catalogue names it
    std::string file;               // written under this name
    std::string text;               // the file's contents
    std::vector<std::string> says;  // every fragment the message holds, beside the file name
    bool computes = false;          // NaN, ∞, 1e38 in cells: allowed, computed, every matrix reached marked
    enum class Made { file, folder, fifo, link };
    Made made = Made::file;         // a folder, a FIFO, or a symbolic link to `text`, instead of a file
};

// Puts the entry on disk at path (replacing whatever was there). A link whose text is empty
// points at itself: a loop.
inline void write_bad_input(const BadInput& bad, const std::string& path) {
    std::filesystem::remove_all(path);
    switch (bad.made) {
        case BadInput::Made::file: std::ofstream(path, std::ios::binary) << bad.text; break;
        case BadInput::Made::folder: std::filesystem::create_directories(path); break;
        case BadInput::Made::fifo: ::mkfifo(path.c_str(), 0600); break;
        case BadInput::Made::link:
            std::filesystem::create_symlink(bad.text.empty() ? std::filesystem::path(path).filename() : std::filesystem::path(bad.text), path);
            break;
    }
}

inline std::vector<BadInput> bad_input_catalogue() {
    const std::string qkv_tail = R"(, "k": [[1, 2], [3, 4]], "v": [[1], [2]]})";
    std::string many_zeros = "[";   // 2^23 + 1 values: the array and 2^23 zeros
    for (int i = 0; i < (1 << 23); ++i) many_zeros += "0,";
    many_zeros.back() = ']';
    return {
        {"malformed JSON", "malformed.json", R"({"tokens": ["a", "b",})", {"line 1, column 22", "not valid JSON", "unexpected '}'"}},
        {"not JSON at all", "picture.json", std::string("\x89PNG\r\n\x1a\n\0\0binary", 16), {"line 1, column 1", "not valid JSON", "\\x89"}},
        {"a wrong type", "wrong-type.json", R"({"d_model": "eight", "tokens": ["a"]})", {"key 'd_model'", "expected an integer", "\"eight\""}},
        {"a ragged matrix", "ragged.json", R"({"q": [[1, 2], [3]])" + qkv_tail, {"key 'q' row 2", "expected 2 numbers", "found 1"}},
        {"Q and K widths disagree", "widths.json", R"({"q": [[1, 2], [3, 4]], "k": [[1, 2, 3], [3, 4, 5]], "v": [[1], [2]]})",
         {"q has 2 columns and k has 3", "same length d_k"}},
        {"heads do not divide d_model", "heads.json", R"({"tokens": ["a", "b"], "d_model": 8, "heads": 3})",
         {"d_model 8 is not divisible by 3 heads"}},
        {"a W of the wrong shape", "w-shape.json", R"({"tokens": ["a", "b"], "d_model": 4, "w_q": [[1, 2], [3, 4]]})",
         {"W_Q is 2\xC3\x97" "2, expected 4\xC3\x97" "4"}},
        {"a negative size", "negative.json", R"({"tokens": ["a", "b"], "d_model": -4})", {"key 'd_model'", "expected 1 to 8192", "found -4"}},
        {"an absurd size", "absurd.json", R"({"tokens": ["a", "b"], "d_model": 1000000000})", {"key 'd_model'", "found 1000000000"}},
        {"d_model = 0", "zero.json", R"({"tokens": ["a", "b"], "d_model": 0})", {"key 'd_model'", "found 0"}},
        {"an empty token list", "empty.json", R"({"tokens": []})", {"no tokens", "at least one"}},
        {"an unknown enum value", "enum.json", R"({"tokens": ["a"], "mask": "diagonal"})",
         {"key 'mask'", "expected one of \"none\", \"causal\"", "found \"diagonal\""}},
        {"invalid UTF-8 in token text", "utf8.json", "{\"tokens\": [\"a\", \"\xFF\xFE\"]}",
         {"line 1, column 19", "ill-formed UTF-8", "\\xFF", "text must be UTF-8"}},
        {"deeply nested JSON", "nested.json", std::string(100000, '[') + std::string(100000, ']'),
         {"line 1, column 17", "nested deeper than 16 levels", "; a scenario file nests at most 16"}},
        {"deeply nested JSON, 60 MB", "nested-60mb.json", std::string(60u << 20, '['),
         {"line 1, column 17", "nested deeper than 16 levels"}},
        {"more values than a scenario holds", "values.json", many_zeros,
         {"line 1, column 16777216", "more than 8388608 values; a scenario file holds at most 8388608"}},
        {"a key twice in one object", "twice.json", R"({"tokens": ["a", "b"], "heads": 1, "heads": 2})",
         {"line 1, column 36", "key 'heads' appears twice in the same object (the top level)", "each key may appear once"}},
        {"a key twice in a nested object", "twice-nested.json",
         "{\"tokens\": [\"a\", \"b\"],\n \"block\": {\"enabled\": true,\n  \"enabled\": false}}",
         {"line 3, column 3", "key 'enabled' appears twice", "(at 'block')"}},
        {"a FIFO where a file was expected", "pipe.json", "", {"is a FIFO (named pipe), not a"}, false, BadInput::Made::fifo},
        {"a link to /dev/zero", "zero.json", "/dev/zero", {"is a character device, not a"}, false, BadInput::Made::link},
        {"a symbolic link loop", "loop.json", "", {"cannot open: too many levels of symbolic links"}, false, BadInput::Made::link},
        {"a huge file", "huge.json", "{\"tokens\": [\"a\"]" + std::string(65u * 1024 * 1024, ' ') + "}",
         {"68157457 bytes", "file is at most 67108864 bytes"}},
        {"a folder where a file was expected", "folder.json", "", {"is a folder, not a"}, false, BadInput::Made::folder},
        {"NaN in a cell", "nan.json", R"({"q": [["nan", 1], [0, 1]])" + qkv_tail, {"from the input Q(1,1)", "NaN or \xC2\xB1\xE2\x88\x9E"}, true},
        {"Inf in a cell", "inf.json", R"({"q": [["-inf", 1], [0, 1]])" + qkv_tail, {"from the input Q(1,1)"}, true},
        {"a session's model without its folder", "session-model.json",
         R"({"format": "attnlab-session", "version": 1, "scenario": {"tokens": ["a", "b"]}, "model": {"sentence": "hi"}})",
         {"key 'model.folder'", "expected the checkpoint folder's path"}},
        {"a session version past int's range", "session-version.json",
         R"({"format": "attnlab-session", "version": 4294967297, "scenario": {"tokens": ["a", "b"]}})",
         {"unsupported session version 4294967297", "this app reads versions 1 to 2"}},
        {"a session view step past int's range", "session-step.json",
         R"({"format": "attnlab-session", "version": 1, "scenario": {"tokens": ["a", "b"]}, "view": {"step": 4294967297}})",
         {"key 'view.step'", "expected an integer from 0 to 2147483647"}},
        {"a session model layer past int's range", "session-layer.json",
         R"({"format": "attnlab-session", "version": 1, "scenario": {"tokens": ["a", "b"]}, "model": {"folder": "/m", "layer": 4294967297}})",
         {"key 'model.layer'", "expected a count from 1 (0: none)"}},
        {"a session key nothing reads", "session-key.json",
         R"({"format": "attnlab-session", "version": 1, "scenario": {"tokens": ["a", "b"]}, "colour": "red"})",
         {"key 'colour'", "unknown key"}},
        {"1e38 in a cell", "big.json", R"({"q": [[1e38, 1e38], [0, 1]], "k": [[1e38, 1], [3, 4]], "v": [[1], [2]]})",
         {"first appears in head 1 \xC2\xB7 scores", "float range"}, true},
    };
}

}  // namespace attn::testing
