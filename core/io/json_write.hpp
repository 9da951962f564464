#pragma once
// What every writer of a file (scenarios, sessions, models, checkpoints, exports) shares: JSON
// text that never throws, and a file written whole or not at all.
#include <string>

#include <nlohmann/json.hpp>

namespace attn {

// JSON text that never throws: invalid UTF-8 in a string is written as U+FFFD.
std::string dump_json(const nlohmann::json& j, int indent = -1);
// As dump_json with `indent`, except that an array of numbers, strings or booleans (a vector,
// a matrix's row) is written on one line: a session holding a model's weights reads as rows,
// not as one number a line.
std::string dump_json_rows(const nlohmann::json& j, int indent);

// Writes to PATH.tmp, flushes, renames over PATH: a crash never leaves a half file.
// Returns false and sets *error (with the system's reason) on failure.
bool write_file_atomic(const std::string& path, const std::string& contents, std::string* error);
// After a file was renamed into place: syncs the folder that holds PATH, so the rename
// itself survives a crash (best effort: a folder that cannot be opened is left alone).
void sync_parent_folder(const std::string& path);

}  // namespace attn
