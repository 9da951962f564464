#pragma once
// Move-only owners of GL objects: each deletes its object once; a moved-from or
// default-constructed one holds 0 and deletes nothing. Need a current GL context.
#include "gl.hpp"

#include <cstddef>
#include <utility>

namespace attn::gpu {

template <typename Deleter>
class GlName {
public:
    GlName() = default;
    explicit GlName(GLuint name) : name_(name) {}
    GlName(GlName&& other) noexcept : name_(std::exchange(other.name_, 0)) {}
    GlName& operator=(GlName&& other) noexcept {
        if (this != &other) {
            reset();
            name_ = std::exchange(other.name_, 0);
        }
        return *this;
    }
    GlName(const GlName&) = delete;
    GlName& operator=(const GlName&) = delete;
    ~GlName() { reset(); }

    GLuint get() const { return name_; }
    explicit operator bool() const { return name_ != 0; }
    void reset() {
        if (name_ != 0) Deleter{}(name_);
        name_ = 0;
    }

private:
    GLuint name_ = 0;
};

struct DeleteBuffer {
    void operator()(GLuint name) const { glDeleteBuffers(1, &name); }
};
struct DeleteProgram {
    void operator()(GLuint name) const { glDeleteProgram(name); }
};
struct DeleteShader {
    void operator()(GLuint name) const { glDeleteShader(name); }
};
struct DeleteQuery {
    void operator()(GLuint name) const { glDeleteQueries(1, &name); }
};

using Program = GlName<DeleteProgram>;
using Shader = GlName<DeleteShader>;
using Query = GlName<DeleteQuery>;

// A shader storage buffer and its size in bytes.
class Buffer {
public:
    Buffer() = default;
    GLuint get() const { return name_.get(); }
    std::size_t bytes() const { return bytes_; }
    // (Re)allocates `bytes` (at least 16, so an unused binding is still valid), filled with
    // `data` or zeros. False when the driver reports GL_OUT_OF_MEMORY or another error.
    bool allocate(std::size_t bytes, const void* data = nullptr);
    // Reads `bytes` from the start of the buffer.
    void read(void* out, std::size_t bytes) const;
    void bind(GLuint binding) const { glBindBufferBase(GL_SHADER_STORAGE_BUFFER, binding, name_.get()); }

private:
    GlName<DeleteBuffer> name_;
    std::size_t bytes_ = 0;
};

}  // namespace attn::gpu
