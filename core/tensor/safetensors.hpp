#pragma once
// Safetensors files (the Hugging Face format), read through a read-only memory map and
// written atomically.
//
// The layout, by the specification:
//   bytes [0, 8)        N, the header length, a little-endian u64
//   bytes [8, 8 + N)    the header: a JSON object
//                         {"NAME": {"dtype": "F32", "shape": [rows, cols], "data_offsets": [begin, end]},
//                          ..., "__metadata__": {"key": "value", ...}}
//   bytes [8 + N, end)  the data section: each tensor's elements, row-major, little-endian,
//                       at [begin, end) relative to the start of the data section.
// end − begin must be product(shape)·sizeof(dtype); a shape [] is a scalar (one element).
// Tensors may overlap or leave gaps; neither is checked.
//
// F32, F16 and BF16 tensors are read as float32; every other dtype of the specification
// (F64, I64, BOOL, …) is listed but refused when read. Every message starts with the file
// name and names the tensor where there is one.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tensor/matrix.hpp"

namespace attn::safetensors {

// The element types read as (and written from) float32.
enum class Dtype { F32, F16, BF16 };

const char* to_string(Dtype dtype);                          // "F32", "F16", "BF16"
std::optional<Dtype> dtype_from_string(const std::string& name);
std::size_t dtype_size(Dtype dtype);                         // 4, 2, 2

// IEEE binary16 and bfloat16 ↔ float32, bit for bit. To float32 is exact for every input
// (subnormals, ±0, ±∞, NaN payloads). From float32 rounds to nearest, ties to even; too
// large becomes ±∞; a NaN stays a (quiet) NaN of the same sign.
float f16_to_f32(std::uint16_t half);
float bf16_to_f32(std::uint16_t bf16);
std::uint16_t f32_to_f16(float value);
std::uint16_t f32_to_bf16(float value);

// Converts count little-endian elements at bytes (any alignment) to float32.
void convert_to_f32(const unsigned char* bytes, Dtype dtype, std::size_t count, float* out);

struct TensorInfo {
    std::string name;
    std::string dtype;                  // as written: "F32", "BF16", "I64", …
    std::optional<Dtype> floating;      // set for the three dtypes read as float32
    std::vector<std::int64_t> shape;    // row-major; [] is a scalar
    std::uint64_t element_count = 0;    // product(shape)
    std::uint64_t begin = 0, end = 0;   // byte offsets into the data section
};

// The header of a file image, checked against the image's size.
struct Header {
    std::map<std::string, TensorInfo> tensors;        // by name
    std::map<std::string, std::string> metadata;      // "__metadata__"
    std::uint64_t data_start = 0;                     // 8 + N: where the data section begins
};

// The largest header accepted: GPT-2 XL's is about 40 KB.
constexpr std::uint64_t kMaxHeaderBytes = 100'000'000;
// The longest tensor name accepted. The format sets none; transformers' longest are under 100
// bytes ("model.layers.31.self_attn.rotary_emb.inv_freq"), and a name is text the file controls
// that every message quotes and every tensor map reads.
constexpr std::size_t kMaxTensorNameBytes = 1024;

// Parses and checks the header of a whole file image data[0, size). nullopt with messages
// "SOURCE: …" (and "SOURCE: tensor 'NAME': …") appended to errors on any fault. Reads only
// inside [0, size); never throws.
std::optional<Header> parse_header(const unsigned char* data, std::size_t size, const std::string& source_name,
                                   std::vector<std::string>& errors);

class SafetensorsFile {
public:
    // Maps the file read-only; nullopt with messages on any fault of the file or its header.
    static std::optional<SafetensorsFile> open(const std::string& path, std::vector<std::string>& errors);
    // The same checks on bytes already in memory (copied): for the fuzzer and the tests.
    static std::optional<SafetensorsFile> from_memory(const unsigned char* data, std::size_t size,
                                                      const std::string& source_name, std::vector<std::string>& errors);

    const std::string& source() const { return source_; }
    bool has(const std::string& name) const;
    std::vector<std::string> names() const;                      // sorted
    const TensorInfo* info(const std::string& name) const;       // nullptr when absent
    const std::map<std::string, std::string>& metadata() const { return header_.metadata; }
    std::uint64_t data_start() const { return header_.data_start; }   // where the data section begins in the file

