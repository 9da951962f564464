# Without a display: the window cannot open, and a screenshot without EGL either (libglvnd
# pointed at no vendor library). Each must say why and exit with 1, not crash.
execute_process(
  COMMAND ${CMAKE_COMMAND} -E env --unset=DISPLAY --unset=WAYLAND_DISPLAY ${ATTNLAB} --preset dot-product-3-tokens --no-autosave
  RESULT_VARIABLE code ERROR_VARIABLE err OUTPUT_VARIABLE out TIMEOUT 60)
if(NOT code STREQUAL "1")
  message(FATAL_ERROR "expected exit code 1 for the window without a display, got '${code}'\n${err}")
endif()
if(NOT err MATCHES "cannot open a window")
  message(FATAL_ERROR "expected 'cannot open a window' on stderr, got:\n${err}")
endif()
file(REMOVE ${OUT})
execute_process(
  COMMAND ${CMAKE_COMMAND} -E env --unset=DISPLAY --unset=WAYLAND_DISPLAY __EGL_VENDOR_LIBRARY_FILENAMES=/nonexistent.json
          ${ATTNLAB} --preset dot-product-3-tokens --screenshot ${OUT}
  RESULT_VARIABLE code ERROR_VARIABLE err OUTPUT_VARIABLE out TIMEOUT 60)
if(NOT code STREQUAL "1")
  message(FATAL_ERROR "expected exit code 1 for --screenshot with neither a display nor EGL, got '${code}'\n${err}")
endif()
if(NOT err MATCHES "cannot open a window.*and cannot render off-screen")
  message(FATAL_ERROR "expected 'cannot open a window ..., and cannot render off-screen' on stderr, got:\n${err}")
endif()
if(EXISTS ${OUT})
  message(FATAL_ERROR "${OUT} was written with neither a display nor EGL")
endif()
