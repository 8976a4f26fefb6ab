// SPDX-License-Identifier: MIT
#include "kmod.h"

#include <fcntl.h>
#include <sys/ioctl.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "uapi/rof.h"

namespace rofd {
namespace {

// Devices come and go (rdma link add/delete) between the sizing call and
// the filling call; a list that keeps changing this often is a bug.
constexpr int list_attempts = 8;

std::string fixed_string(const char* s, std::size_t max) {
    // The module NUL-terminates, but never trust a fixed array to be.
    return std::string(s, strnlen(s, max));
}

}  // namespace

Kmod::Kmod(std::string path) : path_(std::move(path)) {
    fd_.reset(::open(path_.c_str(), O_RDWR | O_CLOEXEC));
    if (!fd_) {
        throw KmodError(errno, "cannot open " + path_);
    }
}

void Kmod::ioctl_or_throw(unsigned long cmd, const char* name, void* arg) const {
    int ret;

    do {
        ret = ::ioctl(fd_.get(), cmd, arg);
    } while (ret < 0 && errno == EINTR);
    if (ret < 0) {
        throw KmodError(errno, path_ + ": " + name);
    }
}

ModuleVersion Kmod::version() const {
    struct rof_version v {};

    ioctl_or_throw(ROF_IOC_VERSION, "ROF_IOC_VERSION", &v);
    return ModuleVersion{v.abi_major, v.abi_minor,
                         fixed_string(v.module_version, sizeof(v.module_version))};
}

std::vector<DeviceInfo> Kmod::list_devices() const {
    std::vector<rof_device_info> raw;

    for (int attempt = 0;; attempt++) {
        struct rof_list req {};

        req.elems = reinterpret_cast<std::uintptr_t>(raw.data());
        req.capacity = static_cast<std::uint32_t>(raw.size());
        req.elem_size = sizeof(rof_device_info);
        ioctl_or_throw(ROF_IOC_LIST_DEVICES, "ROF_IOC_LIST_DEVICES", &req);
        if (req.count > req.capacity) {
            throw KmodError(EPROTO, path_ + ": ROF_IOC_LIST_DEVICES: count " +
                                        std::to_string(req.count) + " exceeds capacity " +
                                        std::to_string(req.capacity));
        }
        if (req.total <= req.capacity) {
            raw.resize(req.count);
            break;
        }
        if (attempt + 1 == list_attempts) {
            throw KmodError(EAGAIN, path_ +
                                        ": ROF_IOC_LIST_DEVICES: device list kept "
                                        "changing");
        }
        if (req.total > ROF_LIST_MAX) {
            throw KmodError(
                E2BIG, path_ + ": ROF_IOC_LIST_DEVICES: " + std::to_string(req.total) + " devices");
        }
        raw.assign(req.total, rof_device_info{});
    }

    std::vector<DeviceInfo> devices;
    devices.reserve(raw.size());
    for (const auto& r : raw) {
        DeviceInfo d;
        d.name = fixed_string(r.name, sizeof(r.name));
        d.node_guid = r.node_guid;
        d.index = r.index;
        d.num_ports = r.num_ports;
        const auto n = std::min<std::uint32_t>(r.num_ports, ROF_MAX_PORTS);
        for (std::uint32_t i = 0; i < n; i++) {
            d.ports.push_back(
                PortInfo{r.ports[i].port_num, r.ports[i].state, r.ports[i].active_mtu});
        }
        devices.push_back(std::move(d));
    }
    return devices;
}

}  // namespace rofd
