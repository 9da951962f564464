// Index:
//   [SECTION] Names, URLs and the cache's paths
//   [SECTION] HTTP through libcurl
//   [SECTION] Errors in words
//   [SECTION] The repository's files
//   [SECTION] One file into blobs/
//   [SECTION] download_model
#include "checkpoint/hf_download.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <system_error>

#include <curl/curl.h>
// SHA-256 from OpenSSL's libcrypto (EVP): the libcurl of libcurl4-openssl-dev already loads
// libssl3/libcrypto into the process for TLS, so the checksum adds no library (nettle would
// be a second crypto library beside it).
#include <openssl/evp.h>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/json_read.hpp"
#include "io/messages.hpp"
#include "io/path_kind.hpp"

namespace attn::hf {

namespace fs = std::filesystem;

namespace {

// [SECTION] Names, URLs and the cache's paths

// Python's urllib.parse.quote: letters, digits and "_.-~" stay, "/" too when `keep_slash`;
// every other byte becomes %XX.
std::string quote(const std::string& text, bool keep_slash) {
    static const char* hex = "0123456789ABCDEF";
    std::string quoted;
    for (unsigned char c : text) {
        if (std::isalnum(c) || c == '_' || c == '.' || c == '-' || c == '~' || (keep_slash && c == '/')) {
            quoted += static_cast<char>(c);
        } else {
            quoted += '%';
            quoted += hex[c >> 4];
            quoted += hex[c & 15];
        }
    }
    return quoted;
}

// "org/name" → "models--org--name", as hf_cache.cpp and huggingface_hub name the folder.
std::string folder_name(const std::string& id) {
    std::string name = "models--";
    for (char c : id) name += c == '/' ? std::string("--") : std::string(1, c);
    return name;
}

bool all_hex(const std::string& text, size_t length) {
    return text.size() == length && std::all_of(text.begin(), text.end(), [](char c) { return std::isxdigit(static_cast<unsigned char>(c)); });
}

// An LFS file's etag is the SHA-256 of its bytes; a git file's is its git object id (40 digits).
bool is_sha256(const std::string& etag) { return all_hex(etag, 64); }

// ETag: W/"<value>" or "<value>" → <value>, as huggingface_hub's _normalize_etag.
std::string normalise_etag(std::string etag) {
    if (etag.rfind("W/", 0) == 0) etag.erase(0, 2);
    while (!etag.empty() && etag.front() == '"') etag.erase(0, 1);
    while (!etag.empty() && etag.back() == '"') etag.pop_back();
    return etag;
}

// An etag becomes a file name in blobs/: letters, digits, "-" and "_" only.
bool safe_etag(const std::string& etag) {
    return !etag.empty() && etag.size() <= 128 &&
           std::all_of(etag.begin(), etag.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_'; });
}

// A file the hub lists, safe to join under snapshots/<commit>/: relative, no empty, "." or
// ".." part, no backslash or control character (a hostile listing must not write elsewhere).
bool safe_relative_path(const std::string& path) {
    if (path.empty() || path.size() > 1024 || path.front() == '/' || path.back() == '/') return false;
    for (unsigned char c : path)
        if (c < 0x20 || c == 0x7F || c == '\\') return false;
    size_t start = 0;
    while (start <= path.size()) {
        const size_t end = std::min(path.find('/', start), path.size());
        const std::string part = path.substr(start, end - start);
        if (part.empty() || part == "." || part == "..") return false;
        start = end + 1;
    }
    return true;
}

bool ends_with(const std::string& text, const std::string& end) {
    return text.size() >= end.size() && text.compare(text.size() - end.size(), end.size(), end) == 0;
}

// "https://host:port/a/b" → "https://host:port".
std::string origin_of(const std::string& url) {
    const size_t scheme = url.find("://");
    if (scheme == std::string::npos) return url;
    const size_t path = url.find('/', scheme + 3);
    return path == std::string::npos ? url : url.substr(0, path);
}

// snapshots/<commit>/a/b.json → "../../../blobs/<etag>": one "../" per folder up to the repository's.
std::string link_target(const std::string& rfilename, const std::string& etag) {
    std::string target = "../../";
    for (char c : rfilename)
        if (c == '/') target += "../";
    return target + "blobs/" + etag;
}

// [SECTION] HTTP through libcurl

struct CurlDeleter {
    void operator()(CURL* curl) const { curl_easy_cleanup(curl); }
};
struct HeaderListDeleter {
    void operator()(curl_slist* list) const { curl_slist_free_all(list); }
};
using Curl = std::unique_ptr<CURL, CurlDeleter>;
using HeaderList = std::unique_ptr<curl_slist, HeaderListDeleter>;

void init_curl_once() {
    static std::once_flag once;
    std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

// The answer to one request: the last response's status and headers (after redirects).
struct Response {
    CURLcode code = CURLE_OK;
    char curl_error[CURL_ERROR_SIZE] = {};
    long status = 0;
    std::map<std::string, std::string> headers;  // names in lower case
    std::string body;                            // the API's JSON, or the start of an error page

    std::string header(const std::string& lower_name) const {
        const auto it = headers.find(lower_name);
        return it == headers.end() ? std::string() : it->second;
    }
};

size_t on_header(char* data, size_t size, size_t count, void* user) {
    Response& response = *static_cast<Response*>(user);
    const size_t n = size * count;
    std::string line(data, n);
    while (!line.empty() && (line.back() == '\r' || line.back() == '\n')) line.pop_back();
    if (line.rfind("HTTP/", 0) == 0) {  // a new response (after a redirect): forget the last one's headers
        response.headers.clear();
        const size_t space = line.find(' ');
        response.status = space == std::string::npos ? 0 : std::strtol(line.c_str() + space + 1, nullptr, 10);
        return n;
    }
    const size_t colon = line.find(':');
    if (colon == std::string::npos) return n;
    std::string name = line.substr(0, colon);
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    const size_t value = line.find_first_not_of(" \t", colon + 1);
    response.headers[name] = value == std::string::npos ? std::string() : line.substr(value);
    return n;
}

constexpr size_t kMaxBody = size_t(1) << 25;  // a model's file list: a few MB at most

size_t keep_body(char* data, size_t size, size_t count, void* user) {
    Response& response = *static_cast<Response*>(user);
    const size_t n = size * count;
    if (response.body.size() + n > kMaxBody) return 0;  // refused: CURLE_WRITE_ERROR
    response.body.append(data, n);
    return n;
}

// A request with what every request to the hub carries: the token, no compression (sizes
// are the files'), http(s) only, a connect timeout and a low-speed limit.
Curl new_request(const std::string& url, const DownloadOptions& options, Response& response, HeaderList& headers,
                 const std::string& range = {}) {
    init_curl_once();
    Curl curl(curl_easy_init());
    if (!curl) return curl;
    curl_slist* list = nullptr;
    if (!options.token.empty()) list = curl_slist_append(list, ("Authorization: Bearer " + options.token).c_str());
    list = curl_slist_append(list, "Accept-Encoding: identity");
    if (!range.empty()) list = curl_slist_append(list, ("Range: " + range).c_str());
    headers.reset(list);
    CURL* c = curl.get();
    curl_easy_setopt(c, CURLOPT_URL, url.c_str());
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, list);
    curl_easy_setopt(c, CURLOPT_USERAGENT, "attnlab");
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);  // called from worker threads
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_MAXREDIRS, 10L);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, options.stall_seconds);
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, options.stall_seconds);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, response.curl_error);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, &response);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, keep_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &response);
    return curl;
}

