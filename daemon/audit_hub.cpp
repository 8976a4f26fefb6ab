// SPDX-License-Identifier: MIT
#include "audit_hub.h"

namespace rofd {

bool AuditHub::subscribe(Subscriber* s, const std::string& tenant, std::uint32_t max) {
    std::lock_guard lock(mu_);
    std::uint32_t& n = per_tenant_[tenant];
    if (!tenant.empty() && n >= max) {
        return false;
    }
    n++;
    subs_[s] = tenant;
    return true;
}

void AuditHub::unsubscribe(Subscriber* s) {
    std::lock_guard lock(mu_);
    const auto it = subs_.find(s);
    if (it == subs_.end()) {
        return;
    }
    if (--per_tenant_[it->second] == 0) {
        per_tenant_.erase(it->second);
    }
    subs_.erase(it);
}

void AuditHub::publish(const rof::v1::AuditRecord& r) {
    std::lock_guard lock(mu_);
    for (const auto& [s, tenant] : subs_) {
        if (tenant.empty() || tenant == r.tenant()) {
            s->deliver(r);
        }
    }
}

std::size_t AuditHub::streams() const {
    std::lock_guard lock(mu_);
    return subs_.size();
}

}  // namespace rofd
