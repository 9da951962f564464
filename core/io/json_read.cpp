// Reading files and JSON documents that may be hostile.
//
// [SECTION] Files: regular files only, read whole
// [SECTION] JSON: a DOM built by a SAX handler that enforces the format's limits
// [SECTION] Memory
#include "io/json_read.hpp"
#include "io/path_kind.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <new>
#include <sstream>
#include <stdexcept>

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

namespace attn {

using nlohmann::json;

// [SECTION] Files: regular files only, read whole


std::optional<std::string> not_a_regular_file(const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return reason_of_errno(errno);
    if (S_ISREG(st.st_mode)) return std::nullopt;
    return "is " + kind_of_mode(st.st_mode);
}

int open_regular_file(const std::string& path, const std::string& kind, std::vector<std::string>& errors) {
    // stat first, so a device is not even opened; O_NONBLOCK, so a FIFO that appears in
    // between opens at once (no writer is waited for) and is refused by fstat below.
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) {
        errors.push_back(path + ": cannot open: " + reason_of_errno(errno));
        return -1;
    }
    auto refuse = [&](mode_t mode) {
        errors.push_back(path + ": is " + kind_of_mode(mode) + ", not a " + kind + " file");
        return -1;
    };
    if (!S_ISREG(st.st_mode)) return refuse(st.st_mode);
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) {
        errors.push_back(path + ": cannot open: " + reason_of_errno(errno));
        return -1;
    }
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        ::close(fd);
        return refuse(st.st_mode);
    }
    // Reads from a regular file never wait; clear the flag all the same.
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    return fd;
}

std::optional<std::string> read_text_file(const std::string& path, std::uintmax_t max_bytes, const std::string& kind,
                                          std::vector<std::string>& errors) {
    const int fd = open_regular_file(path, kind, errors);
    if (fd < 0) return std::nullopt;
    struct stat st {};
    ::fstat(fd, &st);
    const auto size = static_cast<std::uintmax_t>(st.st_size);
    auto too_large = [&](std::uintmax_t bytes) {
        errors.push_back(path + ": " + std::to_string(bytes) + " bytes; a " + kind + " file is at most " + std::to_string(max_bytes) +
                         " bytes");
        ::close(fd);
        return std::nullopt;
    };
    if (size > max_bytes) return too_large(size);
    std::string text;
    try {
        text.resize(static_cast<std::size_t>(size) + 1);   // one byte more: the end is found without growing
        // Read to the end, not to the size fstat gave: a file that grows meanwhile is
        // still bounded by max_bytes, and one that shrinks is read as it is.
        std::size_t done = 0;
        for (;;) {
            if (done == text.size()) {
                if (text.size() > max_bytes) return too_large(text.size());
                text.resize(text.size() + 4096);
            }
            const ssize_t got = ::read(fd, text.data() + done, text.size() - done);
            if (got < 0 && errno == EINTR) continue;
            if (got < 0) {
                errors.push_back(path + ": cannot read: " + std::strerror(errno));
                ::close(fd);
                return std::nullopt;
            }
            if (got == 0) break;
            done += static_cast<std::size_t>(got);
        }
        text.resize(done);
        if (done > max_bytes) return too_large(done);
    } catch (const std::bad_alloc&) {
        errors.push_back(path + ": not enough memory to read its " + std::to_string(size) + " bytes");
        ::close(fd);
        return std::nullopt;
    }
    ::close(fd);
    return text;
}

// [SECTION] JSON: a DOM built by a SAX handler that enforces the format's limits

std::string line_column(const char* text, std::size_t size, std::size_t offset) {
    std::size_t line = 1, column = 1;
    for (std::size_t i = 0; i < offset && i < size; ++i) {
        if (text[i] == '\n') {
            ++line;
            column = 1;
        } else if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) {  // a column is a character, not a byte
            ++column;
        }
    }
    return "line " + std::to_string(line) + ", column " + std::to_string(column);
}

