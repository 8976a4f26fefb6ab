// SPDX-License-Identifier: MIT
#include "listener.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>
#include <utility>

#include "unix_addr.h"

namespace rofd {
namespace {

[[noreturn]] void throw_errno(int err, const std::string& what) {
    throw std::system_error(err, std::generic_category(), what);
}

rof::internal::UnixAddr make_addr(const std::string& path) {
    rof::internal::UnixAddr addr(path);

    if (!addr.ok()) {
        throw_errno(path.empty() ? EINVAL : ENAMETOOLONG, addr.error());
    }
    return addr;
}

void make_parent_dir(const std::string& path) {
    const std::filesystem::path parent = std::filesystem::path(path).parent_path();
    std::error_code ec;

    if (parent.empty() || std::filesystem::is_directory(parent, ec)) {
        return;
    }
    std::filesystem::create_directories(parent, ec);
    if (ec) {
        throw std::system_error(ec, "cannot create directory " + parent.string());
    }
    // create_directories honours the umask; the directory must let clients in.
    if (::chmod(parent.c_str(), 0755) < 0) {
        throw_errno(errno, "chmod 0755 " + parent.string());
    }
}

// A socket file left by a rofd that died is removed; one where a daemon
// still accepts connections is not, so a second rofd cannot hijack it.
void remove_stale(const std::string& path, const rof::internal::UnixAddr& addr) {
    struct stat st {};

    if (::lstat(path.c_str(), &st) < 0) {
        if (errno == ENOENT) {
            return;
        }
        throw_errno(errno, "socket " + path);
    }
    if (!S_ISSOCK(st.st_mode)) {
        throw_errno(EEXIST, "socket " + path + ": exists and is not a socket");
    }

    UniqueFd probe(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!probe) {
        throw_errno(errno, "socket " + path + ": socket()");
    }
    if (addr.connect(probe.get()) == 0) {
        throw_errno(EADDRINUSE, "socket " + path + ": another rofd is listening there");
    }
    if (errno != ECONNREFUSED) {
        throw_errno(errno, "socket " + path + ": probing for a running rofd");
    }
    if (::unlink(path.c_str()) < 0 && errno != ENOENT) {
        throw_errno(errno, "socket " + path + ": removing stale socket");
    }
}

}  // namespace

UnixListener::UnixListener(UniqueFd fd, std::string description, std::string owned_path, ino_t ino,
                           dev_t dev)
    : fd_(std::move(fd)),
      description_(std::move(description)),
      owned_path_(std::move(owned_path)),
      ino_(ino),
      dev_(dev) {}

UnixListener::UnixListener(UnixListener&& other) noexcept
    : fd_(std::move(other.fd_)),
      description_(std::move(other.description_)),
      owned_path_(std::exchange(other.owned_path_, {})),
      ino_(other.ino_),
      dev_(other.dev_) {}

UnixListener UnixListener::bind(const std::string& path) {
    const rof::internal::UnixAddr addr = make_addr(path);

    make_parent_dir(path);
    remove_stale(path, addr);

    UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (!fd) {
        throw_errno(errno, "socket " + path + ": socket()");
    }

    // The socket file is created with the umask's mode; narrowing the umask
    // around bind() means it is never reachable wider than 0660, not even
    // between bind() and chmod().
    const mode_t old_umask = ::umask(0117);
    const int ret = addr.bind(fd.get());
    const int bind_errno = errno;
    ::umask(old_umask);
    if (ret < 0) {
        throw_errno(bind_errno, "socket " + path + ": bind");
    }

    struct stat st {};
    if (::chmod(path.c_str(), 0660) < 0 || ::stat(path.c_str(), &st) < 0) {
        const int err = errno;
        ::unlink(path.c_str());
        throw_errno(err, "socket " + path + ": chmod 0660");
    }
    if (::listen(fd.get(), SOMAXCONN) < 0) {
        const int err = errno;
        ::unlink(path.c_str());
        throw_errno(err, "socket " + path + ": listen");
    }
    return {std::move(fd), path, path, st.st_ino, st.st_dev};
}

UnixListener UnixListener::adopt(int fd, std::string description) {
    UniqueFd owned(fd);
    const int flags = ::fcntl(fd, F_GETFL);

    if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0 ||
        ::fcntl(fd, F_SETFD, FD_CLOEXEC) < 0) {
        throw_errno(errno, description + ": fcntl");
    }
    return {std::move(owned), std::move(description), {}, 0, 0};
}

UnixListener::~UnixListener() {
    struct stat st {};

    if (owned_path_.empty()) {
        return;
    }
    // Only remove the file if it is still the socket this listener created.
    if (::lstat(owned_path_.c_str(), &st) == 0 && st.st_ino == ino_ && st.st_dev == dev_) {
        ::unlink(owned_path_.c_str());
    }
}

std::optional<Connection> UnixListener::accept() const {
    // gRPC's event engine expects non-blocking fds.
    UniqueFd conn(::accept4(fd_.get(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK));

    if (!conn) {
        switch (errno) {
            case EAGAIN:
            case EINTR:
            case ECONNABORTED:
                return std::nullopt;
            default:
                throw_errno(errno, description_ + ": accept");
        }
    }

    ucred cred{};
    socklen_t len = sizeof(cred);
    if (::getsockopt(conn.get(), SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0) {
        throw_errno(errno, description_ + ": SO_PEERCRED");
    }
    return Connection{std::move(conn), PeerCred{cred.pid, cred.uid, cred.gid}};
}

std::vector<PeerConnections::Open>& PeerConnections::prune(uid_t uid) {
    auto& open = by_uid_[uid];
    std::erase_if(open, [](const Open& o) {
        struct stat st {};
        return ::fstat(o.fd, &st) < 0 || st.st_dev != o.dev || st.st_ino != o.ino;
    });
    return open;
}

bool PeerConnections::admit(const Connection& conn, std::uint32_t limit) {
    const uid_t uid = conn.cred.uid;
    struct stat st {};

    if (uid == 0 || ::fstat(conn.fd.get(), &st) < 0) {
        return true;
    }
    auto& open = prune(uid);
    if (open.size() >= limit) {
        return false;
    }
    open.push_back(Open{conn.fd.get(), st.st_dev, st.st_ino});
    // Callers that hold nothing any more are forgotten as others arrive.
    std::erase_if(by_uid_, [](const auto& e) { return e.second.empty(); });
    return true;
}

std::size_t PeerConnections::open(uid_t uid) {
    const std::size_t n = prune(uid).size();
    if (n == 0) {
        by_uid_.erase(uid);
    }
    return n;
}

}  // namespace rofd
