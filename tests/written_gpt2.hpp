#pragma once
// GPT-2 checkpoints made in memory (core/model/gpt2's writer), written where the family table
// opens them as it opens a published folder.
#include <unistd.h>

#include <filesystem>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

#include "model/gpt2/checkpoint.hpp"

namespace attn::testing {

// The folders this process wrote, removed when it ends (after every test case's models are gone).
struct WrittenFolders {
    std::vector<std::string> paths;
    ~WrittenFolders() {
        std::error_code ec;
        for (const std::string& path : paths) std::filesystem::remove_all(path, ec);
    }
};
inline WrittenFolders& written_folders() {
    static WrittenFolders folders;
    return folders;
}

// The checkpoint written (F32: every value as it is) to a folder under the temporary folder
// with `tag` and the process in its name (ctest runs each test case as a process of its own,
// side by side: two must not write one folder). The folder stays while the process runs, for
// the weights are read in place from it; throws when it cannot be written.
inline std::string written_gpt2_folder(const gpt2::Checkpoint& checkpoint, const std::string& tag) {
    const std::string folder = (std::filesystem::temp_directory_path() / ("attnlab-test-" + tag + "-" + std::to_string(getpid()) + "-gpt2")).string();
    std::filesystem::remove_all(folder);
    std::string error;
    if (!gpt2::write_checkpoint(folder, checkpoint, {}, &error)) throw std::runtime_error(error);
    written_folders().paths.push_back(folder);
    return folder;
}

}  // namespace attn::testing
