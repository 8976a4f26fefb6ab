// SPDX-License-Identifier: MIT
// The Module contract: the rules of rof.ko (docs/kmod.md) that rofd
// relies on, as one table of checks over a rofd::Module.  The unit tests
// run every case against a FakeModule (module_contract_test.cpp); the VM
// test kmod-contract runs the same cases against Kmod on rof.ko
// (selftests/difftest/module_contract_tool.cpp).  A rule the fake and the
// module disagree on fails one of the two.
//
// The cases use gtest's EXPECT/ASSERT macros.  On the real module they
// share the device with whatever else is there: every name starts with the
// run's prefix, lists are read for the case's own objects only, and each
// case destroys what it made (Scope).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "module.h"

namespace rofd::contract {

// The tenants a case made, destroyed (with force) when it ends.
class Scope {
  public:
    Scope(Module& m, std::string prefix) : m_(m), prefix_(std::move(prefix)) {}
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

    // PREFIX-SUFFIX: a name no other run uses.
    std::string name(const std::string& suffix) const { return prefix_ + "-" + suffix; }
    // A tenant named name(@suffix), destroyed at the end.
    std::uint32_t tenant(const std::string& suffix, std::uint32_t id = 0);
    // An id no tenant has (one made and destroyed).
    std::uint32_t gone_tenant();
    // Remember @id (made by the case itself) for the end.
    void adopt(std::uint32_t id) { made_.push_back(id); }

  private:
    Module& m_;
    std::string prefix_;
    std::vector<std::uint32_t> made_;
};

// Helpers the cases use, for the fake's own tests too.

// The errno @f throws as KmodError, 0 if it returns.
template <typename F>
int errno_of(F&& f) {
    try {
        f();
    } catch (const KmodError& e) {
        return e.code().value();
    }
    return 0;
}

std::uint64_t now_ns();  // CLOCK_REALTIME, as tickets count
TicketKey some_key();    // a valid ticket key
// A prepare of @tenant that expires in a minute, with no grants.
rof_session_prepare prepare_req(std::uint32_t tenant);
void grant(rof_session_prepare& req, std::uint32_t region, std::uint32_t access);
// A load of @tenant's program "prog" with budgets of 100 and @binds.
rof_prog_load load_req(std::uint32_t tenant, std::vector<rof_prog_bind> binds = {});

struct Case {
    const char* name;
    void (*run)(Module& m, Scope& s);
};

// Every case, in a fixed order.
const std::vector<Case>& cases();

}  // namespace rofd::contract