namespace {

// A character pointer that publishes how far the lexer has read, so a limit broken inside
// the SAX handler (which is given no position) can still say where.
struct TrackedChars {
    using iterator_category = std::input_iterator_tag;
    using value_type = char;
    using difference_type = std::ptrdiff_t;
    using pointer = const char*;
    using reference = const char&;

    const char* at = nullptr;
    const char** published = nullptr;   // null for the end

    reference operator*() const { return *at; }
    TrackedChars& operator++() {
        ++at;
        if (published) *published = at;
        return *this;
    }
    TrackedChars operator++(int) {
        TrackedChars before = *this;
        ++*this;
        return before;
    }
    bool operator==(const TrackedChars& other) const { return at == other.at; }
    bool operator!=(const TrackedChars& other) const { return at != other.at; }
};

std::string printable_bytes(const std::string& text) {
    std::string printable;
    for (const unsigned char c : text) {
        if (c >= 0x20 && c < 0x7F) {
            printable += static_cast<char>(c);
        } else {
            char hex[8];
            std::snprintf(hex, sizeof hex, "\\x%02X", c);
            printable += hex;
        }
    }
    return printable;
}

// Where the string whose closing quote is at `closing` opens: the quote before it that no
// backslash escapes.
std::size_t opening_quote(const char* text, std::size_t closing) {
    for (std::size_t i = closing; i-- > 0;) {
        if (text[i] != '"') continue;
        std::size_t backslashes = 0;
        while (backslashes < i && text[i - 1 - backslashes] == '\\') ++backslashes;
        if (backslashes % 2 == 0) return i;
    }
    return closing;
}

// Builds the document as nlohmann's own DOM parser does, one value at a time, and stops at
// the first value past a limit or the first key repeated in its object.
class LimitedDom {
public:
    using number_integer_t = json::number_integer_t;
    using number_unsigned_t = json::number_unsigned_t;
    using number_float_t = json::number_float_t;
    using string_t = json::string_t;
    using binary_t = json::binary_t;

    LimitedDom(const JsonLimits& limits, const char* const* read_up_to) : limits_(limits), read_up_to_(read_up_to) {}

    bool null() { return put(nullptr); }
    bool boolean(bool value) { return put(value); }
    // The lexer knows a number has ended only once it has read the character after it.
    bool number_integer(number_integer_t value) { return put(value, 1); }
    bool number_unsigned(number_unsigned_t value) { return put(value, 1); }
    bool number_float(number_float_t value, const string_t&) { return put(value, 1); }
    bool string(string_t& value) { return put(std::move(value)); }
    bool binary(binary_t& value) { return put(json::binary(std::move(value))); }
    bool start_object(std::size_t) { return open(json::object()); }
    bool start_array(std::size_t) { return open(json::array()); }
    bool end_object() { return close(); }
    bool end_array() { return close(); }

    bool key(string_t& name) {
        json& object = *open_.back();
        if (object.contains(name)) {
            std::string where = path();
            failure_ = "key '" + printable_bytes(name.substr(0, 80)) + "' appears twice in the same object" +
                       (where.empty() ? " (the top level)" : " (at " + where + ")") + "; each key may appear once";
            failure_at_ = *read_up_to_;
            failure_is_key_ = true;
            return false;
        }
        key_ = std::move(name);
        return true;
    }

    bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& e) {
        syntax_error_position_ = position;
        syntax_error_ = e.what();
        syntax_error_is_parse_ = dynamic_cast<const json::parse_error*>(&e) != nullptr;
        return false;
    }