// The cancel flag, checked by curl's progress function on requests without a body to track.
int check_cancel(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
    const auto* cancel = static_cast<const std::atomic<bool>*>(user);
    return cancel != nullptr && cancel->load() ? 1 : 0;
}

void perform(CURL* curl, Response& response, const DownloadOptions& options, bool track_cancel = true) {
    if (track_cancel) {
        curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
        curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, check_cancel);
        curl_easy_setopt(curl, CURLOPT_XFERINFODATA, const_cast<std::atomic<bool>*>(options.cancel));
    }
    response.code = curl_easy_perform(curl);
}

// HEAD, following only redirects within the hub (a renamed repository), as huggingface_hub
// does: an LFS file's redirect to its storage is not followed, its X-Linked-* headers are
// what is wanted.
Response head(std::string url, const DownloadOptions& options) {
    Response response;
    for (int hop = 0; hop < 5; ++hop) {
        response = Response();
        HeaderList headers;
        Curl curl = new_request(url, options, response, headers);
        if (!curl) {
            response.code = CURLE_OUT_OF_MEMORY;
            return response;
        }
        curl_easy_setopt(curl.get(), CURLOPT_NOBODY, 1L);
        perform(curl.get(), response, options);
        const std::string location = response.header("location");
        if (response.code != CURLE_OK || response.status < 300 || response.status > 399 || location.empty() || location[0] != '/') break;
        url = origin_of(url) + location;
    }
    return response;
}

// [SECTION] Errors in words

// What a request is about, for its messages.
struct Subject {
    const RepoId& repo;
    const DownloadOptions& options;
    std::string file;  // empty: the repository's file list
};

std::string curl_detail(const Response& response) {
    return response.curl_error[0] != '\0' ? std::string(response.curl_error) : std::string(curl_easy_strerror(response.code));
}

