#pragma once
// A weight matrix read where its checkpoint stores it: the bytes of a tensor in a
// memory-mapped safetensors file (F32, F16 or BF16), seen as the (rows × cols) float32 matrix
// the engine uses. Nothing is copied when a checkpoint opens: a BF16 model stays BF16 in
// memory, and its pages are the file's, shared with the page cache.
//
// Where element (r, c) is stored. A stored tensor is row-major; its "lines" are its rows when
// `transposed` (Hugging Face's nn.Linear keeps (out × in): the engine's column c is stored
// row line(c), element r of it) and its columns otherwise (GPT-2's Conv1D and the embedding
// tables keep (in × out): element r·stride + line(c)):
//   line(c) = c / group · period + offset + c % group
// group = period = cols, offset = 0 is a whole tensor; offset d, stride 3d is GPT-2's W_K out of
// c_attn (d × 3d); group hd, period 3·hd, offset hd is GPT-NeoX's K out of its fused
// query_key_value rows (viewed as (H, 3, hd)).
//
// Reading without a float32 copy of the whole matrix: product_into (product.hpp) widens
// pieces of a few hundred columns, or reads an aligned F32 tensor straight from the mapping;
// widen_row gives one row (an embedding); first_non_finite scans the stored bytes. to_matrix
// is the whole float32 matrix, for a weight a user opens to look at or edit.
//
// The mapping stays valid while `owner` lives. The file must not be truncated while it is
// open (a page past the new end faults): the Hugging Face cache and this program's own
// writers replace files by renaming a new one over them, which leaves an open mapping as it was.
#include <cstddef>
#include <memory>

#include "tensor/safetensors.hpp"
#include "tensor/matrix.hpp"

namespace attn {

struct StoredMatrix {
    std::shared_ptr<const void> owner;    // keeps `bytes` mapped: the file's image
    const unsigned char* bytes = nullptr; // the stored tensor's first element
    safetensors::Dtype dtype = safetensors::Dtype::F32;
    // MXFP4 (gpt-oss's experts, as OpenAI publishes them): when set, the elements are 4-bit E2M1
    // numbers, two a byte at `bytes` (element 2j in the low nibble of byte j, 2j + 1 in the high),
    // and each run of 32 shares an E8M0 scale byte s here: element i is
    // e2m1(nibble i)·2^(scales[i / 32] − 127), as transformers' convert_moe_packed_tensors widens
    // it (a scale of 255 is 2^128 = ∞, and 0·∞ is NaN there too). `dtype` is then unused.
    const unsigned char* scales = nullptr;
    Eigen::Index rows = 0, cols = 0;      // the matrix as the engine uses it
    bool transposed = false;              // lines are stored rows (see above)
    Eigen::Index stride = 0;              // elements per stored row
    Eigen::Index group = 0, period = 0, offset = 0;

    // A whole stored (rows × cols) tensor used as it is (transpose() gives it as its transpose:
    // an nn.Linear weight (out × in) as the engine's (in × out)).
    static StoredMatrix as_stored(std::shared_ptr<const void> owner, const unsigned char* bytes, safetensors::Dtype dtype,
                                  Eigen::Index rows, Eigen::Index cols);
    // The same for MXFP4 blocks and their scales (rows × cols elements; cols a multiple of 32).
    static StoredMatrix as_mxfp4(std::shared_ptr<const void> owner, const unsigned char* blocks, const unsigned char* scales,
                                 Eigen::Index rows, Eigen::Index cols);
    bool mxfp4() const { return scales != nullptr; }
    // Columns [first, first + count) of this matrix, taken `count` at a time in every block of
    // `every` columns: columns(d, d, 3d) is GPT-2's W_K out of c_attn; columns(hd, hd, 3hd) of
    // a fused (d × 3·H·hd) is GPT-NeoX's K. Only on a whole tensor (group = cols).
    StoredMatrix columns(Eigen::Index first, Eigen::Index count, Eigen::Index every, Eigen::Index total) const;
    // The same bytes as the (cols × rows) transpose; only on a whole tensor (group = cols).
    StoredMatrix transpose() const;

    Eigen::Index line(Eigen::Index c) const { return c / group * period + offset + c % group; }
    std::size_t index(Eigen::Index r, Eigen::Index c) const {
        return static_cast<std::size_t>(transposed ? line(c) * stride + r : r * stride + line(c));
    }
    float value(Eigen::Index r, Eigen::Index c) const;
    std::size_t element_size() const { return safetensors::dtype_size(dtype); }  // not for MXFP4 (half a byte)
    // The stored bytes this matrix reads (MXFP4: half a byte an element and a byte a 32).
    std::size_t stored_bytes() const {
        const std::size_t n = static_cast<std::size_t>(rows * cols);
        return mxfp4() ? n / 2 + n / 32 : n * element_size();
    }
    const char* storage_name() const;  // "F32", "F16", "BF16", "MXFP4"
    // F32 at a float's alignment: read in place, no widening.
    bool direct() const;

    Matrix to_matrix() const;                                  // (rows × cols), float32
    void widen_row(Eigen::Index r, float* out) const;          // row r: cols floats
    // Columns [begin, begin + width) as float32: (width × rows) row-major when transposed (each
    // a stored line), (rows × width) row-major otherwise.
    void widen_columns(Eigen::Index begin, Eigen::Index width, float* out) const;
    // The first non-finite element in row-major order, or {-1, -1}.
    Cell first_non_finite() const;
};

// Counts the float32 bytes made from stored matrices as whole matrices (to_matrix): a pass
// makes none, and a test checks it.
std::size_t stored_bytes_widened();
void count_stored_widening(std::size_t bytes);

}  // namespace attn
