// SPDX-License-Identifier: MIT
// The tenant files the unit tests of rofd and librof share.
#pragma once

#include <cstdint>
#include <string>

namespace rofd::test {

// The tenant "kv" as a tenant file: quota region_bytes 64 MiB, "table"
// (read, write, atomic) and, unless @table_only, a free list of 1024 64-byte
// blocks at 4096 in the table and a second region "log" (4 MiB, read and
// write).
struct KvToml {
    std::string head{};  // top-level keys, before [identity]
    std::uint32_t uid = 1001;
    std::string quota{};  // more [quota] lines
    std::string table_size = "16MiB";
    bool table_only = false;
    std::string tail{};  // after the regions, e.g. [[grants]]
};

inline std::string kv_toml(const KvToml& o = {}) {
    std::string s = "name = \"kv\"\n" + o.head;
    s += "\n[identity]\nuids = [" + std::to_string(o.uid) + "]\n";
    s += "\n[quota]\nregion_bytes = \"64MiB\"\n" + o.quota;
    s += "\n[[regions]]\nname = \"table\"\nsize = \"" + o.table_size +
         "\"\naccess = [\"read\", \"write\", \"atomic\"]\n";
    if (!o.table_only) {
        s += "\n[[regions.freelists]]\nblock_size = 64\noffset = 4096\ncount = 1024\n";
        s += "\n[[regions]]\nname = \"log\"\nsize = \"4MiB\"\naccess = [\"read\", \"write\"]\n";
    }
    return s + o.tail;
}

// The tenant "analytics": uid 1002, no region.
inline constexpr const char* kAnalyticsToml = R"(name = "analytics"
[identity]
uids = [1002]
)";

}  // namespace rofd::test
