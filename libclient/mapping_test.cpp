// SPDX-License-Identifier: MIT
// rof::RegionMapping without a module: what can fail before the device, and the RAII object.
// Mapping a real region is the kvstore VM test's (selftests/tests/kvstore).
#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "rof/mapping.h"

namespace {

TEST(RegionMapping, EmptyMapsNothing) {
    rof::RegionMapping m;
    EXPECT_EQ(m.data(), nullptr);
    EXPECT_EQ(m.size(), 0u);
    EXPECT_TRUE(m.bytes().empty());
    m.reset();
    rof::RegionMapping n(std::move(m));
    EXPECT_EQ(n.data(), nullptr);
}

TEST(RegionMapping, ABadTokenNamesTheRegion) {
    rof::v1::MapRegionResponse t;
    t.set_token("short");
    try {
        rof::RegionMapping::map(t, "table");
        FAIL() << "a 5-byte token was taken";
    } catch (const rof::Error& e) {
        EXPECT_EQ(e.code(), rof::Code::invalid_argument);
        EXPECT_EQ(std::string(e.what()), "region \"table\": the token is not 16 bytes");
    }
}

TEST(RegionMapping, AMissingDeviceNamesTheRegionAndTheReason) {
    rof::v1::MapRegionResponse t;
    t.set_token(std::string(16, '\1'));
    t.set_device("/nonexistent/rof");
    try {
        rof::RegionMapping::map(t, "table");
        FAIL() << "mapped without a device";
    } catch (const rof::Error& e) {
        EXPECT_EQ(e.code(), rof::Code::unavailable);
        EXPECT_EQ(std::string(e.what()),
                  "region \"table\": open /nonexistent/rof: No such file or directory");
    }
}

TEST(RegionMapping, NotADeviceIsRefusedByTheIoctl) {
    rof::v1::MapRegionResponse t;
    t.set_token(std::string(16, '\1'));
    t.set_device("/dev/null");
    try {
        rof::RegionMapping::map(t, "table");
        FAIL() << "mapped /dev/null";
    } catch (const rof::Error& e) {
        EXPECT_NE(std::string(e.what()).find("region \"table\": ROF_IOC_REGION_MAP: "),
                  std::string::npos)
            << e.what();
    }
}

}  // namespace
