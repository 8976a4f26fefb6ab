// SPDX-License-Identifier: MIT
// The shape of every rof.v1 unary call: who is calling, the control-call
// rate, then the body, on gRPC's thread for a read or on the Manager's
// worker for a state change; every exception becomes a status that names
// the object and the reason.
#pragma once

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <string>
#include <string_view>
#include <utility>

#include "log.h"
#include "manager.h"
#include "status_map.h"
#include "store.h"

namespace rofd {

enum class CallKind { read, write };

// Runs @body(const Principal&) -> grpc::Status and finishes the call.
template <typename Body>
grpc::ServerUnaryReactor* unary(Manager& m, grpc::CallbackServerContext* ctx, const char* method,
                                CallKind kind, Body body) {
    auto* reactor = ctx->DefaultReactor();
    if (!m.ready()) {
        reactor->Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE,
                                     "rofd is not serving yet: reconciling with rof.ko"));
        return reactor;
    }
    Principal p = m.principal(*ctx);
    // A call without a deadline of its own gets rofd's ([limits]
    // default_deadline_ms) for the time it waits for the worker.
    const auto limit = std::chrono::milliseconds(m.view()->policy->daemon.default_deadline_ms);
    const auto queued = std::chrono::steady_clock::now();
    auto run = [&m, ctx, reactor, method, p, limit, queued, body = std::move(body)]() mutable {
        grpc::Status st;
        if (ctx->IsCancelled()) {
            st = grpc::Status(
                grpc::StatusCode::CANCELLED,
                std::string(method) + ": cancelled or past its deadline before it ran");
        } else if (std::chrono::steady_clock::now() - queued > limit) {
            st = grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED,
                              std::string(method) + ": waited longer than " +
                                  std::to_string(limit.count()) + " ms for rofd's worker");
        } else {
            try {
                st = body(p);
            } catch (const CallError& e) {
                st = e.status();
            } catch (const KmodError& e) {
                st = module_status(e, "");
            } catch (const StoreError& e) {
                st = grpc::Status(grpc::StatusCode::INTERNAL, std::string("state: ") + e.what());
            } catch (const std::exception& e) {
                st = grpc::Status(grpc::StatusCode::INTERNAL, e.what());
            }
        }
        if (!st.ok()) {
            log::debug("{} from {}: {}", method, p.describe(), st.error_message());
            if (st.error_code() == grpc::StatusCode::PERMISSION_DENIED ||
                st.error_code() == grpc::StatusCode::UNAUTHENTICATED) {
                m.audit_control(p, method, st, "call");
            }
        }
        reactor->Finish(st);
    };
    try {
        m.charge_control_call(p);
        if (kind == CallKind::write) {
            m.post(std::move(run));
            return reactor;
        }
    } catch (const CallError& e) {
        reactor->Finish(e.status());
        return reactor;
    }
    run();
    return reactor;
}

// Names: 1 .. ROF_NAME_MAX - 1 characters of [A-Za-z0-9._:-].  Throws
// CallError(INVALID_ARGUMENT) naming @field.
void check_name(std::string_view field, const std::string& value);

std::string quoted(std::string_view s);

// `tenant "kv": region "table"`
std::string object_name(std::string_view tenant, std::string_view kind, std::string_view name);

}  // namespace rofd
