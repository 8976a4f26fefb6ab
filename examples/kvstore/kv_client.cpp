// SPDX-License-Identifier: MIT
#include "kv_client.h"

#include <algorithm>
#include <cstring>

namespace rofkv {

namespace {

void put32(std::byte* p, std::uint32_t v) {
    for (int i = 0; i < 4; i++) {
        p[i] = static_cast<std::byte>(v >> (8 * i));
    }
}

std::uint32_t get32(const std::byte* p) {
    std::uint32_t v = 0;
    for (int i = 0; i < 4; i++) {
        v |= static_cast<std::uint32_t>(p[i]) << (8 * i);
    }
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

namespace {
constexpr std::size_t kArgsMax = 1000;  // kv-put's .args maximum

rof::Session& big_enough(rof::Session& s) {
    if (s.msg_size() < kMsgSize) {
        throw rof::Error(rof::Code::failed_precondition,
                         "kvstore: the session's messages are " + std::to_string(s.msg_size()) +
                             " bytes, kv-get answers up to " + std::to_string(kGetHeader + 4096) +
                             " or more: the tenant's policy needs [sessions] message_bytes = " +
                             std::to_string(kMsgSize) + " or more");
    }
    return s;
}
}  // namespace

KvClient::KvClient(rof::Session& s)
    : s_(big_enough(s)),
      get_(s.program_tag("kv-get")),
      put_(s.program_tag("kv-put")),
      del_(s.program_tag("kv-del")),
      resp_(s.msg_size() - 32) {
    args_.reserve(kArgsMax);  // kv-put's, the longest args
}

rof::SessionOptions KvClient::session_options(const std::string& tenant) {
    rof::SessionOptions o;
    o.tenant = tenant;
    // No region: the programs bind the regions; the client only invokes them.  (Granting the
    // heap would also need a device that registers it whole: rxe maps 2 MiB at most.)
    return o;
}

bool KvClient::encode_key(std::string_view key, std::uint32_t voff) {
    if (key.empty() || key.size() > kMaxKey) {
        return false;
    }
    const std::size_t padded = (key.size() + 7) & ~std::size_t{7};
    args_.assign(8 + padded, std::byte{0});
    put32(args_.data(), static_cast<std::uint32_t>(key.size()));
    put32(args_.data() + 4, voff);
    std::memcpy(args_.data() + 8, key.data(), key.size());
    return true;
}

void KvClient::encode_put(std::string_view key, std::uint32_t flags, std::uint32_t vlen,
                          std::uint32_t voff, std::string_view chunk) {
    const std::size_t padded = (key.size() + 7) & ~std::size_t{7};
    args_.assign(16 + padded + chunk.size(), std::byte{0});
    put32(args_.data(), static_cast<std::uint32_t>(key.size()));
    put32(args_.data() + 4, flags);
    put32(args_.data() + 8, vlen);
    put32(args_.data() + 12, voff);
    std::memcpy(args_.data() + 16, key.data(), key.size());
    if (!chunk.empty()) {
        std::memcpy(args_.data() + 16 + padded, chunk.data(), chunk.size());
    }
}

Status KvClient::call(std::uint64_t tag, std::span<std::byte> resp, std::size_t* len) {
    const rof::InvokeResult r = s_.invoke(tag, args_, resp);
    if (len) {
        *len = r.len;
    }
    if (r.prog_status > static_cast<std::uint32_t>(Status::too_big)) {
        throw rof::Error(rof::Code::internal,
                         "kvstore: program status " + std::to_string(r.prog_status));
    }
    return static_cast<Status>(r.prog_status);
}

Status get_chunked(const std::function<GetReply(std::uint32_t voff)>& fetch, std::string& value,
                   std::uint32_t* flags, std::uint64_t* restarts, std::size_t chunk) {
    for (unsigned attempt = 0; attempt < kGetAttempts; attempt++) {
        std::size_t step = chunk;  // 0: as this start's first answer shows it
        if (attempt > 0 && restarts) {
            ++*restarts;
        }
        value.clear();
        std::uint64_t entry = 0;
        std::uint32_t vlen = 0, fl = 0;
        bool first = true, changed = false;
        while (first || value.size() < vlen) {
            const GetReply r = fetch(static_cast<std::uint32_t>(value.size()));
            if (r.status != Status::ok) {
                if (r.status == Status::busy ||
                    (!first && (r.status == Status::not_found || r.status == Status::too_big))) {
                    changed = true;  // the value changed (too_big: voff is past its new end)
                    break;
                }
                if (!first) {
                    throw rof::Error(rof::Code::internal, std::string("kvstore: kv-get answered ") +
                                                              status_name(r.status) +
                                                              " for a later chunk");
                }
                value.clear();
                return r.status;  // not_found, or too_big: a key kv-get refuses
            }
            if (r.resp.size() < kGetHeader) {
                throw rof::Error(rof::Code::internal, "kvstore: kv-get answered a short response");
            }
            const std::uint32_t vl = get32(r.resp.data() + 4);
            const std::size_t got = r.resp.size() - kGetHeader;
            if (first && step == 0) {
                step = got < vl ? got : kMaxValue;  // the whole value: no later chunk
            }
            std::uint64_t e = 0;
            std::memcpy(&e, r.resp.data() + 8, 8);
            if (!first && e != entry) {
                changed = true;  // another value now, of whatever length: start again
                break;
            }
            // Under one entry word the block, so vlen, cannot change.
            if (vl > kMaxValue || (!first && vl != vlen) || step == 0 ||
                got != std::min<std::size_t>(vl - value.size(), step)) {
                throw rof::Error(rof::Code::internal,
                                 "kvstore: kv-get answered a malformed response");
            }
            if (first) {
                first = false;
                entry = e;
                vlen = vl;
                fl = get32(r.resp.data());
            }
            value.append(reinterpret_cast<const char*>(r.resp.data()) + kGetHeader, got);
        }
        if (!changed) {
            if (flags) {
                *flags = fl;
            }
            return Status::ok;
        }
    }
    value.clear();
    return Status::busy;  // the value kept changing
}

Status KvClient::get(std::string_view key, std::string& value, std::uint32_t* flags) {
    if (!encode_key(key, 0)) {
        value.clear();
        return Status::too_big;
    }
    return get_chunked(
        [this](std::uint32_t voff) {
            put32(args_.data() + 4, voff);
            std::size_t len = 0;
            const Status st = call(get_, resp_, &len);
            return GetReply{st,
                            std::span<const std::byte>(resp_.data(), std::min(len, resp_.size()))};
        },
        value, flags, &get_restarts_);
}

Status KvClient::set(std::string_view key, std::string_view value, std::uint32_t flags) {
    if (key.empty() || key.size() > kMaxKey || value.size() > kMaxValue) {
        return Status::too_big;
    }
    const std::size_t padded = (key.size() + 7) & ~std::size_t{7};
    const std::size_t room = kArgsMax - 16 - padded;
    const auto vlen = static_cast<std::uint32_t>(value.size());
    std::size_t off = 0;
    do {
        const std::string_view chunk = value.substr(off, room);
        encode_put(key, flags, vlen, static_cast<std::uint32_t>(off), chunk);
        const Status st = call(put_, {}, nullptr);
        if (st != Status::ok) {
            return st;
        }
        off += chunk.size();
    } while (off < value.size());
    return Status::ok;
}

Status KvClient::del(std::string_view key) {
    if (!encode_key(key, 0)) {
        return Status::too_big;
    }
    return call(del_, {}, nullptr);
}

}  // namespace rofkv
