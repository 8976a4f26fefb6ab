// SPDX-License-Identifier: MIT
// rof.v1.Tenants: the tenants as policy declares them and the module holds
// them, and their destruction once removed from policy.
#include <fmt/format.h>

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "call.h"
#include "services.h"

namespace rofd {

namespace {

void fill_usage(const rof_tenant_info& info, v1::Tenant* out) {
    out->set_id(info.id);
    out->set_dying((info.flags & ROF_TENANT_DYING) != 0);
    auto* u = out->mutable_usage();
    u->set_region_bytes(info.usage.region_bytes);
    u->set_regions(info.usage.regions);
    u->set_sessions(info.usage.sessions);
    u->set_programs(info.usage.programs);
    u->set_freelists(info.usage.freelists);
    const auto& c = info.counters;
    auto* oc = out->mutable_counters();
    oc->set_invocations(c.invocations);
    oc->set_invoke_errors(c.invoke_errors);
    oc->set_completion_errors(c.completion_errors);
    oc->set_bytes(c.bytes);
    oc->set_insns(c.insns);
    oc->set_sessions_opened(c.sessions_opened);
    oc->set_sessions_closed(c.sessions_closed);
    oc->set_sessions_rejected(c.sessions_rejected);
    oc->set_audit_dropped(c.audit_dropped);
}

// A removing tenant: no policy, what the module holds, and its deadline.
void fill_removing(Manager& m, const std::string& name, const Removal& r, v1::Tenant* out) {
    out->set_name(name);
    out->set_state(v1::TENANT_STATE_REMOVING);
    set_time(out->mutable_removal_deadline(), m.wall_time(r.deadline));
    if (r.id == 0) {
        return;
    }
    if (const auto info = m.module().get_tenant(r.id)) {
        fill_usage(*info, out);
    }
}

// "owner/region" of every grant in @p, by the tenant granted it; only those granted to @only
// when it is not empty.
std::map<std::string, std::vector<std::string>, std::less<>> grants_by_grantee(
    const rof::policy::Policy& p, std::string_view only = {}) {
    std::map<std::string, std::vector<std::string>, std::less<>> out;
    for (const auto& owner : p.tenants) {
        for (const auto& g : owner.grants) {
            if (only.empty() || g.to == only) {
                out[g.to].push_back(owner.name + "/" + g.region);
            }
        }
    }
    return out;
}

// @t as the policy declares it, with @granted (its grants_by_grantee() entry, or null when
// it has none) and @info (what the module holds of it, or null when it holds nothing).
void fill_tenant(const rof::policy::Tenant& t, const std::vector<std::string>* granted,
                 const rof_tenant_info* info, v1::Tenant* out) {
    out->set_state(v1::TENANT_STATE_ACTIVE);
    out->set_name(t.name);
    out->set_audit(std::string(rof::policy::audit_level_name(t.audit)));
    out->set_invoke_records(rof::policy::invoke_records_name(t.invoke_records));
    out->mutable_session_rate()->set_ops_per_sec(t.session_rate.ops_per_sec);
    out->mutable_session_rate()->set_bytes_per_sec(t.session_rate.bytes_per_sec);
    out->mutable_tenant_rate()->set_ops_per_sec(t.tenant_rate.ops_per_sec);
    out->mutable_tenant_rate()->set_bytes_per_sec(t.tenant_rate.bytes_per_sec);
    auto* q = out->mutable_quota();
    q->set_region_bytes(t.quota.region_bytes);
    q->set_regions(t.quota.regions);
    q->set_sessions(t.quota.sessions);
    q->set_programs(t.quota.programs);
    q->set_credits(t.quota.credits);
    if (granted != nullptr) {
        for (const auto& g : *granted) {
            out->add_granted_regions(g);
        }
    }
    if (info != nullptr) {
        fill_usage(*info, out);
    }
}

// @t alone: its grants and one GET of what the module holds of it.
void fill_one(Manager& m, const View& v, const rof::policy::Tenant& t, v1::Tenant* out) {
    const auto grants = grants_by_grantee(*v.policy, t.name);
    const auto g = grants.find(t.name);
    std::optional<rof_tenant_info> info;
    if (const auto id = v.tenant_id.find(t.name); id != v.tenant_id.end()) {
        info = m.module().get_tenant(id->second);
    }
    fill_tenant(t, g != grants.end() ? &g->second : nullptr, info ? &*info : nullptr, out);
}

}  // namespace

ServerUnaryReactor* TenantService::ListTenants(CallbackServerContext* ctx,
                                               const v1::ListTenantsRequest*,
                                               v1::ListTenantsResponse* resp) {
    return unary(m_, ctx, "ListTenants", CallKind::read, [this, resp](const Principal& p) {
        if (!p.admin() && p.role != Principal::Role::tenant) {
            return m_.authorize(p, "", Right::read, "tenants");
        }
        const auto v = m_.view();
        if (!p.admin()) {  // a tenant: its own entry, as GetTenant has it
            if (const auto* t = v->tenant(p.tenant)) {
                fill_one(m_, *v, *t, resp->add_tenants());
            }
            return grpc::Status::OK;
        }
        // One walk of the grants and one LIST of the module's tenants for all of them: a
        // policy of 10,000 tenants made this 10,000 walks of every grant and 10,000 GETs.
        const auto grants = grants_by_grantee(*v->policy);
        std::unordered_map<std::uint32_t, rof_tenant_info> held;
        for (const auto& info : m_.module().list_tenants()) {
            held.emplace(info.id, info);
        }
        for (const auto& t : v->policy->tenants) {
            const auto g = grants.find(t.name);
            const auto id = v->tenant_id.find(t.name);
            const auto info = id != v->tenant_id.end() ? held.find(id->second) : held.end();
            fill_tenant(t, g != grants.end() ? &g->second : nullptr,
                        info != held.end() ? &info->second : nullptr, resp->add_tenants());
        }
        for (const auto& [name, r] : v->removing) {
            fill_removing(m_, name, r, resp->add_tenants());
        }
        return grpc::Status::OK;
    });
}

ServerUnaryReactor* TenantService::GetTenant(CallbackServerContext* ctx,
                                             const v1::GetTenantRequest* req, v1::Tenant* resp) {
    return unary(m_, ctx, "GetTenant", CallKind::read, [this, req, resp](const Principal& p) {
        // One view: a reload between the check and the read must not
        // leave us a tenant that is gone.
        const auto v = m_.view();
        if (const auto* r = v->removal(req->name()); r != nullptr && p.admin()) {
            fill_removing(m_, req->name(), *r, resp);
            return grpc::Status::OK;
        }
        const std::string tenant = m_.tenant_of(*v, p, req->name());
        if (auto st = m_.authorize(p, tenant, Right::read, "tenant " + quoted(tenant)); !st.ok()) {
            return st;
        }
        fill_one(m_, *v, *v->tenant(tenant), resp);
        return grpc::Status::OK;
    });
}

// Admin only: a removing tenant's deadline, now + grace_ms (0: destroyed
// now).  A tenant leaves the policy first; this only shortens or
// lengthens the wait for its sessions.
ServerUnaryReactor* TenantService::DestroyTenant(CallbackServerContext* ctx,
                                                 const v1::DestroyTenantRequest* req,
                                                 v1::DestroyTenantResponse* resp) {
    auto check = [this, req](const Principal& p) -> std::optional<grpc::Status> {
        if (!p.admin()) {
            return m_.authorize(p, "", Right::write, "tenant " + quoted(req->name()));
        }
        check_name("name", req->name());
        if (req->grace_ms() < 0 || req->grace_ms() > ROF_REMOVAL_GRACE_MAX_MS) {
            return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                                fmt::format("grace_ms: {} is out of range (0 .. {})",
                                            req->grace_ms(), ROF_REMOVAL_GRACE_MAX_MS));
        }
        return std::nullopt;
    };
    return unary(
        m_, ctx, "DestroyTenant", CallKind::write,
        [this, req, resp](const Principal& p) {
            const auto id =
                Manager::idempotency(p, "DestroyTenant", *req, req->idempotency_key(), "");
            if (auto st = m_.replay(id, resp)) {
                return *st;
            }
            // A retry of a destroy that rofd died in finds the tenant gone
            // (reconciliation drops what the destroy left): that is its
            // answer, not NOT_FOUND.
            const bool resumed = m_.interrupted(id);
            m_.begin(id);
            std::optional<std::chrono::steady_clock::time_point> deadline;
            try {
                deadline =
                    m_.destroy_tenant(req->name(), std::chrono::milliseconds(req->grace_ms()));
            } catch (const CallError& e) {
                if (!resumed || e.code != grpc::StatusCode::NOT_FOUND) {
                    throw;
                }
            }
            resp->set_name(req->name());
            resp->set_destroyed(!deadline);
            if (deadline) {
                resp->set_state(v1::TENANT_STATE_REMOVING);
                set_time(resp->mutable_removal_deadline(), m_.wall_time(*deadline));
            }
            m_.record(id, *resp);
            return grpc::Status::OK;
        },
        check);
}

}  // namespace rofd
