#pragma once
// The catalogue of bad input, one entry per kind, shared by the command-line tests (each
// exits non-zero with a message naming the file and the key or cell and what was expected)
// and the app's tests (opening one keeps the current state and says why).
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace attn::testing {

struct BadInput {
    std::string item;               // what is wrong, as the catalogue names it
    std::string file;               // written under this name
    std::string text;               // the file's contents
    std::vector<std::string> says;  // every fragment the message holds, beside the file name
    bool computes = false;          // NaN, ∞, 1e38 in cells: allowed, computed, every matrix reached marked
    bool folder = false;            // a folder of that name instead of a file
};

// Puts the entry on disk at path (replacing whatever was there).
inline void write_bad_input(const BadInput& bad, const std::string& path) {
    std::filesystem::remove_all(path);
    if (bad.folder) std::filesystem::create_directories(path);
    else std::ofstream(path, std::ios::binary) << bad.text;
}

inline std::vector<BadInput> bad_input_catalogue() {
    const std::string qkv_tail = R"(, "k": [[1, 2], [3, 4]], "v": [[1], [2]]})";
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
         {"top level", "expected a JSON object", "found an array"}},
        {"a huge file", "huge.json", "{\"tokens\": [\"a\"]" + std::string(65u * 1024 * 1024, ' ') + "}",
         {"68157457 bytes", "file is at most 67108864 bytes"}},
        {"a folder where a file was expected", "folder.json", "", {"is a folder, not a"}, false, true},
        {"NaN in a cell", "nan.json", R"({"q": [["nan", 1], [0, 1]])" + qkv_tail, {"from the input Q(0,0)", "NaN or \xC2\xB1\xE2\x88\x9E"}, true},
        {"Inf in a cell", "inf.json", R"({"q": [["-inf", 1], [0, 1]])" + qkv_tail, {"from the input Q(0,0)"}, true},
        {"a session's model without its folder", "session-model.json",
         R"({"format": "attnlab-session", "version": 1, "scenario": {"tokens": ["a", "b"]}, "model": {"sentence": "hi"}})",
         {"key 'model.folder'", "expected the checkpoint folder's path"}},
        {"a session key nothing reads", "session-key.json",
         R"({"format": "attnlab-session", "version": 1, "scenario": {"tokens": ["a", "b"]}, "colour": "red"})",
         {"key 'colour'", "unknown key"}},
        {"1e38 in a cell", "big.json", R"({"q": [[1e38, 1e38], [0, 1]], "k": [[1e38, 1], [3, 4]], "v": [[1], [2]]})",
         {"first appears in head0.scores", "float range"}, true},
    };
}

}  // namespace attn::testing
