// Where the app's files (fonts, lessons) are: found from the running binary's own location,
// never from a path fixed at build time, so an installed copy and the build tree both work.
#pragma once

#include <string>

namespace attn {

// The folder that holds fonts/ and lessons/: the first of <binary's folder>/../share/attnlab
// (installed: /usr/bin/attnlab → /usr/share/attnlab; the build tree mirrors this layout with
// build/share/attnlab) and <binary's folder>/../../share/attnlab (a test binary one folder
// deeper in the build tree, build/tests/gui/). When neither exists, the first, so that a message
// naming it says where the files were expected.
const std::string& data_dir();

// The same search from a given binary path (the tests use it without moving the binary).
std::string data_dir_for(const std::string& binary_path);

}  // namespace attn
