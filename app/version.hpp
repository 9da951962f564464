// The version of the project (CMakeLists.txt's project(VERSION)) and the commit it was built
// from, written into version.cpp at build time by app/version.cmake.
#pragma once

namespace attn {

// "attnlab 0.1.0 (commit 64f87ae086fb)", or "(unknown commit)" when built outside a git checkout
// (a release tarball); "-dirty" after the commit when the checkout had uncommitted changes.
const char* version_line();

}  // namespace attn
