// Safetensors: bit conversions, the header, the mapped file, the writer.
//
// [SECTION] Element types and bit conversions
// [SECTION] Header: the 8-byte length, the JSON object, every entry checked
// [SECTION] The mapped file
// [SECTION] Writing
#include "tensor/safetensors.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <limits>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "io/messages.hpp"
#include "io/json_read.hpp"   // parse_json
#include "io/json_write.hpp"  // sync_parent_folder

// The data section is little-endian and F32 tensors are copied with memcpy.
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "safetensors.cpp assumes a little-endian host");

namespace attn::safetensors {

using nlohmann::json;

// [SECTION] Element types and bit conversions

const char* to_string(Dtype dtype) {
    switch (dtype) {
        case Dtype::F32: return "F32";
        case Dtype::F16: return "F16";
        case Dtype::BF16: return "BF16";
    }
    return "?";
}

std::optional<Dtype> dtype_from_string(const std::string& name) {
    if (name == "F32") return Dtype::F32;
    if (name == "F16") return Dtype::F16;
    if (name == "BF16") return Dtype::BF16;
    return std::nullopt;
}

std::size_t dtype_size(Dtype dtype) { return dtype == Dtype::F32 ? 4 : 2; }

namespace {

std::uint32_t bits_of(float f) {
    std::uint32_t x;
    std::memcpy(&x, &f, 4);
    return x;
}

float float_of(std::uint32_t x) {
    float f;
    std::memcpy(&f, &x, 4);
    return f;
}

// float32 = (value with every half's bits), built once: the loading loop is then one load per element.
const float* f16_table() {
    static const std::vector<float> table = [] {
        std::vector<float> t(65536);
        for (std::uint32_t h = 0; h < 65536; ++h) t[h] = f16_to_f32(static_cast<std::uint16_t>(h));
        return t;
    }();
    return table.data();
}

}  // namespace

// binary16: sign 1 | exponent 5 (bias 15) | mantissa 10.  binary32: 1 | 8 (bias 127) | 23.
float f16_to_f32(std::uint16_t half) {
    const std::uint32_t sign = static_cast<std::uint32_t>(half & 0x8000u) << 16;
    const std::uint32_t exponent = (half >> 10) & 0x1Fu;
    std::uint32_t mantissa = half & 0x3FFu;
    if (exponent == 0x1F) return float_of(sign | 0x7F800000u | (mantissa << 13));        // ±∞, NaN with its payload
    if (exponent != 0) return float_of(sign | ((exponent + 127 - 15) << 23) | (mantissa << 13));
    if (mantissa == 0) return float_of(sign);                                             // ±0
    // Subnormal: mantissa·2^-24. Shift the leading 1 up to bit 10 (the implicit bit), one
    // exponent step per shift; 2^-24 = 1.0·2^(103−127) when the leading 1 is bit 0.
    std::uint32_t exponent32 = 127 - 15 + 1;
    while ((mantissa & 0x400u) == 0) {
        mantissa <<= 1;
        --exponent32;
    }
    return float_of(sign | (exponent32 << 23) | ((mantissa & 0x3FFu) << 13));
}

float bf16_to_f32(std::uint16_t bf16) { return float_of(static_cast<std::uint32_t>(bf16) << 16); }  // the top half of a float32

std::uint16_t f32_to_f16(float value) {
    const std::uint32_t x = bits_of(value);
    const std::uint32_t sign = (x >> 16) & 0x8000u;
    const std::uint32_t exponent32 = (x >> 23) & 0xFFu;
    std::uint32_t mantissa = x & 0x7FFFFFu;
    if (exponent32 == 0xFF)  // ±∞, or a NaN kept NaN (quiet bit set) whatever its low payload bits
        return static_cast<std::uint16_t>(sign | 0x7C00u | (mantissa != 0 ? 0x200u | (mantissa >> 13) : 0u));
    const int exponent = static_cast<int>(exponent32) - 127 + 15;
    if (exponent >= 0x1F) return static_cast<std::uint16_t>(sign | 0x7C00u);  // ≥ 2^16: beyond 65504 even before rounding
    if (exponent <= 0) {
        // A half subnormal m·2^-24 (m < 1024). The value is significand·2^(exponent−38) with the
        // 24-bit significand 1.mantissa, so m = significand >> (14 − exponent), rounded. Below
        // 2^-25 (exponent < −10) everything rounds to ±0; exactly 2^-25 is a tie and goes to 0.
        if (exponent < -10) return static_cast<std::uint16_t>(sign);
        mantissa |= 0x800000u;
        const int shift = 14 - exponent;  // 14 … 24
        std::uint32_t half_mantissa = mantissa >> shift;
        const std::uint32_t rest = mantissa & ((1u << shift) - 1);
        const std::uint32_t halfway = 1u << (shift - 1);
        if (rest > halfway || (rest == halfway && (half_mantissa & 1u))) ++half_mantissa;  // may carry into the smallest normal: right
        return static_cast<std::uint16_t>(sign | half_mantissa);
    }
    // Normal: keep the top 10 mantissa bits, round the 13 dropped ones to nearest even. A
    // carry out of the mantissa steps the exponent, and out of 30 gives ∞: both right.
    std::uint32_t half = sign | (static_cast<std::uint32_t>(exponent) << 10) | (mantissa >> 13);
    const std::uint32_t rest = mantissa & 0x1FFFu;
    if (rest > 0x1000u || (rest == 0x1000u && (half & 1u))) ++half;
    return static_cast<std::uint16_t>(half);
}

std::uint16_t f32_to_bf16(float value) {
    const std::uint32_t x = bits_of(value);
    if ((x & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<std::uint16_t>((x >> 16) | 0x40u);  // NaN: never rounded into ∞
    // Round to nearest even on the dropped 16 bits: add 0x7FFF, plus 1 when the kept part is odd.
    return static_cast<std::uint16_t>((x + 0x7FFFu + ((x >> 16) & 1u)) >> 16);
}

void convert_to_f32(const unsigned char* bytes, Dtype dtype, std::size_t count, float* out) {
    switch (dtype) {
        case Dtype::F32: std::memcpy(out, bytes, count * 4); return;
        case Dtype::F16: {
            const float* table = f16_table();
            for (std::size_t i = 0; i < count; ++i) out[i] = table[bytes[2 * i] | (bytes[2 * i + 1] << 8)];
            return;
        }
        case Dtype::BF16:
            // float32's upper half, read as a little-endian u16 (as F32 above is read as the
            // host's float): one load and a shift, which the compiler vectorises — twice the
            // speed of assembling it from two bytes, which products of stored weights feel
            for (std::size_t i = 0; i < count; ++i) {
                std::uint16_t half;
                std::memcpy(&half, bytes + 2 * i, 2);
                out[i] = float_of(static_cast<std::uint32_t>(half) << 16);
            }
            return;
    }
}

// [SECTION] Header: the 8-byte length, the JSON object, every entry checked

namespace {

// Every dtype of the specification with a whole number of bytes per element.
std::optional<std::uint64_t> spec_dtype_size(const std::string& dtype) {
    static const std::map<std::string, std::uint64_t> sizes = {
        {"BOOL", 1}, {"U8", 1},  {"I8", 1},  {"F8_E5M2", 1}, {"F8_E4M3", 1}, {"F8_E8M0", 1},
        {"I16", 2},  {"U16", 2}, {"F16", 2}, {"BF16", 2},    {"I32", 4},     {"U32", 4},
        {"F32", 4},  {"F64", 8}, {"I64", 8}, {"U64", 8},     {"C64", 8},
    };
    const auto it = sizes.find(dtype);
    if (it == sizes.end()) return std::nullopt;
    return it->second;
}

// A dimension above 2^40 is no real tensor; bounding it keeps products in 64 bits.
constexpr std::uint64_t kMaxDimension = std::uint64_t(1) << 40;
constexpr std::uint64_t kMaxElements = std::uint64_t(1) << 60;

std::string type_name(const json& j) {
    switch (j.type()) {
        case json::value_t::null: return "null";
        case json::value_t::boolean: return "a boolean";
        case json::value_t::string: return "a string";
        case json::value_t::array: return "an array";
        case json::value_t::object: return "an object";
        case json::value_t::number_float: return "a fractional number";
        case json::value_t::number_integer: return "a negative integer";
        case json::value_t::number_unsigned: return "an integer";
        default: return "nothing";
    }
}

std::string shape_text(const std::vector<std::int64_t>& shape) {
    std::string s = "[";
    for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
    return s + "]";
}

// Messages name the tensor: "SOURCE: tensor 'NAME': …".
struct Faults : attn::Faults {
    using attn::Faults::Faults;
    void tensor(const std::string& name, const std::string& what) { add("tensor '" + printable(name) + "': " + what); }
};

// A non-negative integer (JSON numbers parse as unsigned when they have no sign).
std::optional<std::uint64_t> count_of(const json& j) {
    if (j.is_number_unsigned()) return j.get<std::uint64_t>();
    return std::nullopt;
}

std::optional<TensorInfo> tensor_entry(const std::string& name, const json& entry, std::uint64_t data_size, Faults& faults) {
    if (!entry.is_object()) {
        faults.tensor(name, "expected an object with dtype, shape and data_offsets, found " + type_name(entry));
        return std::nullopt;
    }
    TensorInfo info;
    info.name = name;
    bool dtype_ok = true, shape_ok = true, offsets_ok = true;

    const auto dtype = entry.find("dtype");
    std::optional<std::uint64_t> element_size;
    if (dtype == entry.end()) {
        faults.tensor(name, "no 'dtype' (expected a string such as \"F32\")");
        dtype_ok = false;
    } else if (!dtype->is_string()) {
        faults.tensor(name, "'dtype' is " + type_name(*dtype) + ", expected a string such as \"F32\"");
        dtype_ok = false;
    } else {
        info.dtype = dtype->get<std::string>();
        info.floating = dtype_from_string(info.dtype);
        element_size = spec_dtype_size(info.dtype);
        if (!element_size) {
            faults.tensor(name, "unknown dtype \"" + printable(info.dtype) +
                                    "\" (the specification's are F32, F16, BF16, F64, I64, …)");
            dtype_ok = false;
        }
    }

    const auto shape = entry.find("shape");
    if (shape == entry.end()) {
        faults.tensor(name, "no 'shape' (expected an array of dimensions)");
        shape_ok = false;
    } else if (!shape->is_array()) {
        faults.tensor(name, "'shape' is " + type_name(*shape) + ", expected an array of dimensions");
        shape_ok = false;
    } else {
        // product(shape), refused above 2^60 before it can overflow; a zero dimension makes 0.
        std::uint64_t product = 1;
        bool too_large = false;
        for (std::size_t i = 0; i < shape->size() && shape_ok; ++i) {
            const auto dim = count_of((*shape)[i]);
            if (!dim) {
                faults.tensor(name, "'shape' entry " + std::to_string(i + 1) + " is " + type_name((*shape)[i]) + " " +
                                        (*shape)[i].dump(-1, ' ', false, json::error_handler_t::replace) +
                                        ", expected a non-negative integer");
                shape_ok = false;
            } else if (*dim > kMaxDimension) {
                faults.tensor(name, "'shape' entry " + std::to_string(i + 1) + " is " + std::to_string(*dim) +
                                        ", more than any tensor has (at most 2^40)");
                shape_ok = false;
            } else {
                info.shape.push_back(static_cast<std::int64_t>(*dim));
                if (*dim == 0) product = 0;
                else if (product > kMaxElements / *dim) too_large = true;
                else product *= *dim;
            }
        }
        if (shape_ok && too_large && product != 0) {
            faults.tensor(name, "shape " + shape_text(info.shape) + " has more than 2^60 elements");
            shape_ok = false;
        }
        info.element_count = product;
    }

    const auto offsets = entry.find("data_offsets");
    if (offsets == entry.end()) {
        faults.tensor(name, "no 'data_offsets' (expected [begin, end])");
        offsets_ok = false;
    } else if (!offsets->is_array() || offsets->size() != 2 || !count_of((*offsets)[0]) || !count_of((*offsets)[1])) {
        faults.tensor(name, "'data_offsets' is " + offsets->dump(-1, ' ', false, json::error_handler_t::replace).substr(0, 80) +
                                ", expected [begin, end], two non-negative integers");
        offsets_ok = false;
    } else {
        info.begin = *count_of((*offsets)[0]);
        info.end = *count_of((*offsets)[1]);
        const std::string range = "data_offsets [" + std::to_string(info.begin) + ", " + std::to_string(info.end) + "]";
        if (info.end < info.begin) {
            faults.tensor(name, range + ": end is before begin");
            offsets_ok = false;
        } else if (info.end > data_size) {
            faults.tensor(name, range + " run past the end of the data section (" + std::to_string(data_size) + " bytes)");
            offsets_ok = false;
        } else if (dtype_ok && shape_ok && element_size && info.end - info.begin != info.element_count * *element_size) {
            // element_count ≤ 2^60 and sizeof(dtype) ≤ 8: the product fits in 64 bits.
            const std::uint64_t bytes = info.end - info.begin;
            faults.tensor(name, range + " hold " + std::to_string(bytes) + " bytes, but shape " + shape_text(info.shape) + " of " +
                                    info.dtype + " needs " + std::to_string(info.element_count * *element_size) + " bytes (" +
                                    std::to_string(info.element_count) + " × " + std::to_string(*element_size) + ")");
            offsets_ok = false;
        }
    }
    if (!dtype_ok || !shape_ok || !offsets_ok) return std::nullopt;
    return info;
}

// The tensors' byte ranges must tile the data section: in order of their offsets, each
// begins where the one before ended, the first at 0 and the last at the end (the
// specification: "the byte buffer needs to be entirely indexed, and cannot contain holes").
// So no two tensors share a byte, and the file's size bounds what its tensors can need.
void check_tiling(const Header& header, std::uint64_t data_size, Faults& faults) {
    std::vector<const TensorInfo*> ranges;
    ranges.reserve(header.tensors.size());
    for (const auto& [name, info] : header.tensors)
        if (info.end > info.begin) ranges.push_back(&info);   // an empty tensor occupies no byte
    std::sort(ranges.begin(), ranges.end(), [](const TensorInfo* a, const TensorInfo* b) {
        return a->begin != b->begin ? a->begin < b->begin : a->name < b->name;
    });
    auto range = [](const TensorInfo& t) { return "[" + std::to_string(t.begin) + ", " + std::to_string(t.end) + "]"; };
    std::uint64_t covered = 0;   // bytes [0, covered) belong to the tensors seen so far
    const TensorInfo* previous = nullptr;
    for (const TensorInfo* t : ranges) {
        if (t->begin < covered) {
            faults.tensor(t->name, "data_offsets " + range(*t) + " overlap tensor '" + printable(previous->name) + "' " +
                                       range(*previous) + "; each byte of the data section belongs to one tensor");
            return;
        }
        if (t->begin > covered) {
            faults.add("bytes [" + std::to_string(covered) + ", " + std::to_string(t->begin) + ") of the data section belong to no tensor "
                       "(before tensor '" + printable(t->name) + "'); the tensors must cover it without gaps");
            return;
        }
        covered = t->end;
        previous = t;
    }
    if (covered != data_size)
        faults.add("bytes [" + std::to_string(covered) + ", " + std::to_string(data_size) + ") at the end of the file belong to no tensor; "
                   "the tensors must cover the data section without gaps");
}

}  // namespace

std::optional<Header> parse_header(const unsigned char* data, std::size_t size, const std::string& source_name,
                                   std::vector<std::string>& errors) {
    Faults faults(source_name);
    if (size < 8) {
        faults.add(std::to_string(size) + " bytes; a safetensors file starts with an 8-byte header length");
        faults.flush_into(errors);
        return std::nullopt;
    }
    std::uint64_t header_length = 0;
    for (int i = 7; i >= 0; --i) header_length = (header_length << 8) | data[i];
    if (header_length > kMaxHeaderBytes) {
        faults.add("the header length is " + std::to_string(header_length) + " bytes, more than any model's (at most " +
                   std::to_string(kMaxHeaderBytes) + "); not a safetensors file?");
    } else if (header_length > size - 8) {
        faults.add("the header length is " + std::to_string(header_length) + " bytes, but the file has only " +
                   std::to_string(size - 8) + " after the length; the file is cut short or not a safetensors file");
    }
    if (!faults.empty()) {
        faults.flush_into(errors);
        return std::nullopt;
    }

    Header header;
    header.data_start = 8 + header_length;
    const std::uint64_t data_size = size - header.data_start;
    std::vector<std::string> json_errors;
    const char* text = reinterpret_cast<const char*>(data + 8);
    const std::optional<json> document = parse_json(text, text + header_length, source_name + ": the JSON header", json_errors,
                                                    json_limits::kSafetensorsHeader);
    if (!document) {
        errors.insert(errors.end(), json_errors.begin(), json_errors.end());
        return std::nullopt;
    }
    if (!document->is_object()) {
        faults.add("the JSON header is " + type_name(*document) + ", expected an object of tensors");
        faults.flush_into(errors);
        return std::nullopt;
    }
    for (const auto& [name, entry] : document->items()) {
        if (name == "__metadata__") {
            if (!entry.is_object()) {
                faults.add("'__metadata__' is " + type_name(entry) + ", expected an object of strings");
                continue;
            }
            for (const auto& [key, value] : entry.items()) {
                if (value.is_string()) header.metadata[key] = value.get<std::string>();
                else faults.add("'__metadata__' key '" + printable(key) + "' is " + type_name(value) + ", expected a string");
            }
            continue;
        }
        if (name.size() > kMaxTensorNameBytes) {
            faults.add("a tensor name of " + std::to_string(name.size()) + " bytes ('" + printable(name, 60) +
                       "'): a name is at most " + std::to_string(kMaxTensorNameBytes) + " bytes");
            continue;
        }
        std::optional<TensorInfo> info = tensor_entry(name, entry, data_size, faults);
        if (info) header.tensors.emplace(name, std::move(*info));
    }
    if (!faults.empty()) {
        faults.flush_into(errors);
        return std::nullopt;
    }
    check_tiling(header, data_size, faults);
    if (!faults.flush_into(errors)) return std::nullopt;
    return header;
}

// [SECTION] The mapped file

struct SafetensorsFile::Image {
    const unsigned char* data = nullptr;
    std::size_t size = 0;
    void* mapping = nullptr;              // from mmap, or null for a copy
    std::vector<unsigned char> copy;

    Image() = default;
    Image(const Image&) = delete;
    Image& operator=(const Image&) = delete;
    ~Image() {
        if (mapping) ::munmap(mapping, size);
    }
};

SafetensorsFile::SafetensorsFile(std::shared_ptr<Image> image, Header header, std::string source)
    : image_(std::move(image)), header_(std::move(header)), source_(std::move(source)) {}
SafetensorsFile::SafetensorsFile(SafetensorsFile&&) noexcept = default;
SafetensorsFile& SafetensorsFile::operator=(SafetensorsFile&&) noexcept = default;
SafetensorsFile::~SafetensorsFile() = default;

std::optional<SafetensorsFile> SafetensorsFile::open(const std::string& path, std::vector<std::string>& errors) {
    // A FIFO or a device is refused before it could block or never end.
    const int fd = open_regular_file(path, "safetensors", errors);
    if (fd < 0) return std::nullopt;
    struct stat st {};
    ::fstat(fd, &st);
    const auto size = static_cast<std::size_t>(st.st_size);
    if (size < 8) {  // mmap cannot map 0 bytes; the header check says why
        ::close(fd);
        parse_header(nullptr, size, path, errors);
        return std::nullopt;
    }
    void* mapping = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    const int map_error = errno;
    ::close(fd);  // the mapping keeps the file
    if (mapping == MAP_FAILED) {
        errors.push_back(path + ": cannot map " + std::to_string(size) + " bytes: " + std::strerror(map_error));
        return std::nullopt;
    }
    auto image = std::make_shared<Image>();
    image->mapping = mapping;
    image->data = static_cast<const unsigned char*>(mapping);
    image->size = size;
    std::optional<Header> header = parse_header(image->data, size, path, errors);
    if (!header) return std::nullopt;
    return SafetensorsFile(std::move(image), std::move(*header), path);
}

std::optional<SafetensorsFile> SafetensorsFile::from_memory(const unsigned char* data, std::size_t size,
                                                            const std::string& source_name, std::vector<std::string>& errors) {
    auto image = std::make_shared<Image>();
    image->copy.assign(data, data + size);
    image->data = image->copy.data();
    image->size = size;
    std::optional<Header> header = parse_header(image->data, size, source_name, errors);
    if (!header) return std::nullopt;
    return SafetensorsFile(std::move(image), std::move(*header), source_name);
}

void SafetensorsFile::prefetch() const {
    if (image_->mapping) ::madvise(image_->mapping, image_->size, MADV_WILLNEED);
}

void SafetensorsFile::release(const std::string& name) const {
    const TensorInfo* tensor = info(name);
    if (!image_->mapping || !tensor) return;
    const long page_size = ::sysconf(_SC_PAGESIZE);
    if (page_size <= 0) return;
    const auto page = static_cast<std::uintptr_t>(page_size);
    const auto base = reinterpret_cast<std::uintptr_t>(image_->mapping);
    const std::uintptr_t begin = base + header_.data_start + tensor->begin, end = base + header_.data_start + tensor->end;
    const std::uintptr_t first = (begin + page - 1) / page * page, last = end / page * page;  // whole pages only
    if (last > first) ::madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
}

std::optional<SafetensorsFile::Stored> SafetensorsFile::stored(const std::string& name) const {
    const TensorInfo* tensor = info(name);
    if (!tensor || !tensor->floating) return std::nullopt;
    // parse_header checked begin ≤ end ≤ data size and end − begin = count·sizeof(dtype).
    return Stored{image_, image_->data + header_.data_start + tensor->begin, *tensor->floating};
}

std::optional<SafetensorsFile::Stored> SafetensorsFile::stored_bytes(const std::string& name) const {
    const TensorInfo* tensor = info(name);
    if (!tensor) return std::nullopt;
    return Stored{image_, image_->data + header_.data_start + tensor->begin, Dtype::F32};
}

bool SafetensorsFile::has(const std::string& name) const { return header_.tensors.count(name) > 0; }

std::vector<std::string> SafetensorsFile::names() const {
    std::vector<std::string> names;
    names.reserve(header_.tensors.size());
    for (const auto& [name, info] : header_.tensors) names.push_back(name);
    return names;
}

const TensorInfo* SafetensorsFile::info(const std::string& name) const {
    const auto it = header_.tensors.find(name);
    return it == header_.tensors.end() ? nullptr : &it->second;
}

bool SafetensorsFile::read_into(const std::string& name, float* out, std::size_t count, std::vector<std::string>& errors) const {
    const TensorInfo* tensor = info(name);
    if (!tensor) {
        errors.push_back(source_ + ": tensor '" + printable(name) + "' is missing");
        return false;
    }
    if (!tensor->floating) {
        errors.push_back(source_ + ": tensor '" + printable(name) + "': dtype " + tensor->dtype +
                         " is not read (only F32, F16 and BF16 are)");
        return false;
    }
    if (tensor->element_count != count) {
        errors.push_back(source_ + ": tensor '" + printable(name) + "' has " + std::to_string(tensor->element_count) +
                         " elements, not the " + std::to_string(count) + " expected");
        return false;
    }
    // parse_header checked begin ≤ end ≤ data size and end − begin = count·sizeof(dtype).
    convert_to_f32(image_->data + header_.data_start + tensor->begin, *tensor->floating, count, out);
    return true;
}

bool SafetensorsFile::read(const std::string& name, std::vector<float>& out, std::vector<std::string>& errors) const {
    const TensorInfo* tensor = info(name);
    const std::size_t count = tensor ? static_cast<std::size_t>(tensor->element_count) : 0;
    if (tensor && tensor->floating) out.resize(count);  // bounded by the file's size
    return read_into(name, out.data(), count, errors);
}

// [SECTION] Writing

NamedTensor named_tensor(std::string name, const Matrix& m) { return {std::move(name), {m.rows(), m.cols()}, m.data()}; }
NamedTensor named_tensor(std::string name, const Vector& v) { return {std::move(name), {v.cols()}, v.data()}; }

bool write_safetensors_to(const std::function<bool(const void* bytes, std::size_t size)>& sink,
                          const std::vector<NamedTensor>& tensors, const std::map<std::string, std::string>& metadata,
                          Dtype dtype, std::string* error) {
    auto fail = [&](const std::string& what) {
        if (error) *error = what;
        return false;
    };
    // The header: offsets laid out in the order given.
    json header = json::object();
    std::vector<std::uint64_t> counts;
    std::uint64_t offset = 0;
    for (const NamedTensor& tensor : tensors) {
        if (tensor.name.empty() || tensor.name == "__metadata__") return fail("tensor name '" + tensor.name + "' is reserved");
        if (valid_utf8(tensor.name) != tensor.name) return fail("tensor name '" + printable(tensor.name) + "' is not valid UTF-8");
        if (header.contains(tensor.name)) return fail("tensor '" + tensor.name + "' is given twice");
        std::uint64_t count = 1;
        for (const std::int64_t dim : tensor.shape) {
            if (dim < 0) return fail("tensor '" + tensor.name + "' has a negative dimension " + shape_text(tensor.shape));
            count *= static_cast<std::uint64_t>(dim);
        }
        if (count > 0 && !tensor.values) return fail("tensor '" + tensor.name + "' has no values");
        const std::uint64_t bytes = count * dtype_size(dtype);
        header[tensor.name] = {{"dtype", to_string(dtype)}, {"shape", tensor.shape}, {"data_offsets", {offset, offset + bytes}}};
        offset += bytes;
        counts.push_back(count);
    }
    if (!metadata.empty()) {
        for (const auto& [key, value] : metadata)
            if (valid_utf8(key) != key || valid_utf8(value) != value)
                return fail("metadata '" + printable(key) + "' is not valid UTF-8");
        header["__metadata__"] = metadata;
    }
    std::string text = header.dump();
    text.append((8 - (8 + text.size()) % 8) % 8, ' ');  // the data section starts on an 8-byte boundary
    unsigned char length[8];
    for (int i = 0; i < 8; ++i) length[i] = static_cast<unsigned char>(static_cast<std::uint64_t>(text.size()) >> (8 * i));
    if (!sink(length, 8) || !sink(text.data(), text.size())) return fail("the header could not be written");

    // The data, converted a block at a time so nothing the size of the model is allocated.
    constexpr std::size_t kBlock = 1 << 16;
    std::vector<std::uint16_t> narrow(kBlock);
    for (std::size_t t = 0; t < tensors.size(); ++t) {
        const float* values = tensors[t].values;
        for (std::uint64_t done = 0; done < counts[t];) {
            const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(kBlock, counts[t] - done));
            bool written;
            if (dtype == Dtype::F32) {
                written = sink(values + done, n * 4);
            } else {
                for (std::size_t i = 0; i < n; ++i)
                    narrow[i] = dtype == Dtype::F16 ? f32_to_f16(values[done + i]) : f32_to_bf16(values[done + i]);
                written = sink(narrow.data(), n * 2);
            }
            if (!written) return fail("tensor '" + tensors[t].name + "' could not be written");
            done += n;
        }
    }
    return true;
}

std::vector<unsigned char> safetensors_bytes(const std::vector<NamedTensor>& tensors,
                                             const std::map<std::string, std::string>& metadata, Dtype dtype,
                                             std::string* error) {
    std::vector<unsigned char> bytes;
    const bool ok = write_safetensors_to(
        [&](const void* data, std::size_t size) {
            const auto* p = static_cast<const unsigned char*>(data);
            bytes.insert(bytes.end(), p, p + size);
            return true;
        },
        tensors, metadata, dtype, error);
    if (!ok) bytes.clear();
    return bytes;
}

bool write_safetensors(const std::string& path, const std::vector<NamedTensor>& tensors,
                       const std::map<std::string, std::string>& metadata, Dtype dtype, std::string* error) {
    const std::string tmp = path + ".tmp." + std::to_string(::getpid());
    int system_error = 0;
    auto fail = [&](int error_number, const std::string& detail) {
        if (error) {
            *error = "cannot write " + path + ": " + (error_number ? std::string(std::strerror(error_number)) : detail);
            std::error_code ec;
            if (std::filesystem::exists(path, ec)) *error += "; the file already there is unchanged";
        }
        return false;
    };
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return fail(errno, "");
    std::string format_error;
    const bool written = write_safetensors_to(
        [&](const void* data, std::size_t size) {
            const auto* p = static_cast<const char*>(data);
            for (std::size_t done = 0; done < size;) {
                const ssize_t n = ::write(fd, p + done, size - done);
                if (n < 0 && errno == EINTR) continue;
                if (n <= 0) {
                    system_error = n < 0 ? errno : EIO;
                    return false;
                }
                done += static_cast<std::size_t>(n);
            }
            return true;
        },
        tensors, metadata, dtype, &format_error);
    if (written && ::fsync(fd) != 0 && errno != EINVAL) system_error = errno;  // EINVAL: a file that cannot be synced
    if (::close(fd) != 0 && written && system_error == 0) system_error = errno;
    if (written && system_error == 0 && std::rename(tmp.c_str(), path.c_str()) != 0) system_error = errno;
    if (!written || system_error != 0) {
        ::unlink(tmp.c_str());
        return fail(system_error, format_error);
    }
    sync_parent_folder(path);  // the rename itself is durable once the folder is synced
    return true;
}

}  // namespace attn::safetensors
