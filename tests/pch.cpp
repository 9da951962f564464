// The object that makes the tests' precompiled header (tests/CMakeLists.txt): nothing of its own.
