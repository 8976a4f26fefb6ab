// SPDX-License-Identifier: MIT
#include "audit_hub.h"

namespace rofd {

std::uint32_t& AuditHub::held(Holder holder, const std::string& tenant) {
    return holder == Holder::admin ? admin_ : per_tenant_[tenant];
}

bool AuditHub::subscribe(Subscriber* s, const std::string& tenant, Holder holder,
                         std::uint32_t max) {
    std::lock_guard lock(mu_);
    std::uint32_t& n = held(holder, tenant);
    if (n >= max) {
        return false;
    }
    n++;
    opened_++;
    subs_[s] = Subscription{tenant, holder};
    return true;
}

void AuditHub::unsubscribe(Subscriber* s) {
    std::lock_guard lock(mu_);
    const auto it = subs_.find(s);
    if (it == subs_.end()) {
        return;
    }
    const Subscription& sub = it->second;
    if (--held(sub.holder, sub.tenant) == 0 && sub.holder == Holder::tenant) {
        per_tenant_.erase(sub.tenant);
    }
    subs_.erase(it);
}

void AuditHub::publish(const rof::v1::AuditRecord& r) {
    std::lock_guard lock(mu_);
    for (const auto& [s, sub] : subs_) {
        if (sub.tenant.empty() || sub.tenant == r.tenant()) {
            s->deliver(r);
        }
    }
}

std::size_t AuditHub::streams() const {
    std::lock_guard lock(mu_);
    return subs_.size();
}

std::uint64_t AuditHub::opened() const {
    std::lock_guard lock(mu_);
    return opened_;
}

}  // namespace rofd