    json root;
    std::string failure_;                 // a broken limit or a repeated key
    const char* failure_at_ = nullptr;
    bool failure_is_key_ = false;         // failure_at_ is then just past the key's closing quote
    std::string syntax_error_;            // nlohmann's message
    std::size_t syntax_error_position_ = 0;
    bool syntax_error_is_parse_ = false;

private:
    bool count(int read_ahead = 0) {
        if (++values_ <= limits_.max_values) return true;
        failure_ = "more than " + std::to_string(limits_.max_values) + " values; a " + limits_.format + " file holds at most " +
                   std::to_string(limits_.max_values);
        failure_at_ = *read_up_to_ - read_ahead;
        return false;
    }

    // The new value's place: the root, the end of the open array, or the open object's key.
    json* place(json&& value) {
        if (open_.empty()) {
            root = std::move(value);
            return &root;
        }
        json& parent = *open_.back();
        if (parent.is_array()) {
            parent.push_back(std::move(value));
            return &parent.back();
        }
        json& member = parent[key_];
        member = std::move(value);
        return &member;
    }

    bool put(json&& value, int read_ahead = 0) {
        if (!count(read_ahead)) return false;
        place(std::move(value));
        return true;
    }

    bool open(json&& container) {
        if (!count()) return false;
        if (static_cast<int>(open_.size()) >= limits_.max_depth) {
            const std::string where = path();
            failure_ = "arrays and objects nested deeper than " + std::to_string(limits_.max_depth) + " levels" +
                       (where.empty() ? "" : " (inside " + where + ")") + "; a " + limits_.format + " file nests at most " +
                       std::to_string(limits_.max_depth);
            failure_at_ = *read_up_to_;
            return false;
        }
        // Its place in its parent, for messages: an item's number, or the key as the parent
        // object holds it (a map's keys never move).
        Place where;
        if (!open_.empty() && open_.back()->is_array()) where.item = open_.back()->size() + 1;
        json* opened = place(std::move(container));
        if (!open_.empty() && open_.back()->is_object()) where.key = &open_.back()->get_ref<json::object_t&>().find(key_)->first;
        open_.push_back(opened);
        places_.push_back(where);
        return true;
    }

    bool close() {
        open_.pop_back();
        places_.pop_back();
        return true;
    }

    // "scenario.block", "layers[2].w_q" (items counted from 1): where the open object is;
    // the first six steps of a deeper path, then "…".
    std::string path() const {
        std::string out;
        for (std::size_t i = 1; i < places_.size(); ++i) {
            if (i > 6) {
                out += "…";
                break;
            }
            if (places_[i].key) out += (out.empty() ? "" : ".") + printable_bytes(places_[i].key->substr(0, 80));
            else out += "[" + std::to_string(places_[i].item) + "]";
        }
        return out.empty() ? out : "'" + out + "'";
    }

    struct Place {
        const std::string* key = nullptr;   // in an object
        std::size_t item = 0;               // in an array, counted from 1
    };

    JsonLimits limits_;
    const char* const* read_up_to_;
    std::vector<json*> open_;        // the arrays and objects being filled, outermost first
    std::vector<Place> places_;      // each one's key or item in its parent
    string_t key_;
    std::size_t values_ = 0;
};

// Empties a document from its leaves up without allocating. nlohmann's destructor flattens a
// container onto a stack it allocates, as large as the container: after an allocation failed,
// that second allocation would fail inside a destructor and end the process. Nesting is
// bounded by the format, so the recursion is too.
void dismantle(json& j) {
    if (j.is_array()) {
        auto& items = j.get_ref<json::array_t&>();
        while (!items.empty()) {
            dismantle(items.back());
            items.pop_back();
        }
    } else if (j.is_object()) {
        auto& members = j.get_ref<json::object_t&>();
        while (!members.empty()) {
            dismantle(members.begin()->second);
            members.erase(members.begin());
        }
    }
}

}  // namespace

