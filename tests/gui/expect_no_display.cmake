# Runs attnlab --screenshot with no DISPLAY: it must say why and exit with 1 (not crash).
execute_process(
  COMMAND ${CMAKE_COMMAND} -E env --unset=DISPLAY --unset=WAYLAND_DISPLAY ${ATTNLAB} --preset dot-product-3-tokens --screenshot ${OUT}
  RESULT_VARIABLE code ERROR_VARIABLE err OUTPUT_VARIABLE out)
if(NOT code STREQUAL "1")
  message(FATAL_ERROR "expected exit code 1 without a display, got '${code}'\n${err}")
endif()
if(NOT err MATCHES "cannot open a window")
  message(FATAL_ERROR "expected 'cannot open a window' on stderr, got:\n${err}")
endif()
if(EXISTS ${OUT})
  message(FATAL_ERROR "${OUT} was written without a display")
endif()
