#pragma once
// The engine behind the command line's headless commands (--print, --export-json), chosen
// as the window chooses (compute::plan) by --backend:
//   cpu    the CPU engine: in full up to 1,024 tokens, output-only above;
//   gpu    the GPU backend on a headless context (EGL without a display), output-only;
//   auto   the CPU in full up to 1,024 tokens; above, the faster of the two by measured
//          speed (speed.hpp), a hardware GPU only.
// A GPU that cannot run (no context, no OpenGL 4.3, a shader, a lost context, a buffer too
// large) falls back to the CPU engine with a notice on err; the result is the CPU's.
#include <iosfwd>
#include <string>

#include "cli.hpp"

namespace attn::cli {

TraceRunner backend_runner(const std::string& backend, std::ostream& err);

}  // namespace attn::cli
