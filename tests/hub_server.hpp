#pragma once
// A tiny HTTP/1.1 server that answers as the Hugging Face hub does, from files held in
// memory, on 127.0.0.1 and a port the system picks: the download's tests never reach the
// internet. One connection at a time, each closed after its answer.
//
//   GET       /api/models/<id>/revision/<rev>   {"sha": <commit>, "siblings": [{"rfilename": …}, …]}
//   HEAD|GET  /<id>/resolve/<rev>/<file>        a git file: 200, ETag "<40 hex>", its bytes
//                                               an LFS file: 302 to /lfs/<etag>, X-Linked-Etag,
//                                               X-Linked-Size, ETag of the pointer file
//   HEAD|GET  /lfs/<etag>                       an LFS file's bytes
// Every resolve answer carries X-Repo-Commit; GET honours "Range: bytes=N-" with 206 (or 416).
// Faults, per file or for the server: drop the connection after N body bytes (once), stall
// after N bytes until the client hangs up (once), a wrong etag, a 404 at resolve, 401 unless a
// given token is sent, a Range ignored (200 with the whole file), no size (HEAD and its redirect
// without X-Linked-Size or Content-Length), a GET without Content-Length that never ends, and
// every request answered with one error (a status, X-Error-Code and X-Error-Message).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "checkpoint/hf_download.hpp"

namespace attn::testing {

struct HubFile {
    std::string body;
    bool lfs = false;
    std::string etag;                              // empty: the body's SHA-256 (LFS) or a made-up git id
    std::size_t drop_after = std::string::npos;    // close the connection after this many body bytes (once)
    std::size_t stall_after = std::string::npos;   // send this many, then wait for the client to hang up (once)
    bool missing = false;                          // listed, but resolve answers 404 EntryNotFound
    bool no_size = false;                          // HEAD (and an LFS redirect) give no size
    bool endless = false;                          // GET: no Content-Length, the body again and again until the client hangs up
};

struct HubRepo {
    std::string id;
    std::string commit;
    std::vector<std::string> revisions{"main"};
    std::map<std::string, HubFile> files;
};

struct HubRequest {
    std::string method, path;
    std::map<std::string, std::string> headers;  // names in lower case
    std::string header(const std::string& name) const {
        const auto it = headers.find(name);
        return it == headers.end() ? std::string() : it->second;
    }
};

class HubServer {
public:
    HubServer() {
        listener_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_in address{};
        address.sin_family = AF_INET;
        address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        address.sin_port = 0;
        socklen_t length = sizeof address;
        if (listener_ < 0 || ::bind(listener_, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 || ::listen(listener_, 16) != 0 ||
            ::getsockname(listener_, reinterpret_cast<sockaddr*>(&address), &length) != 0)
            std::abort();
        port_ = ntohs(address.sin_port);
        thread_ = std::thread([this] { serve(); });
    }
    ~HubServer() {
        stopping_ = true;
        ::shutdown(listener_, SHUT_RDWR);  // wakes accept()
        {
            std::lock_guard<std::mutex> lock(mutex_);
            if (client_ >= 0) ::shutdown(client_, SHUT_RDWR);  // wakes a stalled answer
        }
        thread_.join();
        ::close(listener_);
    }
    HubServer(const HubServer&) = delete;
    HubServer& operator=(const HubServer&) = delete;

    std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }

    void add(HubRepo repo) {
        std::lock_guard<std::mutex> lock(mutex_);
        for (auto& [name, file] : repo.files)
            if (file.etag.empty()) file.etag = file.lfs ? hf::sha256_hex(file.body.data(), file.body.size()) : git_id(file.body);
        repos_[repo.id] = std::move(repo);
    }
    // Changes a file's faults (or body) between downloads.
    void change(const std::string& repo, const std::string& name, const std::function<void(HubFile&)>& edit) {
        std::lock_guard<std::mutex> lock(mutex_);
        edit(repos_.at(repo).files.at(name));
    }
    void require_token(const std::string& token) {
        std::lock_guard<std::mutex> lock(mutex_);
        required_token_ = token;
    }
    // Every request answered with this error (status 0: none).
    void fail_every_request(int status, const std::string& code, const std::string& message) {
        std::lock_guard<std::mutex> lock(mutex_);
        failure_ = error(status, code, message);
    }
    void ignore_range(bool ignore) {
        std::lock_guard<std::mutex> lock(mutex_);
        ignore_range_ = ignore;
    }
    std::vector<HubRequest> requests() const {
        std::lock_guard<std::mutex> lock(mutex_);
        return requests_;
    }
    void clear_requests() {
        std::lock_guard<std::mutex> lock(mutex_);
        requests_.clear();
    }

