// SPDX-License-Identifier: MIT
// The C builds of kv-get, kv-put and kv-del (programs/kv-*.c, programs/kv.h) for a geometry:
// rof-kvstore --programs c.  The C is compiled in (kv_programs.cpp); clang runs at run time
// with the geometry as -D defines, as program_source sets the .rofs' .const lines.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kv_layout.h"

namespace rofkv {

// The -D defines (NAME=VALUE) of programs/kv.h's sizes for @g.
std::vector<std::string> c_defines(const Geometry& g);

// programs/NAME.c ("kv-get", "kv-put", "kv-del") compiled for @g with @clang (a path, or a
// name looked up in PATH), translated and verified (rof::prog::translate_bpf): its encoded
// image.  Throws std::runtime_error with clang's, the translator's or the verifier's message
// (naming NAME.c's lines), std::invalid_argument for an unknown name.  With @cache_dir, clang's
// object is kept there (NAME-HASH.o, HASH naming the sources and defines, made if need be) and a
// later call for the same input translates it without running clang: a restart of rof-kvstore
// on the same table compiles nothing.  A cache that cannot be written is reported on stderr.
std::vector<std::uint8_t> program_image_c(const std::string& name, const Geometry& g,
                                          const std::string& clang = "clang",
                                          const std::string& cache_dir = "");

}  // namespace rofkv
