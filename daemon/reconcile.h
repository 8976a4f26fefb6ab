// SPDX-License-Identifier: MIT
// Reconciliation: what rofd must do to make the module hold what policy
// declares and the store recorded, computed as pure logic from the three
// (docs/architecture.md, "Reconciliation").  Objects are matched by name,
// never by module id: ids restart after a module reload.
//
// rofd never destroys what it finds in the module and did not expect: it
// reports it as drift and adopts it where it can (a region or program of
// a known tenant), so a crash between an ioctl and its commit loses
// nothing.  Rows a crash left in "intent" are settled: kept when the
// module has the object, dropped when it has not.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "module.h"
#include "policy.h"
#include "store.h"

namespace rofd {

struct ModuleState {
    std::vector<rof_tenant_info> tenants;
    std::vector<rof_region_info> regions;
    std::vector<rof_freelist_info> freelists;
    std::vector<rof_prog_info> progs;
    // False when the module could not list them: the plan then neither
    // creates, commits nor drops any of them (regions: nor free lists;
    // free lists: it claims none missing), it leaves them unreconciled.
    bool regions_known = true;
    bool freelists_known = true;
    bool progs_known = true;
};

struct StoreState {
    std::vector<StoredTenant> tenants;
    std::vector<StoredRegion> regions;
    std::vector<StoredProgram> programs;
};

struct Plan {
    struct Tenant {
        std::string name;
        std::uint32_t id = 0;  // in the module, or to ask for (0: any)
        bool create = false;
    };
    struct Region {
        std::string tenant;
        std::string name;
        std::uint64_t size = 0;
        std::uint32_t access = 0;
        std::vector<StoredFreeList> freelists;
        bool from_policy = false;
    };
    struct Row {
        std::string tenant;
        std::string name;       // region name
        std::uint64_t tag = 0;  // program tag (programs only)
    };

    std::vector<Tenant> tenants;  // every policy tenant, in order
    struct FreeList {
        std::string tenant;
        std::string region;
        StoredFreeList freelist;
    };

    std::vector<Region> create_regions;  // missing from the module
    // Free lists of an intent row whose region the module has: the call
    // never answered, so nothing can have used their range yet.
    std::vector<FreeList> create_freelists;
    std::vector<StoredProgram> load_programs;  // stored, missing from the module
    std::vector<Row> commit_regions;           // intent rows the module has
    std::vector<Row> drop_regions;             // intent rows the module lacks
    std::vector<Row> commit_programs;
    std::vector<Row> drop_programs;
    std::vector<StoredTenant> store_tenants;  // name -> id rows to write
    // One line per difference found, for the log, the journal and
    // GetStatus.drift, e.g. `tenant "kv": region "table": recreated`.
    std::vector<std::string> drift;
};

Plan plan_reconcile(const rof::policy::Policy& policy, const StoreState& store,
                    const ModuleState& module);

}  // namespace rofd