    // A made-up git object id: 40 hex digits that change with the bytes.
    static std::string git_id(const std::string& body) { return hf::sha256_hex(("blob " + body).data(), body.size() + 5).substr(0, 40); }

private:
    struct Answer {
        int status = 200;
        std::vector<std::pair<std::string, std::string>> headers;
        std::string body;
        std::size_t drop_after = std::string::npos, stall_after = std::string::npos;
        bool no_length = false;  // no Content-Length: the body ends when the connection does
        bool endless = false;    // the body sent again and again until the client hangs up
    };

    void serve() {
        while (!stopping_) {
            const int client = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
            if (client < 0) {
                if (stopping_) return;
                continue;
            }
            {
                std::lock_guard<std::mutex> lock(mutex_);
                client_ = client;
            }
            converse(client);
            {
                std::lock_guard<std::mutex> lock(mutex_);
                client_ = -1;
            }
            ::close(client);
        }
    }

    void converse(int client) {
        std::string request;
        char buffer[4096];
        while (request.find("\r\n\r\n") == std::string::npos) {
            const ssize_t r = ::recv(client, buffer, sizeof buffer, 0);
            if (r <= 0 || request.size() > 65536) return;
            request.append(buffer, static_cast<size_t>(r));
        }
        HubRequest parsed = parse(request.substr(0, request.find("\r\n\r\n")));
        Answer answer;
        {
            std::lock_guard<std::mutex> lock(mutex_);
            requests_.push_back(parsed);
            answer = route(parsed);
        }
        std::string head = "HTTP/1.1 " + std::to_string(answer.status) + " " + reason(answer.status) + "\r\n";
        for (const auto& [name, value] : answer.headers) head += name + ": " + value + "\r\n";
        if (!answer.no_length) head += "Content-Length: " + std::to_string(answer.body.size()) + "\r\n";
        head += "Connection: close\r\n\r\n";
        if (!send_all(client, head)) return;
        if (parsed.method == "HEAD") return;
        if (answer.endless) {  // until the client hangs up (or the server stops): bounded by the client alone
            while (!stopping_ && send_all(client, answer.body)) {
            }
            return;
        }
        const std::size_t cut = std::min(answer.drop_after, answer.stall_after);
        if (!send_all(client, answer.body.substr(0, std::min(cut, answer.body.size())))) return;
        if (answer.stall_after < answer.body.size()) {
            while (::recv(client, buffer, sizeof buffer, 0) > 0) {  // until the client hangs up
            }
        }
    }

