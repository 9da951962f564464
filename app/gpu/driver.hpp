#pragma once
// The OpenGL driver a context loaded (Mesa's *_dri.so, libgallium, libGLX_mesa) stays
// loaded until the process exits, instead of being unloaded when the last window of a
// display closes and loaded again for the next one. A process that opens windows one after
// another (the render tests, a headless GPU run after the window) keeps the driver's
// start-up cost to once, and memory the driver still holds at exit stays attributable to
// it (LeakSanitizer's suppressions name its library; an unloaded one has no name).
namespace attn::gpu {

// Call with a context current; cheap after the first call.
void keep_gl_driver_loaded();

}  // namespace attn::gpu
