// SPDX-License-Identifier: MIT
#include "reconcile.h"

#include <fmt/format.h>

#include <map>
#include <set>
#include <tuple>

#include "call.h"
#include "log.h"

namespace rofd {
namespace {

using Key = std::pair<std::string, std::string>;  // (tenant, region)

std::string region_where(const std::string& tenant, const std::string& region) {
    return "tenant " + quoted(tenant) + ": region " + quoted(region);
}

bool same_freelist(const rof_freelist_info& m, const StoredFreeList& f) {
    return m.offset == f.offset && m.block_size == f.block_size && m.count == f.count;
}

std::vector<StoredFreeList> to_stored(const std::vector<rof::policy::FreeListDecl>& decls) {
    std::vector<StoredFreeList> out;
    out.reserve(decls.size());
    for (const auto& d : decls) {
        out.push_back(StoredFreeList{d.block_size, d.offset, d.count});
    }
    return out;
}

}  // namespace

Plan plan_reconcile(const rof::policy::Policy& policy, const StoreState& store,
                    const ModuleState& module) {
    Plan plan;

    // Tenants, by name.
    std::map<std::string, const rof_tenant_info*> mod_tenant;
    std::map<std::uint32_t, std::string> tenant_name;  // module id -> name
    std::set<std::uint32_t> ids_taken;
    for (const auto& t : module.tenants) {
        const std::string name = abi_name(t.name);
        mod_tenant[name] = &t;
        tenant_name[t.id] = name;
        ids_taken.insert(t.id);
    }
    std::map<std::string, std::uint32_t> stored_id;
    for (const auto& t : store.tenants) {
        stored_id[t.name] = t.id;
    }

    for (const auto& t : policy.tenants) {
        Plan::Tenant pt{t.name, 0, false};
        if (const auto it = mod_tenant.find(t.name); it != mod_tenant.end()) {
            pt.id = it->second->id;
            if (stored_id.count(t.name) == 0 || stored_id[t.name] != pt.id) {
                plan.store_tenants.push_back(StoredTenant{t.name, pt.id});
            }
        } else {
            pt.create = true;
            const auto sid = stored_id.find(t.name);
            if (sid != stored_id.end() && ids_taken.count(sid->second) == 0) {
                pt.id = sid->second;  // the id its tickets and clients knew
                ids_taken.insert(pt.id);
            }
            plan.drift.push_back("tenant " + quoted(t.name) +
                                 (sid != stored_id.end() ? ": missing from the module: recreated"
                                                         : ": new in policy: created"));
        }
        plan.tenants.push_back(pt);
    }
    // A tenant rofd made (its state has it) that policy no longer declares
    // is being removed (Manager::sweep_removals()); one rofd never made is
    // not rofd's to destroy.
    for (const auto& [name, info] : mod_tenant) {
        if (policy.find(name) == nullptr) {
            plan.drift.push_back("tenant " + quoted(name) + ": in the module, not in policy: " +
                                 (stored_id.count(name) != 0 ? "being removed" : "left alone"));
        }
    }
    for (const auto& t : store.tenants) {
        if (policy.find(t.name) == nullptr && mod_tenant.count(t.name) == 0) {
            plan.drift.push_back("tenant " + quoted(t.name) +
                                 ": in rofd's state, not in policy: its regions and programs "
                                 "are not recreated, its rows are dropped");
        }
    }

    // Regions, by (tenant name, region name); left as they are when the
    // module could not list them (Manager::reconcile() reports it).
    if (module.regions_known) {
        std::map<Key, const rof_region_info*> mod_region;
        std::map<std::uint32_t, Key> region_key;  // module id -> key
        for (const auto& r : module.regions) {
            const auto tn = tenant_name.find(r.tenant);
            if (tn == tenant_name.end()) {
                continue;  // a region of a tenant the list missed: next time
            }
            Key k{tn->second, abi_name(r.name)};
            mod_region[k] = &r;
            region_key[r.id] = k;
        }
        std::map<Key, std::vector<const rof_freelist_info*>> mod_freelists;
        for (const auto& f : module.freelists) {
            if (const auto it = region_key.find(f.region); it != region_key.end()) {
                mod_freelists[it->second].push_back(&f);
            }
        }
        auto missing_freelists = [&](const Key& k, const std::vector<StoredFreeList>& want) {
            std::vector<StoredFreeList> missing;
            if (!module.freelists_known) {
                return missing;  // not reconciled: nothing claimed missing
            }
            const auto& have = mod_freelists[k];
            for (const auto& f : want) {
                bool found = false;
                for (const auto* m : have) {
                    found = found || same_freelist(*m, f);
                }
                if (!found) {
                    missing.push_back(f);
                }
            }
            return missing;
        };

        std::set<Key> expected;
        for (const auto& t : policy.tenants) {
            const bool tenant_in_module = mod_tenant.count(t.name) != 0;
            for (const auto& r : t.regions) {
                const Key k{t.name, r.name};
                expected.insert(k);
                const auto it = tenant_in_module ? mod_region.find(k) : mod_region.end();
                if (it == mod_region.end()) {
                    plan.create_regions.push_back(Plan::Region{t.name, r.name, r.size, r.access,
                                                               to_stored(r.freelists), true});
                    if (tenant_in_module) {
                        plan.drift.push_back(region_where(t.name, r.name) +
                                             ": declared, missing from the module: created");
                    }
                    continue;
                }
                const rof_region_info& m = *it->second;
                if (m.size != r.size || m.access != r.access) {
                    plan.drift.push_back(fmt::format(
                        "{}: policy declares {} bytes, access {}; the module has {} bytes, "
                        "access {}: kept the module's (delete it to apply the policy)",
                        region_where(t.name, r.name), r.size, r.access, m.size, m.access));
                }
                for (const auto& f : missing_freelists(k, to_stored(r.freelists))) {
                    plan.drift.push_back(fmt::format(
                        "{}: free list at {} ({} x {} bytes) declared, not in the module: "
                        "not created over a region in use",
                        region_where(t.name, r.name), f.offset, f.count, f.block_size));
                }
            }
        }

        for (const auto& r : store.regions) {
            const Key k{r.tenant, r.name};
            if (expected.count(k) != 0) {
                plan.drift.push_back(region_where(r.tenant, r.name) +
                                     ": created by a call and now declared by policy: policy's");
                continue;
            }
            const bool known_tenant = policy.find(r.tenant) != nullptr;
            const auto it = mod_region.find(k);
            if (r.state == RowState::intent) {
                if (it != mod_region.end()) {
                    plan.commit_regions.push_back(Plan::Row{r.tenant, r.name, 0});
                    for (const auto& f : missing_freelists(k, r.freelists)) {
                        plan.create_freelists.push_back(Plan::FreeList{r.tenant, r.name, f});
                    }
                    expected.insert(k);
                } else {
                    plan.drop_regions.push_back(Plan::Row{r.tenant, r.name, 0});
                }
                continue;
            }
            if (!known_tenant) {
                continue;  // reported with its tenant above
            }
            expected.insert(k);
            if (it == mod_region.end()) {
                plan.create_regions.push_back(
                    Plan::Region{r.tenant, r.name, r.size, r.access, r.freelists, false});
                plan.drift.push_back(region_where(r.tenant, r.name) +
                                     ": missing from the module: recreated, contents lost");
            }
        }
        for (const auto& [k, info] : mod_region) {
            // A tenant not in policy is left alone, its regions with it.
            if (expected.count(k) == 0 && policy.find(k.first) != nullptr) {
                plan.drift.push_back(region_where(k.first, k.second) +
                                     ": in the module only: adopted as it is");
            }
        }
    }

    // Programs, by (tenant name, tag); likewise.
    if (module.progs_known) {
        std::set<std::pair<std::string, std::uint64_t>> mod_progs;
        for (const auto& p : module.progs) {
            if (const auto tn = tenant_name.find(p.tenant); tn != tenant_name.end()) {
                mod_progs.insert({tn->second, p.tag});
            }
        }
        std::set<std::pair<std::string, std::uint64_t>> stored_progs;
        for (const auto& p : store.programs) {
            const std::pair<std::string, std::uint64_t> k{p.tenant, p.tag};
            const bool in_module = mod_progs.count(k) != 0;
            stored_progs.insert(k);
            const std::string where = fmt::format("tenant {}: program {} (tag {:x})",
                                                  quoted(p.tenant), quoted(p.name), p.tag);
            if (p.state == RowState::intent) {
                if (in_module) {
                    plan.commit_programs.push_back(Plan::Row{p.tenant, p.name, p.tag});
                } else {
                    plan.drop_programs.push_back(Plan::Row{p.tenant, p.name, p.tag});
                }
            } else if (!in_module && policy.find(p.tenant) != nullptr) {
                plan.load_programs.push_back(p);
                plan.drift.push_back(where + ": missing from the module: reloaded");
            }
        }
        for (const auto& k : mod_progs) {
            if (stored_progs.count(k) == 0) {
                plan.drift.push_back(
                    fmt::format("tenant {}: program tag {:x}: loaded outside rofd: left alone",
                                quoted(k.first), k.second));
            }
        }
    }
    return plan;
}

}  // namespace rofd
