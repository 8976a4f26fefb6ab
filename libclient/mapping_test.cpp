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

// The rof::Error that mapping @token as region "table" throws.
rof::Error map_error(const rof::v1::CreateRegionTokenResponse& token) {
    try {
        rof::RegionMapping::map(token, "table");
    } catch (const rof::Error& e) {
        return e;
    }
    ADD_FAILURE() << "mapped";
    return rof::Error(rof::Code::ok, "");
}

rof::v1::CreateRegionTokenResponse token(const std::string& bytes, const std::string& device = {}) {
    rof::v1::CreateRegionTokenResponse t;
    t.set_token(bytes);
    t.set_device(device);
    return t;
}

TEST(RegionMapping, ABadTokenNamesTheRegion) {
    const rof::Error e = map_error(token("short"));
    EXPECT_EQ(e.code(), rof::Code::invalid_argument);
    EXPECT_EQ(std::string(e.what()), "region \"table\": the token is not 16 bytes");
}

TEST(RegionMapping, AMissingDeviceNamesTheRegionAndTheReason) {
    const rof::Error e = map_error(token(std::string(16, '\1'), "/nonexistent/rof"));
    EXPECT_EQ(e.code(), rof::Code::unavailable);
    EXPECT_EQ(std::string(e.what()),
              "region \"table\": open /nonexistent/rof: No such file or directory");
}

TEST(RegionMapping, NotADeviceIsRefusedByTheIoctl) {
    const rof::Error e = map_error(token(std::string(16, '\1'), "/dev/null"));
    EXPECT_NE(std::string(e.what()).find("region \"table\": ROF_IOC_REGION_MAP: "),
              std::string::npos)
        << e.what();
}

}  // namespace
