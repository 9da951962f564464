// Catch2's main, compiled once for every test program. Its output is unbuffered: a program
// that dies at once (a signal, an exit inside a library) still shows every test it reported.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdio>

int main(int argc, char* argv[]) {
    std::setvbuf(stdout, nullptr, _IONBF, 0);
    return Catch::Session().run(argc, argv);
}
