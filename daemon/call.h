// SPDX-License-Identifier: MIT
// The shape of every rof.v1 unary call: who is calling, the control-call
// rate, then the body, on gRPC's thread for a read or on the Manager's
// worker for a state change; every exception becomes a status that names
// the object and the reason.
#pragma once

#include <google/protobuf/timestamp.pb.h>
#include <grpcpp/grpcpp.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "log.h"
#include "manager.h"
#include "status_map.h"
#include "store.h"

namespace rofd {

enum class CallKind { read, write };

// Runs @fn(p), turning what it throws into a status: R is grpc::Status or
// std::optional<grpc::Status>.
template <typename R, typename Fn>
R guarded(const Principal& p, Fn& fn) {
    try {
        return fn(p);
    } catch (const CallError& e) {
        return R(e.status());
    } catch (const KmodError& e) {
        return R(module_status(e, ""));
    } catch (const StoreError& e) {
        return R(grpc::Status(grpc::StatusCode::INTERNAL, std::string("state: ") + e.what()));
    } catch (const std::exception& e) {
        return R(grpc::Status(grpc::StatusCode::INTERNAL, e.what()));
    }
}

// Finishes a call with @st, journalling a refusal once: @audited is
// Manager::refusals_audited_on_this_thread() from before the call's code
// ran, and authorize() journals its own.
inline void finish_call(Manager& m, const Principal& p, const char* method,
                        grpc::ServerUnaryReactor* reactor, const grpc::Status& st,
                        std::uint64_t audited) {
    if (!st.ok()) {
        log::debug("{} from {}: {}", method, p.describe(), st.error_message());
        if ((st.error_code() == grpc::StatusCode::PERMISSION_DENIED ||
             st.error_code() == grpc::StatusCode::UNAUTHENTICATED) &&
            Manager::refusals_audited_on_this_thread() == audited) {
            m.audit_control(p, method, st, "call");
        }
    }
    reactor->Finish(st);
}

// No first step (unary()'s default @check).
struct NoCheck {
    std::optional<grpc::Status> operator()(const Principal&) const { return std::nullopt; }
};

// Runs @body(const Principal&) -> grpc::Status and finishes the call.
//
// A write may have a first step, @check(const Principal&) ->
// std::optional<grpc::Status>, which runs on gRPC's thread before the call
// is queued: what needs no worker (authorization, validation, a program's
// verification), so that it never holds up other tenants' state changes.
// A status ends the call there; std::nullopt queues @body.
template <typename Body, typename Check = NoCheck>
grpc::ServerUnaryReactor* unary(Manager& m, grpc::CallbackServerContext* ctx, const char* method,
                                CallKind kind, Body body, Check check = {}) {
    auto* reactor = ctx->DefaultReactor();
    if (!m.ready()) {
        reactor->Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE,
                                     "rofd is not serving yet: reconciling with rof.ko"));
        return reactor;
    }
    Principal p = m.principal(*ctx);
    try {
        m.charge_control_call(p);
    } catch (const CallError& e) {
        reactor->Finish(e.status());
        return reactor;
    }
    if (kind == CallKind::write) {
        // A caller with no role can only be refused: refuse it here, on
        // gRPC's thread, rather than queue it for the worker that every
        // tenant's state changes wait for.
        if (!p.authenticated || p.role == Principal::Role::none) {
            reactor->Finish(m.authorize(p, "", Right::write, method));
            return reactor;
        }
        const std::uint64_t audited = Manager::refusals_audited_on_this_thread();
        if (const auto st = guarded<std::optional<grpc::Status>>(p, check)) {
            finish_call(m, p, method, reactor, *st, audited);
            return reactor;
        }
    }
    // A call without a deadline of its own gets rofd's ([limits]
    // default_deadline_ms) for the time it waits for the worker; one with
    // a deadline waits until that deadline (then IsCancelled()).
    const bool own_deadline = ctx->deadline() != std::chrono::system_clock::time_point::max();
    const auto limit = std::chrono::milliseconds(m.view()->policy->daemon.default_deadline_ms);
    const auto queued = std::chrono::steady_clock::now();
    auto run = [&m, ctx, reactor, method, p, own_deadline, limit, queued,
                body = std::move(body)]() mutable {
        const std::uint64_t audited = Manager::refusals_audited_on_this_thread();
        grpc::Status st;
        if (ctx->IsCancelled()) {
            st = grpc::Status(
                grpc::StatusCode::CANCELLED,
                std::string(method) + ": cancelled or past its deadline before it ran");
        } else if (!own_deadline && std::chrono::steady_clock::now() - queued > limit) {
            st = grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED,
                              std::string(method) + ": waited longer than " +
                                  std::to_string(limit.count()) + " ms for rofd's worker");
        } else {
            st = guarded<grpc::Status>(p, body);
        }
        finish_call(m, p, method, reactor, st, audited);
    };
    if (kind == CallKind::write) {
        try {
            m.post_call(p, m.view()->policy->daemon.queued_calls_per_tenant, std::move(run));
        } catch (const CallError& e) {
            reactor->Finish(e.status());
        }
        return reactor;
    }
    run();
    return reactor;
}

// @t, or @ns since the epoch (CLOCK_REALTIME, as the module's times), as a
// protobuf Timestamp.
void set_time(google::protobuf::Timestamp* out, std::chrono::system_clock::time_point t);
void set_time(google::protobuf::Timestamp* out, std::uint64_t ns);

// Names: rof.h's rule (rof_name_fault()).  Throws CallError(INVALID_ARGUMENT):
// @field, then rof::policy::name_error()'s text, which says the rule.
void check_name(std::string_view field, const std::string& value);

std::string quoted(std::string_view s);
// A std::string argument takes this one, not std::quoted (found by ADL
// wherever <iomanip> is in, as in a unity build).
inline std::string quoted(const std::string& s) {
    return quoted(std::string_view(s));
}

// `tenant "kv": region "table"`
std::string object_name(std::string_view tenant, std::string_view kind, std::string_view name);

}  // namespace rofd