std::optional<json> parse_json(const char* begin, const char* end, const std::string& source_name,
                               std::vector<std::string>& errors, const JsonLimits& limits) {
    const std::size_t size = static_cast<std::size_t>(end - begin);
    const char* read_up_to = begin;
    LimitedDom dom(limits, &read_up_to);   // outside the try: a failed allocation dismantles it in the handler
    try {
        const bool ok = json::sax_parse(TrackedChars{begin, &read_up_to}, TrackedChars{end, nullptr}, &dom);
        if (ok) return std::move(dom.root);
        dismantle(dom.root);
        if (!dom.failure_.empty()) {
            std::size_t at = static_cast<std::size_t>(dom.failure_at_ - begin);
            at = at > 0 ? at - 1 : 0;   // the last character read
            if (dom.failure_is_key_) at = opening_quote(begin, at);
            errors.push_back(source_name + ": " + line_column(begin, size, at) + ": " + dom.failure_);
            return std::nullopt;
        }
        std::string what = dom.syntax_error_;
        if (dom.syntax_error_is_parse_) {
            // nlohmann's "[json.exception.parse_error.101] parse error at line 1, column 2: syntax error while parsing
            // value - invalid literal; last read: 'x'" → the part after the position, its bytes made printable.
            const auto column = what.find("column ");
            const auto colon = what.find(": ", column == std::string::npos ? 0 : column);
            if (colon != std::string::npos) what = what.substr(colon + 2);
            std::string printable = printable_bytes(what);
            if (what.find("UTF-8") != std::string::npos) printable += " (text must be UTF-8)";
            const std::size_t at = dom.syntax_error_position_;
            errors.push_back(source_name + ": " + line_column(begin, size, at > 0 ? at - 1 : 0) + ": not valid JSON: " + printable);
        } else {  // e.g. a number too large for a double
            const auto bracket = what.find("] ");
            if (bracket != std::string::npos) what = what.substr(bracket + 2);
            errors.push_back(source_name + ": not valid JSON: " + what);
        }
    } catch (const std::bad_alloc&) {
        dismantle(dom.root);
        errors.push_back(source_name + ": not enough memory to read this " + std::string(limits.format) + " file (" +
                         byte_size_text(size) + ")");
    } catch (const std::length_error&) {
        dismantle(dom.root);
        errors.push_back(source_name + ": not enough memory to read this " + std::string(limits.format) + " file (" +
                         byte_size_text(size) + ")");
    }
    return std::nullopt;
}

std::optional<json> parse_json(const std::string& text, const std::string& source_name, std::vector<std::string>& errors,
                               const JsonLimits& limits) {
    return parse_json(text.data(), text.data() + text.size(), source_name, errors, limits);
}

// [SECTION] Memory

std::optional<std::uint64_t> available_memory_bytes() {
    std::optional<std::uint64_t> available;
    std::ifstream meminfo("/proc/meminfo");
    std::string line;
    while (std::getline(meminfo, line))
        if (line.rfind("MemAvailable:", 0) == 0) {
            std::istringstream fields(line.substr(13));
            std::uint64_t kib = 0;
            if (fields >> kib) available = kib * 1024;
            break;
        }
    // An address-space limit (ulimit -v) below what is free is what counts.
    struct rlimit limit {};
    if (::getrlimit(RLIMIT_AS, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) {
        std::uint64_t used = 0;
        std::ifstream statm("/proc/self/statm");
        std::uint64_t pages = 0;
        if (statm >> pages) used = pages * static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
        const std::uint64_t left = limit.rlim_cur > used ? limit.rlim_cur - used : 0;
        if (!available || left < *available) available = left;
    }
    return available;
}

std::string byte_size_text(std::uint64_t bytes) {
    const char* units[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
    double value = static_cast<double>(bytes);
    int unit = 0;
    while (value >= 1024.0 && unit < 4) {
        value /= 1024.0;
        ++unit;
    }
    char text[32];
    if (unit == 0) std::snprintf(text, sizeof text, "%llu bytes", static_cast<unsigned long long>(bytes));
    else std::snprintf(text, sizeof text, value < 10 ? "%.1f %s" : "%.0f %s", value, units[unit]);
    return text;
}

}  // namespace attn
