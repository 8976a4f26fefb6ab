// SPDX-License-Identifier: MIT
// rof.v1.Policy: the policy rofd runs, and its reload.
#include "call.h"
#include "services.h"

namespace rofd {

ServerUnaryReactor* PolicyService::GetPolicy(CallbackServerContext* ctx,
                                             const v1::GetPolicyRequest*,
                                             v1::GetPolicyResponse* resp) {
    return unary(m_, ctx, "GetPolicy", CallKind::read, [this, resp](const Principal& p) {
        if (!p.admin()) {
            return m_.authorize(p, "", Right::read, "the policy");
        }
        const auto v = m_.view();
        resp->set_daemon_file(m_.options().daemon_file);
        for (const auto& t : v->policy->tenants) {
            resp->add_tenant_files(t.file);
            resp->add_tenants(t.name);
        }
        set_time(resp->mutable_loaded_at(), v->loaded_at);
        resp->set_generation(v->generation);
        return grpc::Status::OK;
    });
}

ServerUnaryReactor* PolicyService::ReloadPolicy(CallbackServerContext* ctx,
                                                const v1::ReloadPolicyRequest*,
                                                v1::ReloadPolicyResponse* resp) {
    return unary(m_, ctx, "ReloadPolicy", CallKind::write, [this, resp](const Principal& p) {
        if (!p.admin()) {
            return m_.authorize(p, "", Right::write, "the policy");
        }
        for (const auto& n : m_.reload_policy()) {
            resp->add_notes(n);
        }
        resp->set_generation(m_.view()->generation);
        return grpc::Status::OK;
    });
}

}  // namespace rofd
