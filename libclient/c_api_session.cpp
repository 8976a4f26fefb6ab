// SPDX-License-Identifier: MIT
// librof's C API (rof.h): sessions and the data-path verbs, over
// rof::Session.  Success costs no allocation and no exception; a failure
// is caught here and becomes a code (c_api_errors.h).
#include <algorithm>
#include <chrono>
#include <climits>
#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "c_api_errors.h"
#include "c_api_handles.h"
#include "c_api_struct.h"
#include "rof.h"
#include "rof/session.h"

using rof::capi::guard;
using rof::capi::struct_in;
using rof::capi::struct_out;

static_assert(static_cast<int>(rof::Verb::read) == ROF_VERB_READ);
static_assert(static_cast<int>(rof::Verb::write) == ROF_VERB_WRITE);
static_assert(static_cast<int>(rof::Verb::cas) == ROF_VERB_CAS);
static_assert(static_cast<int>(rof::Verb::faa) == ROF_VERB_FAA);
static_assert(static_cast<int>(rof::Verb::invoke) == ROF_VERB_INVOKE);
static_assert(static_cast<int>(rof::Verb::nop) == ROF_VERB_NOP);

namespace {

[[noreturn]] void invalid(const char* message) {
    throw rof::Error(rof::Code::invalid_argument, message);
}

// @s's session, or invalid_argument naming @fn.
rof::Session& live(rof_session* s, const char* fn) {
    if (s == nullptr) {
        throw rof::Error(rof::Code::invalid_argument, std::string(fn) + ": session is NULL");
    }
    return s->session;
}

std::string_view region_name(const char* region, const char* fn) {
    if (region == nullptr) {
        throw rof::Error(rof::Code::invalid_argument, std::string(fn) + ": region is NULL");
    }
    return region;
}

std::span<std::byte> out_bytes(void* buf, std::size_t len, const char* fn) {
    if (buf == nullptr && len != 0) {
        throw rof::Error(rof::Code::invalid_argument, std::string(fn) + ": buffer is NULL");
    }
    return {static_cast<std::byte*>(buf), len};
}

std::span<const std::byte> in_bytes(const void* buf, std::size_t len, const char* fn) {
    if (buf == nullptr && len != 0) {
        throw rof::Error(rof::Code::invalid_argument, std::string(fn) + ": buffer is NULL");
    }
    return {static_cast<const std::byte*>(buf), len};
}

void fill(rof_granted_region* out, const rof::GrantedRegion& r, const char* what) {
    rof_granted_region g{};
    g.name = r.name.c_str();
    g.id = r.id;
    g.access = r.access;
    g.size = r.size;
    struct_out(out, g, what);
}

void fill(rof_invoke_reply* out, const rof::InvokeResult& r) {
    out->prog_status = r.prog_status;
    out->insns = r.insns;
    out->len = r.len;
}

std::chrono::milliseconds ms_or(std::uint32_t ms, std::chrono::milliseconds dflt) {
    return ms != 0 ? std::chrono::milliseconds(ms) : dflt;
}

}  // namespace

