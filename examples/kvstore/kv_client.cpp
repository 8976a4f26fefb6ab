// SPDX-License-Identifier: MIT
#include "kv_client.h"

#include <cstring>

namespace rofkv {

namespace {

void put32(std::byte* p, std::uint32_t v) {
    for (int i = 0; i < 4; i++)
        p[i] = static_cast<std::byte>(v >> (8 * i));
}

std::uint32_t get32(const std::byte* p) {
    std::uint32_t v = 0;
    for (int i = 0; i < 4; i++)
        v |= static_cast<std::uint32_t>(p[i]) << (8 * i);
    return v;
}

}  // namespace

const char* status_name(Status s) {
    switch (s) {
        case Status::ok:
            return "ok";
        case Status::not_found:
            return "not found";
        case Status::full:
            return "full";
        case Status::busy:
            return "busy";
        case Status::too_big:
            return "too big";
    }
    return "unknown";
}

KvClient::KvClient(rof::Session& s)
    : s_(s),
      get_(s.program_tag("kv-get")),
      put_(s.program_tag("kv-put")),
      del_(s.program_tag("kv-del")) {
    args_.reserve(8 + 256 + kMaxValue);
}

rof::SessionOptions KvClient::session_options(const std::string& tenant) {
    rof::SessionOptions o;
    o.tenant = tenant;
    // Reads only: the programs do the writing; rof-kv race reads the free lists' headers.
    o.regions.push_back({kIndexRegion, 1});
    o.regions.push_back({kHeapRegion, 1});
    o.max_transfer = 8 + kMaxValue;
    return o;
}

bool KvClient::encode(std::string_view key, std::uint32_t flags, std::string_view value) {
    if (key.empty() || key.size() > kMaxKey || value.size() > kMaxValue)
        return false;
    const std::size_t padded = (key.size() + 7) & ~std::size_t{7};
    args_.assign(8 + padded + value.size(), std::byte{0});
    put32(args_.data(), static_cast<std::uint32_t>(key.size()));
    put32(args_.data() + 4, flags);
    std::memcpy(args_.data() + 8, key.data(), key.size());
    if (!value.empty())
        std::memcpy(args_.data() + 8 + padded, value.data(), value.size());
    return true;
}

Status KvClient::call(std::uint64_t tag, std::span<std::byte> resp, std::size_t* len) {
    const rof::InvokeResult r = s_.invoke(tag, args_, resp);
    if (len)
        *len = r.len;
    if (r.prog_status > static_cast<std::uint32_t>(Status::too_big))
        throw rof::Error(rof::Code::internal,
                         "kvstore: program status " + std::to_string(r.prog_status));
    return static_cast<Status>(r.prog_status);
}

Status KvClient::get(std::string_view key, std::string& value, std::uint32_t* flags) {
    if (!encode(key, 0, {}))
        return Status::too_big;
    std::size_t len = 0;
    const Status st = call(get_, resp_, &len);
    if (st != Status::ok)
        return st;
    const std::uint32_t vlen = get32(resp_.data() + 4);
    if (len < 8 || vlen > kMaxValue || len != 8 + vlen)
        throw rof::Error(rof::Code::internal, "kvstore: kv-get answered a malformed response");
    if (flags)
        *flags = get32(resp_.data());
    value.assign(reinterpret_cast<const char*>(resp_.data()) + 8, vlen);
    return st;
}

Status KvClient::set(std::string_view key, std::string_view value, std::uint32_t flags) {
    if (!encode(key, flags, value))
        return Status::too_big;
    return call(put_, {}, nullptr);
}

Status KvClient::del(std::string_view key) {
    if (!encode(key, 0, {}))
        return Status::too_big;
    return call(del_, {}, nullptr);
}

}  // namespace rofkv
