// SPDX-License-Identifier: MIT
#include <gtest/gtest.h>

#include <sstream>

#include "status.h"

namespace {

rof::Status two_devices() {
    rof::Status s;
    s.module = {"0.1.0", 0, 2};
    s.daemon = {"0.1.0", std::chrono::seconds(192)};
    s.devices.push_back(
        rof::Device{"rxe0", 2, 0x505400fffe123456ULL, 1, {{1, rof::PortState::active, 1024}}});
    s.devices.push_back(rof::Device{"mlx5_0",
                                    7,
                                    0x0002c90300a1b2c3ULL,
                                    6,
                                    {{1, rof::PortState::down, 0},
                                     {2, rof::PortState::active_defer, 4096},
                                     {3, rof::PortState::unknown, 256},
                                     {4, rof::PortState::init, 512}}});
    return s;
}

std::string render(const rof::Status& s, bool json, bool pretty = false) {
    std::ostringstream out, err;
    rofctl::Printer p(out, err, json, pretty);

    rofctl::print_status(p, s);
    p.finish();
    EXPECT_EQ(err.str(), "");
    return out.str();
}

TEST(PrintStatus, TextIsATableOfDevicesAndPorts) {
    EXPECT_EQ(render(two_devices(), false),
              "module  rof.ko 0.1.0, ABI 0.2\n"
              "daemon  rofd 0.1.0, up 3m 12s\n"
              "\n"
              "DEVICE            INDEX  NODE_GUID            PORT  STATE           MTU\n"
              "rxe0                  2  5054:00ff:fe12:3456     1  ACTIVE         1024\n"
              "mlx5_0                7  0002:c903:00a1:b2c3     1  DOWN              -\n"
              "                                                 2  ACTIVE_DEFER   4096\n"
              "                                                 3  UNKNOWN         256\n"
              "                                                 4  INIT            512\n"
              "                                              (2 more ports not reported)\n");
}

TEST(PrintStatus, JsonCarriesTheSameValues) {
    EXPECT_EQ(render(two_devices(), true),
              R"({"module":{"version":"0.1.0","abi_major":0,"abi_minor":2},)"
              R"("daemon":{"version":"0.1.0","uptime_seconds":192},)"
              R"("devices":[)"
              R"({"name":"rxe0","index":2,"node_guid":"5054:00ff:fe12:3456","num_ports":1,)"
              R"("ports":[{"port_num":1,"state":"ACTIVE","active_mtu":1024}]},)"
              R"({"name":"mlx5_0","index":7,"node_guid":"0002:c903:00a1:b2c3","num_ports":6,)"
              R"("ports":[{"port_num":1,"state":"DOWN","active_mtu":0},)"
              R"({"port_num":2,"state":"ACTIVE_DEFER","active_mtu":4096},)"
              R"({"port_num":3,"state":"UNKNOWN","active_mtu":256},)"
              R"({"port_num":4,"state":"INIT","active_mtu":512}]}]})"
              "\n");
}

TEST(PrintStatus, NoDevices) {
    rof::Status s = two_devices();
    s.devices.clear();

    EXPECT_EQ(render(s, false),
              "module  rof.ko 0.1.0, ABI 0.2\n"
              "daemon  rofd 0.1.0, up 3m 12s\n"
              "\n"
              "no RDMA devices\n");
    EXPECT_NE(render(s, true).find(R"("devices":[])"), std::string::npos);
}

TEST(PrintStatus, DeviceWithoutPortsGetsDashes) {
    rof::Status s = two_devices();
    s.devices.resize(1);
    s.devices[0].num_ports = 0;
    s.devices[0].ports.clear();

    EXPECT_NE(render(s, false).find("rxe0                  2  5054:00ff:fe12:3456     -  -"
                                    "                 -\n"),
              std::string::npos)
        << render(s, false);
    EXPECT_NE(render(s, true).find(R"("num_ports":0,"ports":[])"), std::string::npos);
}

}  // namespace
