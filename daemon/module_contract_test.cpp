// SPDX-License-Identifier: MIT
// The Module contract (module_contract.h) against the FakeModule: each case
// on a module of its own.  The VM test kmod-contract runs the same cases
// against rof.ko.
#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "fake_module.h"
#include "module_contract.h"

namespace {

using rofd::contract::Case;

class Contract : public testing::TestWithParam<Case> {};

TEST_P(Contract, FakeModuleKeepsIt) {
    rofd::FakeModule m;
    rofd::contract::Scope s(m, "ct");
    GetParam().run(m, s);
}

INSTANTIATE_TEST_SUITE_P(Module, Contract, testing::ValuesIn(rofd::contract::cases()),
                         [](const testing::TestParamInfo<Case>& info) {
                             return std::string(info.param.name);
                         });

// The cases that look at abi_minor(), on a fake of ABI 0.9 too: what rof.ko
// 0.9 does (kmod-contract runs them on the module that is loaded).
TEST(Contract, AnOlderFakeModuleKeepsTheAbiCases) {
    int ran = 0;
    for (const Case& c : rofd::contract::cases()) {
        if (c.name != std::string_view("AbiMinorIsTheVersions") &&
            c.name != std::string_view("QuotaCarriesInvokeRecords")) {
            continue;
        }
        SCOPED_TRACE(c.name);
        rofd::FakeModule m;
        m.set_abi_minor(9);
        ASSERT_EQ(m.abi_minor(), 9U);
        rofd::contract::Scope s(m, "ct");
        c.run(m, s);
        ran++;
    }
    EXPECT_EQ(ran, 2);
}

}  // namespace
