#pragma once
// The GLSL files of shaders/, embedded at build time (app/gpu/embed_shaders.cmake writes
// the definitions into the build tree; one constant per file, named after it).
namespace attn::gpu::shader_source {

extern const char* const attention_rows;   // shaders/attention_rows.comp: one query row per invocation
extern const char* const attention_tiled;  // shaders/attention_tiled.comp: 4 × 4 register tiles
extern const char* const pool;             // shaders/pool.comp: the heatmap, one region row per invocation
extern const char* const pool_tiled;       // shaders/pool_tiled.comp: the heatmap in 4 × 4 register tiles
extern const char* const scores;           // shaders/scores.glsl: the rules, shared by all four

}  // namespace attn::gpu::shader_source
