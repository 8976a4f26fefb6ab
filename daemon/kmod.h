// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>
#include <string>
#include <system_error>
#include <vector>

#include "unique_fd.h"

namespace rofd {

// An ioctl or open on /dev/rof failed.  what() names the device, the
// command and the reason, e.g.
// "/dev/rof: ROF_IOC_LIST_DEVICES: Invalid argument"; code() is the errno.
class KmodError : public std::system_error {
  public:
    KmodError(int err, const std::string& what)
        : std::system_error(err, std::generic_category(), what) {}
};

struct ModuleVersion {
    std::uint32_t abi_major = 0;
    std::uint32_t abi_minor = 0;
    std::string version;
};

struct PortInfo {
    std::uint32_t port_num = 0;
    std::uint32_t state = 0;  // enum rof_port_state
    std::uint32_t active_mtu = 0;
};

struct DeviceInfo {
    std::string name;
    std::uint64_t node_guid = 0;
    std::uint32_t index = 0;
    std::uint32_t num_ports = 0;  // may exceed ports.size()
    std::vector<PortInfo> ports;
};

// The open /dev/rof.  Each call is one ioctl on a shared fd; the module
// serialises what needs it, so one Kmod serves all gRPC threads.
class Kmod {
  public:
    // Throws KmodError("cannot open PATH") when the device cannot be opened.
    explicit Kmod(std::string path);

    const std::string& path() const noexcept { return path_; }

    ModuleVersion version() const;

    // Every device the module tracks, sized with a capacity-0 call first and
    // retried while devices appear between the two calls.
    std::vector<DeviceInfo> list_devices() const;

  private:
    void ioctl_or_throw(unsigned long cmd, const char* name, void* arg) const;

    std::string path_;
    UniqueFd fd_;
};

}  // namespace rofd
