// SPDX-License-Identifier: MIT
// The Module contract (module_contract.h) against the FakeModule: each case
// on a module of its own.  The VM test kmod-contract runs the same cases
// against rof.ko.
#include <gtest/gtest.h>

#include <string>

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

}  // namespace
