#pragma once
// What stands at a path, in words: the one wording of every message about a path that is
// not the kind of file asked for (the JSON readers, checkpoint folders, --model).
#include <cerrno>
#include <cstring>
#include <string>

#include <sys/stat.h>

namespace attn {

// "a folder", "a FIFO (named pipe)", "a character device", …: a stat mode in words.
inline std::string kind_of_mode(mode_t mode) {
    if (S_ISREG(mode)) return "a file";
    if (S_ISDIR(mode)) return "a folder";
    if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    if (S_ISSOCK(mode)) return "a socket";
    return "not a regular file";
}

// Why stat or open failed, in words.
inline std::string reason_of_errno(int error) {
    switch (error) {
        case ENOENT: return "no such file";
        case ELOOP: return "too many levels of symbolic links (a loop?)";
        case ENOTDIR: return "a part of the path is not a folder";
        case EACCES: return "permission denied";
        default: return std::strerror(error);
    }
}

}  // namespace attn
