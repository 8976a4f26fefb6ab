// SPDX-License-Identifier: MIT
#include "module.h"

#include <cstring>

namespace rofd {

std::string abi_name(const char (&name)[ROF_NAME_MAX]) {
    // The module NUL-terminates, but never trust a fixed array to be.
    const std::size_t len = strnlen(name, ROF_NAME_MAX);
    return len == ROF_NAME_MAX ? std::string() : std::string(name, len);
}

}  // namespace rofd
