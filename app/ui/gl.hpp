#pragma once
// The one GL loader header of the app: libepoxy stands where glad would (see DESIGN.md);
// a build with glad changes this file only. Include it before any other GL header.
#include <epoxy/gl.h>
