// The target that makes the precompiled header the libraries, tests and
// benchmarks reuse (src/CMakeLists.txt: mates_pch). It compiles nothing of
// its own.
