// SPDX-License-Identifier: MIT
// Internal to librof: the C API's extensible structs (rof.h, "Extensible
// structs"), which begin with sz, the size of the struct as the caller's
// rof.h declares it.  Header-only, as c_api_errors.h, so that
// c_api_test.cpp checks the code the library runs.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <string>

#include "rof.h"
#include "rof/error.h"

namespace rof::capi {

// The size of each struct's first version: an sz below it is refused.
// When a struct gains a field, its entry here stays.
template <typename T>
inline constexpr std::size_t first_size = sizeof(T);
// More than any version of a struct will hold: an sz above it is garbage
// (an uninitialised struct), not a newer rof.h's, and is not read.
inline constexpr std::size_t max_struct_size = 4096;

// Checks @p->sz (@what names the call and argument in the error).  Of an
// input (@in), the bytes of a newer rof.h's struct past what this librof
// knows must be zero; an output's are left as they are.
template <typename T>
void check_sz(const T* p, const char* what, bool in) {
    if (p->sz < first_size<T> || p->sz > max_struct_size) {
        throw Error(Code::invalid_argument, std::string(what) + ": sz is " + std::to_string(p->sz) +
                                                ", not the struct's size (" +
                                                std::to_string(sizeof(T)) +
                                                "): set it with ROF_STRUCT_INIT or to sizeof");
    }
    if (in && p->sz > sizeof(T)) {
        // A newer rof.h's struct: what this librof does not know must be
        // unset, or the caller would be ignored silently.
        const auto* b = reinterpret_cast<const unsigned char*>(p);
        if (std::any_of(b + sizeof(T), b + p->sz, [](unsigned char c) { return c != 0; })) {
            throw Error(Code::invalid_argument,
                        std::string(what) +
                            ": sets fields this librof does not know (the program was built "
                            "against a newer rof.h): install a librof as new as its rof.h");
        }
    }
}

// The caller's struct as this librof knows it.
template <typename T>
T struct_in(const T* p, const char* what) {
    check_sz(p, what, true);
    T v{};
    std::memcpy(&v, p, sizeof(T));
    return v;
}

// Writes @v to the caller's struct: this librof's fields, sz kept.
template <typename T>
void struct_out(T* p, T v, const char* what) {
    check_sz(p, what, false);
    v.sz = p->sz;
    std::memcpy(p, &v, sizeof(T));
}

}  // namespace rof::capi
