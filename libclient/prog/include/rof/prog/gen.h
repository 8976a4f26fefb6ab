// Random valid programs, for property tests, fuzzing and the kernel-vs-
// userspace differential test: every program it makes is meant to pass the
// verifier with default limits (tests assert that).  One seed gives one
// program whatever the compiler: gen.cpp draws each random number in a
// statement of its own, never two in one call's arguments (whose order of
// evaluation C++ leaves unspecified).
#pragma once

#include <cstdint>
#include <random>

#include "rof/prog/program.h"

namespace rof::prog {

// The environment generated programs expect; the differential test binds
// regions of these sizes in both executors.
struct GenEnv {
    static constexpr uint32_t kArgs = 256;  // args length, fixed
    static constexpr uint32_t kScratch = 256;
    static constexpr uint32_t kResp = 512;
    static constexpr uint64_t kData = 4096;     // slot 0 "data", rwa
    static constexpr uint64_t kHeap = 8192;     // slot 1 "heap", rwa, freelist
    static constexpr uint64_t kHeapBlock = 64;  // free list geometry
};

struct GenOptions {
    uint32_t max_items = 40;  // statements at the top level
    uint32_t max_depth = 2;   // nesting of if/loop
    uint32_t max_trip = 8;
};

Program random_program(std::mt19937_64& rng, const GenOptions& opt = {});

}  // namespace rof::prog
