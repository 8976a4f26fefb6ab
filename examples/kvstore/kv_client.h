// SPDX-License-Identifier: MIT
// rofkv::KvClient: GET, SET and DELETE of the kvstore (examples/kvstore/README.md) by offload:
// each is one INVOKE of kv-get, kv-put or kv-del (programs/) on a session of the kvstore's
// tenant, or several for a SET of a value longer than one INVOKE of kv-put carries (1000 bytes
// of args).  kv-get answers up to its CHUNK bytes of a value per call: a store of values of up
// to 4096 bytes (rof-kvstore's default --max-value) answers any value whole in one response of
// up to 4112, for which the tenant's sessions need 8 KiB messages (its policy's [sessions]
// message_bytes = 8192; KvClient refuses a smaller session); a store of larger values has a
// CHUNK of up to 32768 and needs up to 64 KiB messages (kv_layout.h, Geometry::msg_size), and a
// GET of a longer value takes a call per CHUNK.  Each response carries the value's length and
// entry word, so a reader of chunks (get_chunked below, which starts again from offset 0 when
// the value changed between chunks) reads any value whole.
// Shared by rof-kvstore (its TCP front end), rof-kv and rof-kvload.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "rof/session.h"

namespace rofkv {

// kMaxValue: the largest value of any store (rof-kvstore --max-value at most; a store's own is
// smaller or equal, and kv-put answers too_big past it).
inline constexpr std::size_t kMaxKey = 250, kMaxValue = 65536;

// The programs' statuses, in their order (programs/kv-*.rofs).
enum class Status { ok, not_found, full, busy, too_big };  // busy: retries spent under contention
const char* status_name(Status s);

// ---- a GET in chunks (README.md, "A GET in chunks") ----------------------------------------
// kv-get's response: u32 flags, u32 vlen, u64 the entry word it copied under, then
// min(vlen - voff, CHUNK) bytes of the value from the voff asked for.
inline constexpr std::size_t kGetHeader = 16;
// The least session message size KvClient takes: kv-get's response for a store of 4096-byte
// values (kGetHeader + 4096 bytes; an INVOKE answers at most msg_size - 32, ROF_INVOKE_RESP).
inline constexpr std::uint32_t kMsgSize = 8192;
// How many times a GET starts (the first time included) before it answers busy: the value kept
// changing.  Each start reads at most vlen / chunk + 1 chunks.
inline constexpr unsigned kGetAttempts = 64;

// One kv-get INVOKE's answer: its status and its response (valid until the next fetch).
struct GetReply {
    Status status;
    std::span<const std::byte> resp;
};

// Reads one value with @fetch(voff), one kv-get INVOKE at value offset voff, from offset 0 until
// it has vlen bytes, each answer min(vlen - voff, @chunk) bytes of it; @chunk 0: the store's
// CHUNK, as the first answer shows it (the bytes it carried, when fewer than vlen; a first answer
// of the whole value needs no more).  Every chunk must come from
// the one value the first chunk came from: the value a published block holds never changes, and a
// block's entry word {block, tag, version} changes with every SET or DEL of the key.  So the GET
// starts again from offset 0, all it read dropped, when a later chunk says the value is not the
// first chunk's:
//   - its entry word differs (the key was set again, whatever the new length);
//   - status too_big: voff is past the end of the value now there (it was set shorter);
//   - status not_found: the key was deleted;
//   - status busy: kv-get itself saw the entry change under 8 copies in a row.
// A first chunk answering busy starts again too.  After kGetAttempts starts: busy.  On ok,
// @value is one whole value (and *flags its flags); on any other status @value is empty.  A
// response the program cannot give (short, or vlen changing under one entry word) throws
// rof::Error(internal).  @restarts, if given, is increased by the number of starts after the
// first.
Status get_chunked(const std::function<GetReply(std::uint32_t voff)>& fetch, std::string& value,
                   std::uint32_t* flags = nullptr, std::uint64_t* restarts = nullptr,
                   std::size_t chunk = 0);

// The regions of the kvstore, as rof-kvstore creates them and the programs bind them.
inline constexpr const char* kIndexRegion = "kv_index";
inline constexpr const char* kHeapRegion = "kv_heap";

class KvClient {
  public:
    // s: a session of the kvstore's tenant, granted the kvstore's regions.  Finds
    // kv-get/kv-put/kv-del by name once, here (Session::program_tag), and invokes them by tag.
    // Throws rof::Error(failed_precondition) when the session's messages are smaller than
    // kMsgSize (the tenant's policy lacks [sessions] message_bytes = 8192).  On a store whose
    // kv-get answers more than the session's messages carry, every GET throws rof::Error
    // (failed_precondition, ROF_ST_MSG_SIZE: the store's Geometry::msg_size is larger).
    explicit KvClient(rof::Session& s);
    // The whole value of @key, by get_chunked: ok, not_found, busy (the value changed under
    // kGetAttempts starts in a row), or too_big (@key empty or over kMaxKey).
    Status get(std::string_view key, std::string& value, std::uint32_t* flags = nullptr);
    Status set(std::string_view key, std::string_view value, std::uint32_t flags = 0);
    Status del(std::string_view key);
    // The rof::SessionOptions a client needs (the regions, by name, with the access it uses).
    static rof::SessionOptions session_options(const std::string& tenant = "");
    // How many times this client's GETs started again because the value changed between chunks.
    std::uint64_t get_restarts() const { return get_restarts_; }

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
    std::vector<std::byte> resp_;  // the session's largest response (msg_size - 32)
    std::uint64_t get_restarts_ = 0;
};

}  // namespace rofkv
