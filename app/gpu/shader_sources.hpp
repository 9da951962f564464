#pragma once
// The GLSL files of shaders/, embedded at build time (app/gpu/embed_shaders.cmake writes
// the definitions into the build tree; one constant per file, named after it).
namespace attn::gpu::shader_source {

extern const char* const matmul;     // shaders/matmul.comp
extern const char* const rope;       // shaders/rope.comp
extern const char* const attention;  // shaders/attention.comp
extern const char* const pool;       // shaders/pool.comp
extern const char* const scores;     // shaders/scores.glsl, shared by attention and pool

}  // namespace attn::gpu::shader_source
