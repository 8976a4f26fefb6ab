// SPDX-License-Identifier: MIT
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "unique_fd.h"

namespace rofd {

// Who is at the other end of a unix-socket connection (SO_PEERCRED, taken
// when the connection was accepted).
struct PeerCred {
    pid_t pid = 0;
    uid_t uid = 0;
    gid_t gid = 0;
};

struct Connection {
    UniqueFd fd;
    PeerCred cred;
};

// rofd's listening unix socket.  rofd accepts connections itself, rather
// than letting gRPC listen, because only the accepting side can read
// SO_PEERCRED; the accepted fds are then handed to gRPC.
class UnixListener {
  public:
    // Creates the socket at @path: makes the parent directory (0755) if
    // missing, refuses a path where a daemon still answers, removes a stale
    // socket, binds with mode 0660.  Throws std::system_error naming the
    // path and the reason.
    static UnixListener bind(const std::string& path);

    // Adopts a listening socket passed by systemd socket activation; the
    // socket file belongs to systemd and is left alone on exit.
    static UnixListener adopt(int fd, std::string description);

    UnixListener(UnixListener&& other) noexcept;
    UnixListener& operator=(UnixListener&&) = delete;
    ~UnixListener();

    int fd() const noexcept { return fd_.get(); }
    const std::string& description() const noexcept { return description_; }

    // Non-blocking: std::nullopt when no connection is pending or the
    // client already went away.  Throws std::system_error when accept(2)
    // fails for a reason that is not about one connection.
    std::optional<Connection> accept() const;

  private:
    UnixListener(UniqueFd fd, std::string description, std::string owned_path, ino_t ino,
                 dev_t dev);

    UniqueFd fd_;
    std::string description_;
    std::string owned_path_;  // unlinked on destruction when non-empty
    ino_t ino_ = 0;
    dev_t dev_ = 0;
};

// The connections each uid holds open on the unix socket, so that one
// caller cannot take every descriptor rofd has (limits.connections_per_uid).
// gRPC owns an accepted fd and closes it without telling anyone, so a
// connection is remembered by its fd number and its socket's inode, and
// counted while that number still names that socket (fstat): a closed fd
// fails, a number reused for another connection names another inode.
// Single-threaded: the accept handler's.
class PeerConnections {
  public:
    // Counts @conn against its uid and returns true; or returns false,
    // counting nothing, when the uid holds @limit open already.  uid 0 is
    // not limited (it could raise the limit anyway) and not counted.
    bool admit(const Connection& conn, std::uint32_t limit);
    // Connections @uid holds open now.
    std::size_t open(uid_t uid);

  private:
    struct Open {
        int fd;
        dev_t dev;
        ino_t ino;
    };
    std::vector<Open>& prune(uid_t uid);

    std::unordered_map<uid_t, std::vector<Open>> by_uid_;
};

}  // namespace rofd