// A request that got no HTTP answer.
std::string transfer_error(const Response& response, const std::string& url, const DownloadOptions& options) {
    switch (response.code) {
        case CURLE_COULDNT_RESOLVE_HOST:
            return url + ": the host name does not resolve (" + curl_detail(response) + "): no network, or a DNS failure";
        case CURLE_COULDNT_RESOLVE_PROXY:
            return url + ": the proxy's host name does not resolve (" + curl_detail(response) + "): check https_proxy";
        case CURLE_COULDNT_CONNECT:
            return url + ": cannot connect (" + curl_detail(response) + "): no network, or the server is down";
        case CURLE_OPERATION_TIMEDOUT:
            return url + ": no answer within " + std::to_string(options.stall_seconds) + " s (" + curl_detail(response) + ")";
        case CURLE_SSL_CONNECT_ERROR:
        case CURLE_PEER_FAILED_VERIFICATION:
        case CURLE_SSL_CACERT_BADFILE:
        case CURLE_SSL_CERTPROBLEM:
            return url + ": the secure connection failed (" + curl_detail(response) + ")";
        case CURLE_UNSUPPORTED_PROTOCOL:
            return url + ": not an http:// or https:// address (HF_ENDPOINT?)";
        case CURLE_URL_MALFORMAT:
            return url + ": not a valid address (HF_ENDPOINT?)";
        default:
            return url + ": " + curl_detail(response);
    }
}

// What an HTTP status means, in the words of RFC 9110 (and 429 of RFC 6585); empty for others.
std::string status_meaning(long status) {
    switch (status) {
        case 400: return "Bad Request";
        case 401: return "Unauthorized";
        case 403: return "Forbidden";
        case 404: return "Not Found";
        case 408: return "Request Timeout";
        case 410: return "Gone";
        case 429: return "Too Many Requests";
        case 500: return "Internal Server Error";
        case 501: return "Not Implemented";
        case 502: return "Bad Gateway";
        case 503: return "Service Unavailable";
        case 504: return "Gateway Timeout";
        default: return {};
    }
}

// A request the server answered with an error status.
std::string http_error(const Response& response, const std::string& url, const Subject& about) {
    const std::string& id = about.repo.id;
    const std::string& endpoint = about.options.endpoint;
    const std::string code = response.header("x-error-code");
    const std::string message = printable(response.header("x-error-message"), 300);
    const std::string meaning = status_meaning(response.status);
    const std::string status = "HTTP " + std::to_string(response.status) + (meaning.empty() ? std::string() : " " + meaning) +
                               (message.empty() ? std::string() : ", \"" + message + "\"");
    // The status class first: a server error is the server's, whatever code it names.
    if (response.status >= 500)
        return url + ": the server failed (" + status + "): an error on the hub's side, not a missing or private model; try again later";
    const std::string token_advice =
        about.options.token.empty()
            ? "no token was sent: set HF_TOKEN to an access token from " + endpoint + "/settings/tokens (for a gated model, accept its terms on " +
                  endpoint + "/" + id + " first)"
            : "a token was sent (HF_TOKEN) and the hub refused it: check that it is valid and can read " + id +
                  " (for a gated model, accept its terms on " + endpoint + "/" + id + " first)";
    if (code == "RevisionNotFound")
        return url + ": " + id + " has no revision '" + about.repo.revision + "' (" + status + ")";
    if (code == "EntryNotFound") return url + ": " + id + " has no file " + about.file + " (" + status + ")";
    if (code == "GatedRepo" || response.status == 403)
        return url + ": " + id + " is a gated or private model (" + status + "); " + token_advice;
    if (response.status == 401 || (code == "RepoNotFound" && !about.options.token.empty()))
        return url + ": no repository " + id + " that this request may read (" + status + "): either it does not exist, or it is private or gated and " +
               token_advice;
    if (response.status == 404 || code == "RepoNotFound") {
        if (code == "RepoNotFound") return url + ": no repository " + id + " on " + endpoint + " (" + status + "): check the name";
        if (!about.file.empty()) return url + ": " + id + " has no file " + about.file + " (" + status + ")";
        return url + ": no repository " + id + " with a revision '" + about.repo.revision + "' on " + endpoint + " (" + status + "): check the name and the revision";
    }
    if (response.status == 429) return url + ": too many requests (" + status + "): wait a few minutes and run again";
    return url + ": the server answered " + status;
}

// Why the cache cannot be written, naming the path.
std::string cache_error(const fs::path& path, int error) {
    if (error == ENOSPC || error == EDQUOT)
        return "the disk holding " + path.string() + " is full (" + std::strerror(error) + "): free some space and run again";
    return "cannot write the Hugging Face cache at " + path.string() + ": " + reason_of_errno(error) +
           " (set HF_HUB_CACHE to a writable folder)";
}

std::string cache_error(const fs::path& path, const std::error_code& ec) { return cache_error(path, ec.value()); }

// [SECTION] The repository's files

struct Listing {
    std::string commit;
    std::vector<std::string> files;
    std::string error;
};

