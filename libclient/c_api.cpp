// SPDX-License-Identifier: MIT
// librof's C API (rof.h): errors and the control client.  The session half
// is c_api_session.cpp.  Every function catches everything: no C++
// exception crosses into C (c_api_errors.h).
#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "c_api_errors.h"
#include "c_api_handles.h"
#include "c_api_struct.h"
#include "rof.h"
#include "rof/client.h"

using rof::capi::check_sz;
using rof::capi::guard;
using rof::capi::struct_in;
using rof::capi::struct_out;

namespace {

void copy_str(char* dst, std::size_t cap, std::string_view src) {
    const std::size_t n = std::min(src.size(), cap - 1);
    std::memcpy(dst, src.data(), n);
    dst[n] = '\0';
}

std::string str_or_empty(const char* s) {
    return s != nullptr ? std::string(s) : std::string();
}

}  // namespace

extern "C" {

const char* rof_code_name(enum rof_code code) {
    // rof::code_name()'s views are of string literals: NUL-terminated.
    return rof::code_name(static_cast<rof::Code>(code)).data();
}

enum rof_code rof_client_open(const struct rof_client_options* options, rof_client** client,
                              struct rof_error* err) {
    return guard(err, [&] {
        if (client == nullptr) {
            throw rof::Error(rof::Code::invalid_argument, "rof_client_open: client is NULL");
        }
        *client = nullptr;
        rof::ClientOptions o;
        if (options != nullptr) {
            const rof_client_options in = struct_in(options, "rof_client_open: options");
            o.target = str_or_empty(in.target);
            o.tls_ca = str_or_empty(in.tls_ca);
            o.tls_cert = str_or_empty(in.tls_cert);
            o.tls_key = str_or_empty(in.tls_key);
            o.tls_server_name = str_or_empty(in.tls_server_name);
            if (in.deadline_ms != 0) {
                o.deadline = std::chrono::milliseconds(in.deadline_ms);
            }
            o.wait_for_ready = in.fail_fast == 0;
        }
        // The handle is the caller's until rof_client_close().
        *client = std::make_unique<rof_client>(rof_client{rof::Client(std::move(o))}).release();
    });
}

void rof_client_close(rof_client* client) {
    std::unique_ptr<rof_client> owned(client);
}

const char* rof_client_target(const rof_client* client) {
    return client != nullptr ? client->client.target().c_str() : "";
}

enum rof_code rof_client_health(rof_client* client, const char* service, enum rof_health* health,
                                struct rof_error* err) {
    return guard(err, [&] {
        if (client == nullptr || health == nullptr) {
            throw rof::Error(rof::Code::invalid_argument,
                             "rof_client_health: client or health is NULL");
        }
        *health = ROF_HEALTH_UNKNOWN;
        const std::string s = client->client.health(str_or_empty(service));
        if (s == "SERVING") {
            *health = ROF_HEALTH_SERVING;
        } else if (s == "NOT_SERVING") {
            *health = ROF_HEALTH_NOT_SERVING;
        } else if (s == "SERVICE_UNKNOWN") {
            *health = ROF_HEALTH_SERVICE_UNKNOWN;
        }
    });
}

enum rof_code rof_client_status(rof_client* client, struct rof_daemon_status* status,
                                struct rof_error* err) {
    return guard(err, [&] {
        if (client == nullptr || status == nullptr) {
            throw rof::Error(rof::Code::invalid_argument,
                             "rof_client_status: client or status is NULL");
        }
        check_sz(status, "rof_client_status: status", false);
        const rof::v1::GetStatusResponse r = client->client.get_status();
        rof_daemon_status s{};
        copy_str(s.module_version, sizeof(s.module_version), r.module().version());
        s.abi_major = r.module().abi_major();
        s.abi_minor = r.module().abi_minor();
        copy_str(s.daemon_version, sizeof(s.daemon_version), r.daemon().version());
        s.uptime_s = static_cast<std::uint64_t>(r.daemon().uptime().seconds());
        s.policy_generation = r.policy_generation();
        s.devices = static_cast<std::uint32_t>(r.devices_size());
        copy_str(s.caller, sizeof(s.caller), r.caller());
        struct_out(status, s, "rof_client_status: status");
    });
}

enum rof_code rof_program_load(rof_client* client, const char* tenant, const char* name,
                               const char* source, const char* file, uint64_t* tag,
                               struct rof_error* err) {
    return guard(err, [&] {
        if (client == nullptr || name == nullptr || source == nullptr) {
            throw rof::Error(rof::Code::invalid_argument,
                             "rof_program_load: client, name or source is NULL");
        }
        rof::v1::LoadProgramRequest req;
        req.set_tenant(str_or_empty(tenant));
        req.set_name(name);
        req.mutable_source()->set_text(source);
        req.mutable_source()->set_file(file != nullptr ? std::string(file)
                                                       : std::string(name) + ".rofs");
        const rof::v1::Program p = client->client.load_program(req);
        if (tag != nullptr) {
            *tag = p.tag();
        }
    });
}

enum rof_code rof_program_replace(rof_client* client, const char* tenant, const char* name,
                                  const char* source, const char* file, uint64_t* tag,
                                  struct rof_error* err) {
    return guard(err, [&] {
        if (client == nullptr || name == nullptr || source == nullptr) {
            throw rof::Error(rof::Code::invalid_argument,
                             "rof_program_replace: client, name or source is NULL");
        }
        rof::v1::ReplaceProgramRequest req;
        req.set_tenant(str_or_empty(tenant));
        req.set_name(name);
        req.mutable_source()->set_text(source);
        req.mutable_source()->set_file(file != nullptr ? std::string(file)
                                                       : std::string(name) + ".rofs");
        const rof::v1::Program p = client->client.replace_program(req);
        if (tag != nullptr) {
            *tag = p.tag();
        }
    });
}

enum rof_code rof_program_unload(rof_client* client, const char* tenant, const char* name,
                                 struct rof_error* err) {
    return guard(err, [&] {
        if (client == nullptr || name == nullptr) {
            throw rof::Error(rof::Code::invalid_argument,
                             "rof_program_unload: client or name is NULL");
        }
        rof::v1::UnloadProgramRequest req;
        req.set_tenant(str_or_empty(tenant));
        req.set_name(name);
        client->client.unload_program(req);
    });
}

enum rof_code rof_program_tag(rof_client* client, const char* tenant, const char* name,
                              uint64_t* tag, struct rof_error* err) {
    return guard(err, [&] {
        if (client == nullptr || name == nullptr || tag == nullptr) {
            throw rof::Error(rof::Code::invalid_argument,
                             "rof_program_tag: client, name or tag is NULL");
        }
        rof::v1::GetProgramRequest req;
        req.set_tenant(str_or_empty(tenant));
        req.set_name(name);
        *tag = client->client.get_program(req).tag();
    });
}

}  // extern "C"
