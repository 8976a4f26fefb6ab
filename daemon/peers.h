// SPDX-License-Identifier: MIT
#pragma once

#include <map>
#include <mutex>
#include <optional>
#include <string_view>

#include "listener.h"

namespace rofd {

// The credentials of every connection handed to gRPC, for the handlers.
//
// gRPC names a connection added with AddInsecureChannelFromFd() "fd:N" in
// ServerContext::peer(), so the table is keyed by fd number.  An fd number
// is reused only after gRPC closed the connection, and gRPC keeps the fd
// open while any call on it is in flight, so a handler always finds the
// credentials of its own connection: add() for the new connection
// overwrites the old entry before gRPC sees the fd.
class PeerTable {
  public:
    void add(int fd, const PeerCred& cred);

    // @peer is ServerContext::peer(); std::nullopt for a peer not accepted
    // through the listener (which rofd never does).
    std::optional<PeerCred> find(std::string_view peer) const;

  private:
    mutable std::mutex mu_;
    std::map<int, PeerCred> by_fd_;
};

}  // namespace rofd
