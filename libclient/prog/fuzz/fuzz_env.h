// The fixed environment of the verifier and executor fuzzers: the input is
// raw instruction slots, run against this header, these slots and buffers.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "rof/prog/program.h"
#include "tests/harness.h"

namespace rof::prog::fuzz {

// Seeds in corpus/*.rofs start with exactly this prelude.
inline const char* kPrelude =
    ".args 16, 128\n"
    ".scratch 64\n"
    ".resp 128\n"
    ".region data, rwa, 256\n"
    ".region ro, r, 64\n"
    ".region heap, rwa, 1024, freelist\n";

inline Program program_from(const uint8_t* data, size_t size) {
    Program p;
    p.args_min = 16;
    p.args_max = 128;
    p.scratch_size = 64;
    p.resp_max = 128;
    p.slots = {Slot{"data", ROF_ACCESS_ALL, 0, 256}, Slot{"ro", ROF_ACCESS_READ, 0, 64},
               Slot{"heap", ROF_ACCESS_ALL, ROF_SLOT_FREELIST, 1024}};
    size_t n = std::min<size_t>(size / 8, 512);
    p.insns.resize(n);
    if (n)
        std::memcpy(p.insns.data(), data, n * 8);
    return p;
}

// Buffers filled from the input's tail so runs see varied data.
inline void fill(test::Env& env, const uint8_t* data, size_t size) {
    for (size_t i = 0; i < env.args.size(); i++)
        env.args[i] = size ? data[(i * 7) % size] : 0;
    for (size_t i = 0; i < env.mem[0].len; i++)
        env.mem[0].data()[i] = size ? data[(i * 13 + 5) % size] : 0;
    env.freelist(2, 64, 64, 15);
}

}  // namespace rof::prog::fuzz
