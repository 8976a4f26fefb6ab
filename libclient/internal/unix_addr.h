// SPDX-License-Identifier: MIT
// A unix socket's address, for rofd, librof and their tests: the one place
// that checks a path against sun_path (107 bytes and the NUL).  Header only:
// librof compiles it in (nothing of it is exported).
#pragma once

#include <sys/socket.h>
#include <sys/un.h>

#include <cstring>
#include <string>
#include <string_view>

namespace rof::internal {

class UnixAddr {
  public:
    // error() names @path when it is empty or too long for sun_path.
    explicit UnixAddr(std::string_view path) {
        addr_.sun_family = AF_UNIX;
        if (path.empty()) {
            error_ = "socket path is empty";
        } else if (path.size() >= sizeof(addr_.sun_path)) {
            error_ = "socket " + std::string(path) + ": longer than " +
                     std::to_string(sizeof(addr_.sun_path) - 1) + " bytes";
        } else {
            std::memcpy(addr_.sun_path, path.data(), path.size());
        }
    }

    bool ok() const noexcept { return error_.empty(); }
    const std::string& error() const noexcept { return error_; }
    const sockaddr* get() const noexcept { return reinterpret_cast<const sockaddr*>(&addr_); }
    static constexpr socklen_t size() noexcept { return sizeof(sockaddr_un); }

    // connect(2) and bind(2) of @fd to this address: 0 or -1 with errno.
    int connect(int fd) const noexcept { return ::connect(fd, get(), size()); }
    int bind(int fd) const noexcept { return ::bind(fd, get(), size()); }

  private:
    sockaddr_un addr_{};
    std::string error_;
};

}  // namespace rof::internal
