// SPDX-License-Identifier: MIT
#include <gtest/gtest.h>

#include "status_model.h"

namespace {

TEST(FormatNodeGuid, GroupsOfFourHexDigitsMostSignificantFirst) {
    EXPECT_EQ(rof::format_node_guid(0x505400fffe123456ULL), "5054:00ff:fe12:3456");
}

TEST(FormatNodeGuid, ZeroAndAllOnesKeepTheirWidth) {
    EXPECT_EQ(rof::format_node_guid(0), "0000:0000:0000:0000");
    EXPECT_EQ(rof::format_node_guid(~0ULL), "ffff:ffff:ffff:ffff");
}

TEST(PortStateToString, SpellsEveryStateLikeTheRdmaTool) {
    EXPECT_EQ(rof::to_string(rof::PortState::nop), "NOP");
    EXPECT_EQ(rof::to_string(rof::PortState::down), "DOWN");
    EXPECT_EQ(rof::to_string(rof::PortState::init), "INIT");
    EXPECT_EQ(rof::to_string(rof::PortState::armed), "ARMED");
    EXPECT_EQ(rof::to_string(rof::PortState::active), "ACTIVE");
    EXPECT_EQ(rof::to_string(rof::PortState::active_defer), "ACTIVE_DEFER");
    EXPECT_EQ(rof::to_string(rof::PortState::unknown), "UNKNOWN");
}

TEST(PortStateToString, OutOfRangeValueIsUnknown) {
    EXPECT_EQ(rof::to_string(static_cast<rof::PortState>(42)), "UNKNOWN");
}

}  // namespace
