// SPDX-License-Identifier: MIT
#include "peers.h"

#include <charconv>

namespace rofd {

void PeerTable::add(int fd, const PeerCred& cred) {
    std::lock_guard lock(mu_);
    by_fd_[fd] = cred;
}

std::optional<PeerCred> PeerTable::find(std::string_view peer) const {
    constexpr std::string_view prefix = "fd:";
    int fd = -1;

    if (!peer.starts_with(prefix)) {
        return std::nullopt;
    }
    peer.remove_prefix(prefix.size());
    const auto [end, ec] = std::from_chars(peer.data(), peer.data() + peer.size(), fd);
    if (ec != std::errc() || end != peer.data() + peer.size()) {
        return std::nullopt;
    }

    std::lock_guard lock(mu_);
    const auto it = by_fd_.find(fd);
    if (it == by_fd_.end()) {
        return std::nullopt;
    }
    return it->second;
}

}  // namespace rofd
