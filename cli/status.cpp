// SPDX-License-Identifier: MIT
#include "status.h"

#include "commands.h"
#include "rof/client.h"

namespace rofctl {
namespace {

// Table columns; one place so the header and the rows cannot drift apart.
constexpr std::string_view col_name = "{:<16}  ";
constexpr std::string_view col_index = "{:>5}  ";
constexpr std::string_view col_guid = "{:<19}  ";
constexpr std::string_view col_port = "{:>4}  ";
constexpr std::string_view col_state = "{:<12}  ";
constexpr std::string_view col_mtu = "{:>5}\n";

std::string device_columns_blank() {
    return std::string(format_text(col_name, "").size() + format_text(col_index, "").size() +
                           format_text(col_guid, "").size(),
                       ' ');
}

void print_port(Printer& p, const rof::Port& port) {
    p.open_object();
    p.uint(To::any, "port_num", col_port, port.port_num);
    p.string(To::any, "state", col_state, rof::to_string(port.state));
    if (port.active_mtu != 0) {
        p.uint(To::any, "active_mtu", col_mtu, port.active_mtu);
    } else {
        p.uint(To::json, "active_mtu", {}, 0);
        p.string(To::text, {}, col_mtu, "-");
    }
    p.close_object();
}

void print_device(Printer& p, const rof::Device& d) {
    p.open_object();
    p.string(To::any, "name", col_name, d.name);
    p.uint(To::any, "index", col_index, d.index);
    p.string(To::any, "node_guid", col_guid, rof::format_node_guid(d.node_guid));
    p.uint(To::json, "num_ports", {}, d.num_ports);

    p.open_array("ports");
    if (d.ports.empty()) {
        p.text(format_text(col_port, "-") + format_text(col_state, "-") +
               format_text(col_mtu, "-"));
    }
    for (std::size_t i = 0; i < d.ports.size(); i++) {
        if (i > 0) {
            p.text(device_columns_blank());
        }
        print_port(p, d.ports[i]);
    }
    p.close_array();

    if (d.num_ports > d.ports.size()) {
        p.text(device_columns_blank() + "(" + std::to_string(d.num_ports - d.ports.size()) +
               " more ports not reported)\n");
    }
    p.close_object();
}

rof::PortState from_proto(rof::v1::PortState s) {
    switch (s) {
        case rof::v1::PORT_STATE_NOP:
            return rof::PortState::nop;
        case rof::v1::PORT_STATE_DOWN:
            return rof::PortState::down;
        case rof::v1::PORT_STATE_INIT:
            return rof::PortState::init;
        case rof::v1::PORT_STATE_ARMED:
            return rof::PortState::armed;
        case rof::v1::PORT_STATE_ACTIVE:
            return rof::PortState::active;
        case rof::v1::PORT_STATE_ACTIVE_DEFER:
            return rof::PortState::active_defer;
        default:
            return rof::PortState::unknown;
    }
}

rof::Status from_proto(const rof::v1::GetStatusResponse& r) {
    rof::Status s;

    s.module.version = r.module().version();
    s.module.abi_major = r.module().abi_major();
    s.module.abi_minor = r.module().abi_minor();
    s.daemon.version = r.daemon().version();
    s.daemon.uptime = std::chrono::seconds(r.daemon().uptime().seconds());
    for (const auto& d : r.devices()) {
        rof::Device dev;
        dev.name = d.name();
        dev.index = d.index();
        dev.node_guid = d.node_guid();
        dev.num_ports = d.num_ports();
        for (const auto& p : d.ports()) {
            dev.ports.push_back(rof::Port{p.port_num(), from_proto(p.state()), p.active_mtu()});
        }
        s.devices.push_back(std::move(dev));
    }
    return s;
}

}  // namespace

void print_status(Printer& p, const rof::Status& s) {
    p.open_object("module");
    p.string(To::any, "version", "module  rof.ko {}", s.module.version);
    p.uint(To::any, "abi_major", ", ABI {}", s.module.abi_major);
    p.uint(To::any, "abi_minor", ".{}\n", s.module.abi_minor);
    p.close_object();

    const auto uptime = static_cast<std::uint64_t>(s.daemon.uptime.count());
    p.open_object("daemon");
    p.string(To::any, "version", "daemon  rofd {}", s.daemon.version);
    p.uint(To::json, "uptime_seconds", {}, uptime);
    p.string(To::text, {}, ", up {}\n", format_uptime(uptime));
    p.close_object();

    p.newline();
    if (s.devices.empty()) {
        p.text("no RDMA devices\n");
    } else {
        p.text(format_text(col_name, "DEVICE") + format_text(col_index, "INDEX") +
               format_text(col_guid, "NODE_GUID") + format_text(col_port, "PORT") +
               format_text(col_state, "STATE") + format_text(col_mtu, "MTU"));
    }
    p.open_array("devices");
    for (const rof::Device& d : s.devices) {
        print_device(p, d);
    }
    p.close_array();
}

void add_status_command(CLI::App& app, Handler& selected) {
    auto* cmd = app.add_subcommand("status", "show rof.ko, rofd and the RDMA devices");
    cmd->callback([&selected] {
        selected = [](Context& ctx) {
            rof::ClientOptions options;
            options.target = ctx.socket;
            options.wait_for_ready = false;
            rof::Client client(options);
            print_status(ctx.printer, from_proto(client.get_status()));
            return exit_ok;
        };
    });
}

}  // namespace rofctl
