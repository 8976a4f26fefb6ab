// SPDX-License-Identifier: MIT
// rof-module-contract: the Module contract (daemon/module_contract.h)
// against Kmod on rof.ko: the cases the unit tests run against the
// FakeModule, here against the real module (selftests/tests/kmod-contract).
// CAP_SYS_ADMIN; ROF_DEVICE names the device (default /dev/rof).  Every
// object it makes is named ct<pid>-... and destroyed by the case.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <memory>
#include <string>

#include "kmod.h"
#include "module_contract.h"

namespace {

using rofd::contract::Case;

rofd::Kmod& device() {
    static const char* path = std::getenv("ROF_DEVICE");
    static rofd::Kmod k(path != nullptr ? path : ROF_DEVICE_PATH);
    return k;
}

class Contract : public testing::TestWithParam<Case> {};

TEST_P(Contract, RofKoKeepsIt) {
    rofd::contract::Scope s(device(), "ct" + std::to_string(::getpid()));
    GetParam().run(device(), s);
}

INSTANTIATE_TEST_SUITE_P(Module, Contract, testing::ValuesIn(rofd::contract::cases()),
                         [](const testing::TestParamInfo<Case>& info) {
                             return std::string(info.param.name);
                         });

}  // namespace

int main(int argc, char** argv) {
    testing::InitGoogleTest(&argc, argv);
    return RUN_ALL_TESTS();
}