    // The tensor as float32, row-major. false with "SOURCE: tensor 'NAME': …" for a missing
    // tensor or a dtype other than F32, F16, BF16.
    bool read(const std::string& name, std::vector<float>& out, std::vector<std::string>& errors) const;
    // The same into out[0, count); count must be the tensor's element count.
    bool read_into(const std::string& name, float* out, std::size_t count, std::vector<std::string>& errors) const;
    // A tensor's bytes where the file holds them, and their owner: the file stays mapped (or
    // its copy in memory kept) while any copy of `owner` lives, so a checkpoint's weights can be
    // read in place (stored_matrix.hpp). nullopt for a missing tensor or a dtype other than F32,
    // F16, BF16.
    struct Stored {
        std::shared_ptr<const void> owner;
        const unsigned char* bytes = nullptr;
        Dtype dtype = Dtype::F32;
    };
    std::optional<Stored> stored(const std::string& name) const;
    // The bytes of a tensor of any dtype (U8 blocks and scales of a quantised format), and their
    // owner; nullopt for a missing tensor. `dtype` is left F32: the caller knows the format.
    std::optional<Stored> stored_bytes(const std::string& name) const;
    // Asks the kernel to read the whole mapping ahead: for a caller about to read every
    // tensor, once it has decided the file is worth it (never before its sizes are checked).
    void prefetch() const;
    // The mapped pages wholly inside the tensor's bytes leave this process's resident memory
    // (the OS keeps the file cached; a later read maps them again). A loader that reads each
    // tensor once and releases it holds the weights at their peak, not the weights and the file.
    void release(const std::string& name) const;

    SafetensorsFile(SafetensorsFile&&) noexcept;
    SafetensorsFile& operator=(SafetensorsFile&&) noexcept;
    ~SafetensorsFile();

private:
    struct Image;  // the mapping or the owned copy
    SafetensorsFile(std::shared_ptr<Image> image, Header header, std::string source);
    std::shared_ptr<Image> image_;  // shared with the weights read in place
    Header header_;
    std::string source_;
};

// One float32 tensor to write: the values are borrowed (product(shape) floats at values),
// so a 500 MB model is not copied to be saved.
struct NamedTensor {
    NamedTensor() = default;
    NamedTensor(std::string name_, std::vector<std::int64_t> shape_, const float* values_, std::shared_ptr<const Matrix> storage_ = {})
        : name(std::move(name_)), shape(std::move(shape_)), values(values_), storage(std::move(storage_)) {}
    std::string name;
    std::vector<std::int64_t> shape;
    const float* values = nullptr;
    // The values' owner when the tensor was assembled to be written (GPT-2's c_attn.weight,
    // joined from W_Q, W_K, W_V); empty when values are borrowed.
    std::shared_ptr<const Matrix> storage;
};
NamedTensor named_tensor(std::string name, const Matrix& m);   // shape [rows, cols]
NamedTensor named_tensor(std::string name, const Vector& v);   // shape [n], as PyTorch stores a bias

// The file's bytes, streamed to sink in pieces (false from sink stops the writing). The
// header is padded with spaces to a multiple of 8 bytes so the data section is aligned;
// tensors follow in the order given. false with *error for an empty or reserved name
// ("__metadata__"), a name given twice, or a negative dimension.
bool write_safetensors_to(const std::function<bool(const void* bytes, std::size_t size)>& sink,
                          const std::vector<NamedTensor>& tensors, const std::map<std::string, std::string>& metadata,
                          Dtype dtype, std::string* error);
// The same to a file, atomically: PATH.tmp.PID, fsync, rename over PATH.
bool write_safetensors(const std::string& path, const std::vector<NamedTensor>& tensors,
                       const std::map<std::string, std::string>& metadata, Dtype dtype, std::string* error);
// The same into memory.
std::vector<unsigned char> safetensors_bytes(const std::vector<NamedTensor>& tensors,
                                             const std::map<std::string, std::string>& metadata, Dtype dtype,
                                             std::string* error);

}  // namespace attn::safetensors