    static bool send_all(int client, const std::string& bytes) {
        for (size_t sent = 0; sent < bytes.size();) {
            const ssize_t s = ::send(client, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
            if (s <= 0) return false;
            sent += static_cast<size_t>(s);
        }
        return true;
    }

    static std::string decode(const std::string& text) {
        std::string decoded;
        for (size_t i = 0; i < text.size(); ++i) {
            if (text[i] == '%' && i + 2 < text.size()) {
                decoded += static_cast<char>(std::strtol(text.substr(i + 1, 2).c_str(), nullptr, 16));
                i += 2;
            } else {
                decoded += text[i];
            }
        }
        return decoded;
    }

    static HubRequest parse(const std::string& text) {
        HubRequest request;
        size_t line_end = text.find("\r\n");
        const std::string first = text.substr(0, line_end);
        const size_t space = first.find(' ');
        request.method = first.substr(0, space);
        request.path = first.substr(space + 1, first.find(' ', space + 1) - space - 1);
        while (line_end != std::string::npos) {
            const size_t start = line_end + 2;
            line_end = text.find("\r\n", start);
            const std::string line = text.substr(start, line_end == std::string::npos ? std::string::npos : line_end - start);
            const size_t colon = line.find(':');
            if (colon == std::string::npos) continue;
            std::string name = line.substr(0, colon);
            for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
            request.headers[name] = line.substr(line.find_first_not_of(' ', colon + 1));
        }
        return request;
    }

    static const char* reason(int status) {
        switch (status) {
            case 200: return "OK";
            case 206: return "Partial Content";
            case 302: return "Found";
            case 401: return "Unauthorized";
            case 404: return "Not Found";
            case 416: return "Range Not Satisfiable";
            case 500: return "Internal Server Error";
            default: return "Status";
        }
    }

    static Answer error(int status, const std::string& code, const std::string& message) {
        Answer answer;
        answer.status = status;
        answer.headers = {{"X-Error-Code", code}, {"X-Error-Message", message}, {"Content-Type", "application/json"}};
        answer.body = "{\"error\": \"" + message + "\"}";
        return answer;
    }

    // The file's bytes, or the part a Range asks for.
    Answer bytes(const HubRequest& request, HubFile& file) {
        Answer answer;
        answer.headers.push_back({"ETag", "\"" + file.etag + "\""});
        answer.headers.push_back({"Accept-Ranges", "bytes"});
        const std::string range = request.header("range");
        size_t from = 0;
        if (!range.empty() && !ignore_range_ && request.method == "GET") {
            from = std::strtoull(range.c_str() + range.find('=') + 1, nullptr, 10);
            if (from >= file.body.size()) {
                answer.status = 416;
                answer.headers.push_back({"Content-Range", "bytes */" + std::to_string(file.body.size())});
                return answer;
            }
            answer.status = 206;
            answer.headers.push_back({"Content-Range", "bytes " + std::to_string(from) + "-" + std::to_string(file.body.size() - 1) + "/" +
                                                          std::to_string(file.body.size())});
        }
        answer.body = file.body.substr(from);
        if (file.no_size) answer.no_length = request.method == "HEAD";
        if (file.endless && request.method == "GET") answer.no_length = answer.endless = true;
        if (request.method == "GET") {
            std::swap(answer.drop_after, file.drop_after);  // once
            std::swap(answer.stall_after, file.stall_after);
        }
        return answer;
    }

    bool authorised(const HubRequest& request) const {
        return required_token_.empty() || request.header("authorization") == "Bearer " + required_token_;
    }

    Answer route(const HubRequest& request) {
        if (failure_.status != 0) return failure_;
        const std::string& path = request.path;
        if (path.rfind("/lfs/", 0) == 0) {
            for (auto& [id, repo] : repos_)
                for (auto& [name, file] : repo.files)
                    if (file.lfs && "/lfs/" + file.etag == path) return bytes(request, file);
            return error(404, "EntryNotFound", "no such object");
        }
        if (path.rfind("/api/models/", 0) == 0) {
            const size_t revision = path.find("/revision/");
            if (revision == std::string::npos) return error(404, "RepoNotFound", "Repository not found");
            const std::string id = path.substr(12, revision - 12);
            const auto repo = repos_.find(id);
            if (repo == repos_.end()) return error(404, "RepoNotFound", "Repository not found");
            if (!authorised(request)) return error(401, "GatedRepo", "Access to model " + id + " is restricted.");
            const HubRepo& r = repo->second;
            const std::string rev = decode(path.substr(revision + 10));
            if (rev != r.commit && std::find(r.revisions.begin(), r.revisions.end(), rev) == r.revisions.end())
                return error(404, "RevisionNotFound", "Invalid rev id: " + rev);
            Answer answer;
            answer.headers.push_back({"Content-Type", "application/json"});
            answer.body = "{\"id\": \"" + id + "\", \"sha\": \"" + r.commit + "\", \"siblings\": [";
            bool first = true;
            for (const auto& [name, file] : r.files) {
                answer.body += std::string(first ? "" : ", ") + "{\"rfilename\": \"" + name + "\"}";
                first = false;
            }
            answer.body += "]}";
            return answer;
        }
        const size_t resolve = path.find("/resolve/");
        if (resolve == std::string::npos) return error(404, "", "no such page");
        const std::string id = path.substr(1, resolve - 1);
        const auto repo = repos_.find(id);
        if (repo == repos_.end()) return error(404, "RepoNotFound", "Repository not found");
        if (!authorised(request)) return error(401, "GatedRepo", "Access to model " + id + " is restricted.");
        HubRepo& r = repo->second;
        const size_t file_start = path.find('/', resolve + 9);
        const std::string rev = decode(path.substr(resolve + 9, file_start - resolve - 9));
        if (rev != r.commit && std::find(r.revisions.begin(), r.revisions.end(), rev) == r.revisions.end())
            return error(404, "RevisionNotFound", "Invalid rev id: " + rev);
        const auto file = r.files.find(decode(path.substr(file_start + 1)));
        if (file == r.files.end() || file->second.missing) return error(404, "EntryNotFound", "Entry not found");
        Answer answer;
        if (file->second.lfs) {
            answer.status = 302;
            answer.headers = {{"Location", endpoint() + "/lfs/" + file->second.etag},
                              {"X-Linked-Etag", "\"" + file->second.etag + "\""},
                              {"X-Linked-Size", std::to_string(file->second.body.size())},
                              {"ETag", "\"" + git_id("pointer " + file->second.etag) + "\""}};
            if (file->second.no_size) answer.headers.erase(answer.headers.begin() + 2);
        } else {
            answer = bytes(request, file->second);
        }
        answer.headers.push_back({"X-Repo-Commit", r.commit});
        return answer;
    }

    int listener_ = -1;
    int client_ = -1;
    int port_ = 0;
    std::atomic<bool> stopping_{false};
    std::thread thread_;
    mutable std::mutex mutex_;
    std::map<std::string, HubRepo> repos_;
    std::string required_token_;
    bool ignore_range_ = false;
    Answer failure_{0, {}, {}};
    std::vector<HubRequest> requests_;
};

}  // namespace attn::testing
