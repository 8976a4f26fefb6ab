// SPDX-License-Identifier: MIT
// rof::Client: librof's connection to rofd's control plane.
#pragma once

#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>

#include "rof/status.h"

namespace rof {

inline constexpr const char* default_socket_path = "/run/rof/rofd.sock";

// Why a call failed, coarse enough for a script's exit code.
enum class ErrorKind {
    unreachable,  // no rofd answered on the socket (not running, refused, timed out)
    daemon,       // rofd answered with an error
};

// A failed call.  what() is one line naming the socket or the call and the
// reason, fit to be shown to the user as it is.
class Error : public std::runtime_error {
  public:
    Error(ErrorKind kind, const std::string& what) : std::runtime_error(what), kind_(kind) {}
    ErrorKind kind() const noexcept { return kind_; }

  private:
    ErrorKind kind_;
};

class Client {
  public:
    // @socket_path: rofd's unix socket; empty means default_socket().
    // Connecting is lazy: an unreachable daemon is reported by the first call.
    explicit Client(std::string socket_path = {},
                    std::chrono::milliseconds timeout = std::chrono::seconds(10));
    ~Client();
    Client(Client&&) noexcept;
    Client& operator=(Client&&) noexcept;

    // $ROF_SOCKET if set and non-empty, else default_socket_path.
    static std::string default_socket();

    const std::string& socket_path() const noexcept;

    // rof.v1.Control/GetStatus.  Throws rof::Error.
    Status status();

  private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace rof
