#include "io/json_write.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include <fcntl.h>
#include <unistd.h>

namespace attn {

using nlohmann::json;

std::string dump_json(const json& j, int indent) { return j.dump(indent, ' ', false, json::error_handler_t::replace); }

namespace {

bool on_one_line(const json& j) {
    if (!j.is_array()) return !j.is_object();
    return std::all_of(j.begin(), j.end(), [](const json& e) { return e.is_primitive(); });
}

void write_rows(const json& j, int indent, int depth, std::string& out) {
    if (on_one_line(j) || j.empty()) {
        out += dump_json(j);
        return;
    }
    const bool object = j.is_object();
    out += object ? "{\n" : "[\n";
    size_t i = 0;
    for (auto it = j.begin(); it != j.end(); ++it, ++i) {
        out.append(static_cast<size_t>((depth + 1) * indent), ' ');
        if (object) out += dump_json(json(it.key())) + ": ";
        write_rows(it.value(), indent, depth + 1, out);
        if (i + 1 < j.size()) out += ',';
        out += '\n';
    }
    out.append(static_cast<size_t>(depth * indent), ' ');
    out += object ? '}' : ']';
}

}  // namespace

std::string dump_json_rows(const json& j, int indent) {
    std::string out;
    write_rows(j, indent, 0, out);
    return out;
}

// [SECTION] Files

namespace {

// The system's reason in words a user can act on, with the system's own text after it.
std::string write_failure(const std::string& path, int error_number) {
    std::string why;
    switch (error_number) {
        case ENOSPC: why = "the disk is full"; break;
        case EDQUOT: why = "the disk quota is used up"; break;
        case EACCES:
        case EPERM: why = "permission denied"; break;
        case EROFS: why = "the file system is read-only"; break;
        case ENOENT: why = "the folder " + std::filesystem::path(path).parent_path().string() + " does not exist"; break;
        case ENOTDIR: why = "a part of the path is not a folder"; break;
        case EISDIR: why = "it is a folder"; break;
        case EFBIG: why = "the file is larger than this system allows"; break;
        default: why = "error"; break;
    }
    std::string message = "cannot write " + path + ": " + why + " (" + std::strerror(error_number) + ")";
    std::error_code ec;
    if (std::filesystem::exists(path, ec)) message += "; the file already there is unchanged";
    return message;
}

}  // namespace

bool write_file_atomic(const std::string& path, const std::string& contents, std::string* error) {
    const std::string tmp = path + ".tmp." + std::to_string(::getpid());
    auto fail = [&](int error_number) {
        if (error) *error = write_failure(path, error_number);
        return false;
    };
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return fail(errno);
    int first_error = 0;
    for (size_t done = 0; done < contents.size() && first_error == 0;) {
        const ssize_t n = ::write(fd, contents.data() + done, contents.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) first_error = n < 0 ? errno : EIO;
        else done += static_cast<size_t>(n);
    }
    if (first_error == 0 && ::fsync(fd) != 0 && errno != EINVAL) first_error = errno;  // EINVAL: a file that cannot be synced
    if (::close(fd) != 0 && first_error == 0) first_error = errno;
    if (first_error == 0 && std::rename(tmp.c_str(), path.c_str()) != 0) first_error = errno;
    if (first_error != 0) {
        ::unlink(tmp.c_str());
        return fail(first_error);
    }
    sync_parent_folder(path);  // the rename itself is durable once the folder is synced
    return true;
}

void sync_parent_folder(const std::string& path) {
    const std::string folder = std::filesystem::path(path).parent_path().string();
    const int dir = ::open(folder.empty() ? "." : folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir >= 0) {
        ::fsync(dir);
        ::close(dir);
    }
}

}  // namespace attn