Listing list_files(const RepoId& repo, const DownloadOptions& options) {
    Listing listing;
    const std::string url = options.endpoint + "/api/models/" + repo.id + "/revision/" + quote(repo.revision, false);
    Response response;
    HeaderList headers;
    Curl curl = new_request(url, options, response, headers);
    if (!curl) {
        listing.error = url + ": libcurl could not start a request";
        return listing;
    }
    curl_easy_setopt(curl.get(), CURLOPT_FOLLOWLOCATION, 1L);
    perform(curl.get(), response, options);
    if (response.code == CURLE_ABORTED_BY_CALLBACK) {
        listing.error = "cancelled";
        return listing;
    }
    if (response.code != CURLE_OK) {
        listing.error = transfer_error(response, url, options);
        return listing;
    }
    if (response.status != 200) {
        listing.error = http_error(response, url, Subject{repo, options, {}});
        return listing;
    }
    std::vector<std::string> errors;
    const std::optional<nlohmann::json> info = parse_json(response.body, url, errors, JsonLimits{"model info", 64, 1u << 22});
    if (!info || !info->is_object() || !info->contains("sha") || !(*info)["sha"].is_string() || !all_hex((*info)["sha"].get<std::string>(), 40)) {
        listing.error = url + ": not the hub's model information (no 40-digit \"sha\")" + (errors.empty() ? std::string() : ": " + errors.front());
        return listing;
    }
    listing.commit = (*info)["sha"].get<std::string>();
    std::transform(listing.commit.begin(), listing.commit.end(), listing.commit.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (info->contains("siblings") && (*info)["siblings"].is_array())
        for (const nlohmann::json& sibling : (*info)["siblings"])
            if (sibling.is_object() && sibling.contains("rfilename") && sibling["rfilename"].is_string())
                listing.files.push_back(sibling["rfilename"].get<std::string>());
    return listing;
}

// [SECTION] One file into blobs/

// A file of the snapshot: what HEAD said of it, and whether the cache holds it already.
struct RemoteFile {
    std::string name;           // "model.safetensors"
    std::string etag;           // its blob's name
    std::uint64_t size = 0;
    bool size_known = false;
    bool in_snapshot = false;   // snapshots/<commit>/<name> already resolves to a file
};

// Everything one download shares across its files.
struct Run {
    const RepoId& repo;
    const DownloadOptions& options;
    fs::path repo_folder;
    std::string commit;
    DownloadProgress progress;  // done: the finished files' bytes
    std::uint64_t bytes_fetched = 0;
};

struct ShaDeleter {
    void operator()(EVP_MD_CTX* context) const { EVP_MD_CTX_free(context); }
};
using Sha = std::unique_ptr<EVP_MD_CTX, ShaDeleter>;

Sha new_sha256() {
    Sha sha(EVP_MD_CTX_new());
    if (sha && EVP_DigestInit_ex(sha.get(), EVP_sha256(), nullptr) != 1) sha.reset();
    return sha;
}

std::string hex_digest(EVP_MD_CTX* sha) {
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int length = 0;
    EVP_DigestFinal_ex(sha, digest, &length);
    static const char* hex = "0123456789abcdef";
    std::string text;
    for (unsigned int i = 0; i < length; ++i) {
        text += hex[digest[i] >> 4];
        text += hex[digest[i] & 15];
    }
    return text;
}

// A file descriptor closed when it goes out of scope.
class FileHandle {
public:
    explicit FileHandle(int fd) : fd_(fd) {}
    ~FileHandle() {
        if (fd_ >= 0) ::close(fd_);
    }
    FileHandle(const FileHandle&) = delete;
    FileHandle& operator=(const FileHandle&) = delete;
    int get() const { return fd_; }

private:
    int fd_;
};

// The state curl's callbacks share while a file's body arrives in blobs/<etag>.incomplete.
// A file whose size the hub does not give (no X-Linked-Size, no Content-Length) is written up to
// this: above the largest file read but weights (tokenizer.json, 96 MiB). Weights of unknown
// size are refused before a byte is fetched (describe).
constexpr std::uint64_t kMaxUnsizedFileBytes = 128u << 20;

// A Content-Length or X-Linked-Size: digits only, or nullopt.
std::optional<std::uint64_t> size_header(const std::string& text) {
    if (text.empty() || text.size() >= 20 || !std::all_of(text.begin(), text.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
        return std::nullopt;
    return std::strtoull(text.c_str(), nullptr, 10);
}

struct Transfer {
    Run& run;
    const RemoteFile& file;
    CURL* curl = nullptr;
    int fd = -1;
    EVP_MD_CTX* sha = nullptr;       // hashes every byte on disk; null for a git file
    Response& response;
    std::uint64_t on_disk = 0;
    bool body_started = false;       // the first byte of the final response's body has come
    long status = 0;
    int write_errno = 0;             // writing the file failed
    bool too_long = false;           // the server sent more than the file's size
    bool wrong_offset = false;       // a 206 that does not start where the file ends
    // What may be written: the size HEAD announced, else the GET's Content-Length, else
    // kMaxUnsizedFileBytes. Never more than one of them.
    std::uint64_t limit = 0;
};

void report(Run& run, const RemoteFile& file, std::uint64_t file_done) {
    if (!run.options.progress) return;
    DownloadProgress progress = run.progress;
    progress.file = file.name;
    progress.file_done = file_done;
    progress.file_total = file.size_known ? file.size : 0;
    progress.done = run.progress.done + file_done;
    run.options.progress(progress);
}

// Starts the file over when the server sent all of it in answer to a Range request.
bool restart(Transfer& t) {
    if (::ftruncate(t.fd, 0) != 0) {
        t.write_errno = errno;
        return false;
    }
    t.on_disk = 0;
    if (t.sha != nullptr) EVP_DigestInit_ex(t.sha, EVP_sha256(), nullptr);
    return true;
}

size_t write_file_body(char* data, size_t size, size_t count, void* user) {
    Transfer& t = *static_cast<Transfer*>(user);
    const size_t n = size * count;
    if (!t.body_started) {
        t.body_started = true;
        curl_easy_getinfo(t.curl, CURLINFO_RESPONSE_CODE, &t.status);
        if (t.status == 200 && t.on_disk > 0 && !restart(t)) return 0;  // the Range was ignored: start over
        if (t.status == 200 && !t.file.size_known)  // HEAD said no size: the GET's own, if it gives one
            if (const auto length = size_header(t.response.header("content-length")); length && *length < t.limit) t.limit = *length;
        if (t.status == 206) {
            const std::string range = t.response.header("content-range");  // "bytes N-M/T"
            const size_t digits = range.find_first_of("0123456789");
            if (digits == std::string::npos || std::strtoull(range.c_str() + digits, nullptr, 10) != t.on_disk) {
                t.wrong_offset = true;
                return 0;
            }
        }
    }
    if (t.status != 200 && t.status != 206) {  // an error page: kept short for the message
        if (t.response.body.size() < 4096) t.response.body.append(data, std::min<size_t>(n, 4096));
        return n;
    }
    if (t.on_disk + n > t.limit) {
        t.too_long = true;
        return 0;
    }
    for (size_t written = 0; written < n;) {
        const ssize_t w = ::write(t.fd, data + written, n - written);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            t.write_errno = w < 0 ? errno : EIO;
            return 0;
        }
        written += static_cast<size_t>(w);
    }
    if (t.sha != nullptr) EVP_DigestUpdate(t.sha, data, n);
    t.on_disk += n;
    t.run.bytes_fetched += n;
    return n;
}

// curl's progress function: the caller's callback, then the cancel flag.
int on_file_progress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
    Transfer& t = *static_cast<Transfer*>(user);
    report(t.run, t.file, t.on_disk);
    return t.run.options.cancel != nullptr && t.run.options.cancel->load() ? 1 : 0;
}

// Hashes the first `size` bytes of the file (a part kept from an earlier attempt).
bool hash_existing(int fd, std::uint64_t size, EVP_MD_CTX* sha) {
    std::vector<char> buffer(size_t(1) << 20);
    for (std::uint64_t offset = 0; offset < size;) {
        const ssize_t r = ::pread(fd, buffer.data(), static_cast<size_t>(std::min<std::uint64_t>(buffer.size(), size - offset)), static_cast<off_t>(offset));
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return false;
        EVP_DigestUpdate(sha, buffer.data(), static_cast<size_t>(r));
        offset += static_cast<std::uint64_t>(r);
    }
    return true;
}

std::string of_bytes(std::uint64_t done, const RemoteFile& file) {
    return std::to_string(done) + (file.size_known ? " of " + std::to_string(file.size) : std::string()) + " bytes";
}

// Fetches `file` into blobs/<etag>, resuming blobs/<etag>.incomplete; "" when it is there,
// verified, else why not ("cancelled: …" when the cancel flag stopped it).
std::string fetch_blob(Run& run, const RemoteFile& file) {
    const fs::path blobs = run.repo_folder / "blobs";
    const fs::path blob = blobs / file.etag;
    const fs::path partial = blobs / (file.etag + ".incomplete");
    const std::string url = run.options.endpoint + "/" + run.repo.id + "/resolve/" + run.commit + "/" + quote(file.name, true);
    const FileHandle fd(::open(partial.c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0644));
    if (fd.get() < 0) return file.name + ": " + cache_error(partial, errno);
    if (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0)
        return file.name + ": another download is writing " + partial.string() + ": wait for it to finish, then run again";
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) return file.name + ": " + cache_error(partial, errno);
    std::uint64_t on_disk = static_cast<std::uint64_t>(st.st_size);
    if (file.size_known && on_disk > file.size) {  // longer than the file: not a part of it
        if (::ftruncate(fd.get(), 0) != 0) return file.name + ": " + cache_error(partial, errno);
        on_disk = 0;
    }
    Sha sha;
    if (is_sha256(file.etag)) {
        sha = new_sha256();
        if (!sha) return file.name + ": OpenSSL could not start a SHA-256";
        if (!hash_existing(fd.get(), on_disk, sha.get())) return file.name + ": cannot read " + partial.string() + ": " + std::strerror(errno);
    }

    Response response;
    Transfer t{run, file, nullptr, fd.get(), sha.get(), response};
    t.on_disk = on_disk;
    t.limit = file.size_known ? file.size : kMaxUnsizedFileBytes;
    report(run, file, on_disk);
    const bool complete_already = file.size_known && on_disk == file.size && on_disk > 0;
    if (!complete_already) {
        HeaderList headers;
        Curl curl = new_request(url, run.options, response, headers, on_disk > 0 ? "bytes=" + std::to_string(on_disk) + "-" : std::string());
        if (!curl) return file.name + ": libcurl could not start a request";
        t.curl = curl.get();
        curl_easy_setopt(t.curl, CURLOPT_FOLLOWLOCATION, 1L);  // an LFS file's redirect to its storage
        curl_easy_setopt(t.curl, CURLOPT_WRITEFUNCTION, write_file_body);
        curl_easy_setopt(t.curl, CURLOPT_WRITEDATA, &t);
        curl_easy_setopt(t.curl, CURLOPT_NOPROGRESS, 0L);
        curl_easy_setopt(t.curl, CURLOPT_XFERINFOFUNCTION, on_file_progress);
        curl_easy_setopt(t.curl, CURLOPT_XFERINFODATA, &t);
        perform(t.curl, response, run.options, false);
        if (!t.body_started) curl_easy_getinfo(t.curl, CURLINFO_RESPONSE_CODE, &t.status);
        const std::string kept = "; the part is kept in " + partial.string() + ": run again to resume";
        if (t.write_errno != 0) return file.name + ": " + cache_error(partial, t.write_errno);
        if (response.code == CURLE_ABORTED_BY_CALLBACK) return "cancelled while downloading " + file.name + ", after " + of_bytes(t.on_disk, file) + kept;
        if (t.too_long || t.wrong_offset) {
            fs::remove(partial);
            const std::string size = file.size_known ? "the file's size (" + std::to_string(file.size) + ")"
                                     : t.limit < kMaxUnsizedFileBytes ? "its Content-Length (" + std::to_string(t.limit) + ")"
                                                                      : std::to_string(kMaxUnsizedFileBytes) + " bytes, the most read of a file the hub gives no size for";
            return url + ": the server sent " + (t.too_long ? "more bytes than " + size : std::string("a part that does not continue the file")) +
                   "; the partial file was removed: run again";
        }
        if (response.code == CURLE_OPERATION_TIMEDOUT && t.body_started)
            return url + ": the transfer stalled (under 1 byte/s for " + std::to_string(run.options.stall_seconds) + " s) after " + of_bytes(t.on_disk, file) + kept;
        if (response.code != CURLE_OK && t.body_started)
            return url + ": the connection dropped after " + of_bytes(t.on_disk, file) + " (" + curl_detail(response) + ")" + kept;
        if (response.code != CURLE_OK) return transfer_error(response, url, run.options);
        if (t.status == 416) {  // the server cannot continue the part: start over next time
            fs::remove(partial);
            return url + ": the server cannot resume this file (HTTP 416); the partial file was removed: run again";
        }
        if (t.status != 200 && t.status != 206) return http_error(response, url, Subject{run.repo, run.options, file.name});
        if (t.status == 200 && !t.body_started && t.on_disk > 0 && !restart(t)) return file.name + ": " + cache_error(partial, t.write_errno);
        if (file.size_known && t.on_disk < file.size)
            return url + ": the connection dropped after " + of_bytes(t.on_disk, file) + kept;
    }
    if (::fdatasync(fd.get()) != 0) return file.name + ": " + cache_error(partial, errno);
    if (sha) {
        const std::string actual = hex_digest(sha.get());
        std::string expected = file.etag;
        std::transform(expected.begin(), expected.end(), expected.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
        if (actual != expected) {
            fs::remove(partial);
            return file.name + ": the downloaded file's SHA-256 is " + actual + ", but the hub says " + expected +
                   " (" + url + "); the corrupted download was removed: run again";
        }
    }
    std::error_code ec;
    fs::rename(partial, blob, ec);
    if (ec) return file.name + ": " + cache_error(blob, ec);
    return {};
}

// HEAD: the file's etag and size, or why not.
std::string describe(Run& run, RemoteFile& file) {
    const std::string url = run.options.endpoint + "/" + run.repo.id + "/resolve/" + run.commit + "/" + quote(file.name, true);
    const Response response = head(url, run.options);
    if (response.code == CURLE_ABORTED_BY_CALLBACK) return "cancelled";
    if (response.code != CURLE_OK) return transfer_error(response, url, run.options);
    if (response.status >= 400 || response.status < 200) return http_error(response, url, Subject{run.repo, run.options, file.name});
    std::string etag = response.header("x-linked-etag");
    if (etag.empty()) etag = response.header("etag");
    file.etag = normalise_etag(etag);
    if (!safe_etag(file.etag)) return url + ": the hub sent no usable ETag (\"" + printable(etag, 80) + "\") for " + file.name;
    std::string size = response.header("x-linked-size");
    if (size.empty() && (response.status < 300 || response.status > 399)) size = response.header("content-length");
    if (const auto bytes = size_header(size)) {
        file.size = *bytes;
        file.size_known = true;
    }
    // Weights without a size: nothing would bound what is written nor check the free space first.
    if (!file.size_known && ends_with(file.name, ".safetensors"))
        return url + ": the hub gave no size for " + file.name + " (no X-Linked-Size, no Content-Length): weights of unknown size are "
                     "not downloaded; nothing was written";
    return {};
}

// Writes text to path through a temporary file and a rename: a reader sees the old or the new.
std::string write_atomically(const fs::path& path, const std::string& text) {
    std::error_code ec;
    fs::create_directories(path.parent_path(), ec);
    if (ec) return cache_error(path.parent_path(), ec);
    const fs::path temporary = path.string() + ".tmp";
    {
        const FileHandle fd(::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
        if (fd.get() < 0) return cache_error(temporary, errno);
        if (::write(fd.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size())) {
            const int error = errno;
            fs::remove(temporary, ec);
            return cache_error(temporary, error);
        }
    }
    fs::rename(temporary, path, ec);
    if (ec) return cache_error(path, ec);
    return {};
}

// snapshots/<commit>/<file> → ../../blobs/<etag>, replacing a link that goes elsewhere.
std::string link_into_snapshot(const fs::path& snapshot, const RemoteFile& file) {
    const fs::path pointer = snapshot / file.name;
    const std::string target = link_target(file.name, file.etag);
    std::error_code ec;
    fs::create_directories(pointer.parent_path(), ec);
    if (ec) return cache_error(pointer.parent_path(), ec);
    if (fs::is_symlink(pointer, ec) && fs::read_symlink(pointer, ec) == fs::path(target)) return {};
    const fs::path temporary = pointer.string() + ".link";
    fs::remove(temporary, ec);
    fs::create_symlink(target, temporary, ec);
    if (ec) return cache_error(temporary, ec);
    fs::rename(temporary, pointer, ec);
    if (ec) return cache_error(pointer, ec);
    return {};
}

// "pytorch_model.bin, tf_model.h5": the weights a repository holds in other formats.
std::string other_weights(const std::vector<std::string>& files) {
    std::string names;
    int listed = 0;
    for (const std::string& f : files) {
        for (const char* end : {".bin", ".h5", ".msgpack", ".onnx", ".gguf", ".pt", ".pth", ".ckpt", ".ot"}) {
            if (!ends_with(f, end)) continue;
            if (listed++ < 4) names += (names.empty() ? "" : ", ") + f;
            break;
        }
    }
    if (listed > 4) names += ", …";
    return names;
}

}  // namespace

// [SECTION] download_model

std::string hub_endpoint() {
    std::string endpoint = environment("HF_ENDPOINT");
    if (endpoint.empty()) endpoint = "https://huggingface.co";
    while (!endpoint.empty() && endpoint.back() == '/') endpoint.pop_back();
    return endpoint;
}

std::string hub_token() { return environment("HF_TOKEN"); }

bool app_reads_file(const std::string& rfilename) {
    if (rfilename.find('/') != std::string::npos) return false;
    static const char* const kNames[] = {"config.json",      "generation_config.json", "tokenizer.json", "tokenizer_config.json",
                                         "special_tokens_map.json", "vocab.json",      "merges.txt",     "vocab.txt",
                                         "model.safetensors.index.json"};
    for (const char* name : kNames)
        if (rfilename == name) return true;
    return ends_with(rfilename, ".safetensors");
}

std::string sha256_hex(const void* data, std::size_t size) {
    Sha sha = new_sha256();
    if (!sha) return {};
    EVP_DigestUpdate(sha.get(), data, size);
    return hex_digest(sha.get());
}

DownloadResult download_model(const RepoId& repo, const DownloadOptions& options) {
    DownloadResult result;
    const auto cancelled = [&] { return options.cancel != nullptr && options.cancel->load(); };
    const auto fail = [&](std::string error) {
        result.cancelled = error.rfind("cancelled", 0) == 0;
        // Every message may quote the hub's text (its error message, a redirect's address, an ETag):
        // control characters are shown as \xNN, never sent to the user's terminal as they came.
        result.error = printable(error, 4096);
        return result;
    };
    if (!parse_repo_id(repo.id + "@" + repo.revision)) return fail("'" + repo.id + "@" + repo.revision + "' is not a repository id (org/name[@revision])");
    if (options.endpoint.empty()) return fail("no hub to download from: HF_ENDPOINT is empty");
    if (cancelled()) return fail("cancelled");

    Listing listing = list_files(repo, options);
    if (!listing.error.empty()) return fail(listing.error);
    result.commit = listing.commit;

    // Which files: what the app reads (or what the caller asks for), never a path outside the snapshot.
    const std::function<bool(const std::string&)> wanted = options.wanted ? options.wanted : app_reads_file;
    std::vector<RemoteFile> files;
    bool has_safetensors = false;
    for (const std::string& name : listing.files) {
        if (safe_relative_path(name) && wanted(name)) files.push_back(RemoteFile{name, {}, 0, false, false});
        else result.skipped.push_back(name);
        has_safetensors = has_safetensors || ends_with(name, ".safetensors");
    }
    const std::string where = repo.id + (repo.revision == "main" ? std::string() : "@" + repo.revision);
    if (!options.wanted && !has_safetensors) {
        const std::string others = other_weights(listing.files);
        return fail(where + " has no .safetensors weights" + (others.empty() ? std::string(" (no weights at all)") : " (only " + others + ")") +
                    ": Attention Lab reads weights only from .safetensors files, so nothing was downloaded");
    }
    if (files.empty()) return fail(where + " has none of the files Attention Lab reads (config.json, *.safetensors, …)");

    Run run{repo, options, fs::path(options.cache) / folder_name(repo.id), listing.commit, {}, 0};
    const fs::path snapshot = run.repo_folder / "snapshots" / run.commit;
    std::error_code ec;
    fs::create_directories(run.repo_folder / "blobs", ec);
    if (ec) return fail(cache_error(run.repo_folder / "blobs", ec));

    // What each file is (HEAD), unless the snapshot has it already.
    for (RemoteFile& file : files) {
        if (cancelled()) return fail("cancelled");
        const fs::path pointer = snapshot / file.name;
        if (fs::is_regular_file(pointer, ec)) {  // follows the link: a file from an earlier run
            file.in_snapshot = true;
            file.size = fs::file_size(pointer, ec);
            file.size_known = true;
            continue;
        }
        if (std::string error = describe(run, file); !error.empty()) return fail(error);
    }
    std::sort(files.begin(), files.end(), [](const RemoteFile& a, const RemoteFile& b) { return a.size < b.size; });  // small files fail first
    std::uint64_t missing = 0;
    for (const RemoteFile& file : files) {
        run.progress.total += file.size;
        if (file.in_snapshot || fs::exists(run.repo_folder / "blobs" / file.etag, ec)) continue;
        const std::uint64_t most = file.size_known ? file.size : kMaxUnsizedFileBytes;  // what may be written
        const std::uintmax_t partial = fs::file_size(run.repo_folder / "blobs" / (file.etag + ".incomplete"), ec);
        missing += most - (!ec && partial <= most ? partial : 0);
    }
    const fs::space_info space = fs::space(run.repo_folder / "blobs", ec);
    if (!ec && space.available < missing)
        return fail("the download needs " + byte_size_text(missing) + " but the disk holding " + (run.repo_folder / "blobs").string() + " has " +
                    byte_size_text(space.available) + " free: free some space, or set HF_HUB_CACHE to another disk");

    // Every blob, then the snapshot's links and the ref: a half-downloaded model is never found.
    for (const RemoteFile& file : files) {
        if (cancelled()) return fail("cancelled before " + file.name);
        if (!file.in_snapshot && !fs::exists(run.repo_folder / "blobs" / file.etag, ec)) {
            std::string error = fetch_blob(run, file);
            result.bytes_fetched = run.bytes_fetched;
            if (!error.empty()) return fail(error);
        }
        report(run, file, file.size);
        run.progress.done += file.size;
    }
    for (const RemoteFile& file : files) {
        if (file.in_snapshot) continue;
        if (std::string error = link_into_snapshot(snapshot, file); !error.empty()) return fail(error);
    }
    if (repo.revision != run.commit)
        if (std::string error = write_atomically(run.repo_folder / "refs" / repo.revision, run.commit); !error.empty()) return fail(error);
    for (const RemoteFile& file : files) result.files.push_back(file.name);
    std::sort(result.files.begin(), result.files.end());
    result.folder = snapshot.string();
    result.ok = true;
    return result;
}

}  // namespace attn::hf
