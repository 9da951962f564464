#pragma once
// The one GL loader header of the app, below both the window (ui/) and the GPU backend
// (gpu/): libepoxy stands where glad would (glad is not packaged for Debian 12), so a
// build with glad changes this file only. Include it before any other GL header.
#include <epoxy/gl.h>
