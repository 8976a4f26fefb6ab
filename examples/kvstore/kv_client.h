// SPDX-License-Identifier: MIT
// rofkv::KvClient: GET, SET and DELETE of the kvstore (examples/kvstore/README.md) by offload:
// each is one INVOKE of kv-get, kv-put or kv-del (programs/) on a session of the kvstore's
// tenant, or several for a value longer than one INVOKE carries (1000 bytes of args, 992 of
// response): kv-put takes the value in chunks, kv-get returns it in chunks with the entry word,
// and a GET whose entry word changed between chunks starts again.  Shared by rof-kvstore (its TCP
// front end), rof-kv and rof-kvload.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "rof/session.h"

namespace rofkv {

inline constexpr std::size_t kMaxKey = 250, kMaxValue = 4096;

// The programs' statuses, in their order (programs/kv-*.rofs).
enum class Status { ok, not_found, full, busy, too_big };  // busy: retries spent under contention
const char* status_name(Status s);

// The regions of the kvstore, as rof-kvstore creates them and the programs bind them.
inline constexpr const char* kIndexRegion = "kv_index";
inline constexpr const char* kHeapRegion = "kv_heap";

class KvClient {
  public:
    // s: a session of the kvstore's tenant, granted the kvstore's regions, with the programs
    // learned (rof::Session::open does learn_programs()).  Finds kv-get/kv-put/kv-del by name.
    explicit KvClient(rof::Session& s);
    Status get(std::string_view key, std::string& value, std::uint32_t* flags = nullptr);
    Status set(std::string_view key, std::string_view value, std::uint32_t flags = 0);
    Status del(std::string_view key);
    // The rof::SessionOptions a client needs (the regions, by name, with the rights it uses).
    static rof::SessionOptions session_options(const std::string& tenant = "");

  private:
    Status call(std::uint64_t tag, std::span<std::byte> resp, std::size_t* len);
    // kv-get/kv-del's args: u32 klen, u32 voff (0 for del), the key zero-padded to 8.
    bool encode_key(std::string_view key, std::uint32_t voff);
    // kv-put's: u32 klen, u32 flags, u32 vlen, u32 voff, the padded key, @chunk.
    void encode_put(std::string_view key, std::uint32_t flags, std::uint32_t vlen,
                    std::uint32_t voff, std::string_view chunk);

    rof::Session& s_;
    std::uint64_t get_, put_, del_;
    std::vector<std::byte> args_;
    std::array<std::byte, 992> resp_{};  // an INVOKE response at most
};

}  // namespace rofkv