extern "C" {

enum rof_code rof_session_open(rof_client* client, const struct rof_session_options* options,
                               rof_session** session, struct rof_error* err) {
    return guard(err, [&] {
        if (session == nullptr) {
            invalid("rof_session_open: session is NULL");
        }
        *session = nullptr;
        if (client == nullptr || options == nullptr) {
            invalid("rof_session_open: client or options is NULL");
        }
        const rof_session_options in = struct_in(options, "rof_session_open: options");
        if (in.nregions != 0 && in.regions == nullptr) {
            invalid("rof_session_open: nregions is not 0 but regions is NULL");
        }
        if (in.flags & ~ROF_SESSION_BUSY_POLL) {
            invalid("rof_session_open: unknown flags");
        }
        rof::SessionOptions o;
        if (in.tenant != nullptr) {
            o.tenant = in.tenant;
        }
        for (std::size_t i = 0; i < in.nregions; i++) {
            const rof_region_request& r = in.regions[i];
            if (r.name == nullptr) {
                throw rof::Error(
                    rof::Code::invalid_argument,
                    "rof_session_open: regions[" + std::to_string(i) + "].name is NULL");
            }
            o.regions.push_back(rof::SessionRegionRequest{r.name, r.access});
        }
        if (in.address != nullptr) {
            o.address = in.address;
        }
        o.idle_timeout_ms = in.idle_timeout_ms;
        if (in.max_transfer != 0) {
            o.max_transfer = in.max_transfer;
        }
        if (in.depth != 0) {
            o.depth = in.depth;
        }
        o.connect_timeout = ms_or(in.connect_timeout_ms, o.connect_timeout);
        o.op_timeout = ms_or(in.op_timeout_ms, o.op_timeout);
        o.busy_poll = (in.flags & ROF_SESSION_BUSY_POLL) != 0;
        // The handle is the caller's until rof_session_close().
        *session = std::make_unique<rof_session>(
                       rof_session{rof::Session::open(client->client, o), {}, {}})
                       .release();
    });
}

void rof_session_close(rof_session* session) {
    std::unique_ptr<rof_session> owned(session);
}

uint32_t rof_session_id(const rof_session* session) {
    return session != nullptr ? session->session.id() : 0;
}

uint32_t rof_session_credits(const rof_session* session) {
    return session != nullptr ? session->session.credits() : 0;
}
uint32_t rof_session_msg_size(const rof_session* session) {
    return session != nullptr ? session->session.msg_size() : 0;
}

const char* rof_session_peer(const rof_session* session) {
    return session != nullptr ? session->session.peer().c_str() : "";
}

size_t rof_session_region_count(const rof_session* session) {
    return session != nullptr ? session->session.regions().size() : 0;
}

enum rof_code rof_session_region(const rof_session* session, size_t index,
                                 struct rof_granted_region* region, struct rof_error* err) {
    return guard(err, [&] {
        if (session == nullptr || region == nullptr) {
            invalid("rof_session_region: session or region is NULL");
        }
        const auto& regions = session->session.regions();
        if (index >= regions.size()) {
            throw rof::Error(rof::Code::out_of_range,
                             "rof_session_region: index " + std::to_string(index) +
                                 " out of range: the session has " +
                                 std::to_string(regions.size()) + " regions");
        }
        fill(region, regions[index], "rof_session_region: region");
    });
}

enum rof_code rof_session_region_find(const rof_session* session, const char* name,
                                      struct rof_granted_region* region, struct rof_error* err) {
    return guard(err, [&] {
        if (session == nullptr || name == nullptr || region == nullptr) {
            invalid("rof_session_region_find: session, name or region is NULL");
        }
        for (const auto& r : session->session.regions()) {
            if (r.name == name) {
                fill(region, r, "rof_session_region_find: region");
                return;
            }
        }
        throw rof::Error(rof::Code::not_found, "region \"" + std::string(name) +
                                                   "\" is not granted to session " +
                                                   std::to_string(session->session.id()));
    });
}

enum rof_code rof_session_program_tag(const rof_session* session, const char* name, uint64_t* tag,
                                      struct rof_error* err) {
    return guard(err, [&] {
        if (session == nullptr || name == nullptr || tag == nullptr) {
            invalid("rof_session_program_tag: session, name or tag is NULL");
        }
        *tag = session->session.program_tag(name);
    });
}

enum rof_code rof_session_learn_programs(rof_session* session, rof_client* client,
                                         struct rof_error* err) {
    return guard(err, [&] {
        if (client == nullptr) {
            invalid("rof_session_learn_programs: client is NULL");
        }
        live(session, "rof_session_learn_programs").learn_programs(client->client);
    });
}

enum rof_code rof_read(rof_session* session, const char* region, uint64_t offset, void* buf,
                       size_t len, struct rof_error* err) {
    return guard(err, [&] {
        live(session, "rof_read")
            .read(region_name(region, "rof_read"), offset, out_bytes(buf, len, "rof_read"));
    });
}

enum rof_code rof_write(rof_session* session, const char* region, uint64_t offset, const void* buf,
                        size_t len, struct rof_error* err) {
    return guard(err, [&] {
        live(session, "rof_write")
            .write(region_name(region, "rof_write"), offset, in_bytes(buf, len, "rof_write"));
    });
}

enum rof_code rof_cas(rof_session* session, const char* region, uint64_t offset, uint64_t expected,
                      uint64_t desired, uint64_t* old, struct rof_error* err) {
    return guard(err, [&] {
        const std::uint64_t v =
            live(session, "rof_cas").cas(region_name(region, "rof_cas"), offset, expected, desired);
        if (old != nullptr) {
            *old = v;
        }
    });
}

enum rof_code rof_faa(rof_session* session, const char* region, uint64_t offset, uint64_t add,
                      uint64_t* old, struct rof_error* err) {
    return guard(err, [&] {
        const std::uint64_t v =
            live(session, "rof_faa").faa(region_name(region, "rof_faa"), offset, add);
        if (old != nullptr) {
            *old = v;
        }
    });
}

enum rof_code rof_invoke(rof_session* session, uint64_t tag, const void* args, size_t args_len,
                         void* resp, size_t resp_cap, struct rof_invoke_reply* reply,
                         struct rof_error* err) {
    return guard(err, [&] {
        const rof::InvokeResult r = live(session, "rof_invoke")
                                        .invoke(tag, in_bytes(args, args_len, "rof_invoke"),
                                                out_bytes(resp, resp_cap, "rof_invoke"));
        if (reply != nullptr) {
            fill(reply, r);
        }
    });
}

enum rof_code rof_nop(rof_session* session, struct rof_error* err) {
    return guard(err, [&] { live(session, "rof_nop").nop(); });
}

enum rof_code rof_post_read(rof_session* session, const char* region, uint64_t offset, void* buf,
                            size_t len, uint64_t user, struct rof_error* err) {
    return guard(err, [&] {
        live(session, "rof_post_read")
            .post_read(region_name(region, "rof_post_read"), offset,
                       out_bytes(buf, len, "rof_post_read"), user);
    });
}

enum rof_code rof_post_write(rof_session* session, const char* region, uint64_t offset,
                             const void* buf, size_t len, uint64_t user, struct rof_error* err) {
    return guard(err, [&] {
        live(session, "rof_post_write")
            .post_write(region_name(region, "rof_post_write"), offset,
                        in_bytes(buf, len, "rof_post_write"), user);
    });
}

enum rof_code rof_post_cas(rof_session* session, const char* region, uint64_t offset,
                           uint64_t expected, uint64_t desired, uint64_t user,
                           struct rof_error* err) {
    return guard(err, [&] {
        live(session, "rof_post_cas")
            .post_cas(region_name(region, "rof_post_cas"), offset, expected, desired, user);
    });
}

enum rof_code rof_post_faa(rof_session* session, const char* region, uint64_t offset, uint64_t add,
                           uint64_t user, struct rof_error* err) {
    return guard(err, [&] {
        live(session, "rof_post_faa")
            .post_faa(region_name(region, "rof_post_faa"), offset, add, user);
    });
}

enum rof_code rof_post_invoke(rof_session* session, uint64_t tag, const void* args, size_t args_len,
                              void* resp, size_t resp_cap, uint64_t user, struct rof_error* err) {
    return guard(err, [&] {
        live(session, "rof_post_invoke")
            .post_invoke(tag, in_bytes(args, args_len, "rof_post_invoke"),
                         out_bytes(resp, resp_cap, "rof_post_invoke"), user);
    });
}

enum rof_code rof_flush(rof_session* session, struct rof_error* err) {
    return guard(err, [&] { live(session, "rof_flush").flush(); });
}

int rof_poll(rof_session* session, struct rof_completion* out, size_t n, int timeout_ms,
             struct rof_error* err) {
    int got = 0;
    const rof_code code = guard(err, [&] {
        rof::Session& s = live(session, "rof_poll");
        if (out == nullptr && n != 0) {
            invalid("rof_poll: out is NULL");
        }
        n = std::min<std::size_t>(n, INT_MAX);
        if (session->completions.size() < n) {
            session->completions.resize(n);
        }
        session->errors.clear();
        session->errors.reserve(n);  // no reallocation below: error pointers stay valid
        const std::span<rof::Completion> cs(session->completions.data(), n);
        std::size_t k;
        if (timeout_ms >= 0) {
            k = s.poll(cs, std::chrono::milliseconds(timeout_ms));
        } else {
            // As long as it takes, in slices a deadline computation cannot overflow.
            while ((k = s.poll(cs, std::chrono::hours(1))) == 0 && n != 0) {
            }
        }
        for (std::size_t i = 0; i < k; i++) {
            const rof::Completion& c = cs[i];
            rof_completion& o = out[i];
            o.user = c.user;
            o.verb = static_cast<rof_verb>(c.verb);
            o.code = rof::capi::to_c(c.code);
            if (c.error.empty()) {
                o.error = "";
            } else {
                session->errors.emplace_back(c.error);
                o.error = session->errors.back().c_str();
            }
            o.len = c.len;
            o.value = c.value;
            fill(&o.invoke, c.invoke);
        }
        got = static_cast<int>(k);
    });
    return code == ROF_OK ? got : -static_cast<int>(code);
}

size_t rof_outstanding(const rof_session* session) {
    return session != nullptr ? session->session.outstanding() : 0;
}

int rof_completion_fd(const rof_session* session) {
    return session != nullptr ? session->session.completion_fd() : -1;
}

}  // extern "C"
