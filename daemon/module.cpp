// SPDX-License-Identifier: MIT
#include "module.h"

#include <cstring>

namespace rofd {

std::string abi_name(const char (&name)[ROF_NAME_MAX]) {
    // The module NUL-terminates, but never trust a fixed array to be.
    const std::size_t len = strnlen(name, ROF_NAME_MAX);
    return len == ROF_NAME_MAX ? std::string() : std::string(name, len);
}

rof_freelist_info freelist_made(const rof_freelist_spec& spec, std::uint32_t region,
                                std::uint32_t tenant) {
    rof_freelist_info f{};
    f.offset = spec.offset;
    f.id = spec.id;
    f.region = region;
    f.tenant = tenant;
    f.block_size = spec.block_size;
    f.count = spec.count;
    f.free = spec.count;
    return f;
}

}  // namespace rofd
