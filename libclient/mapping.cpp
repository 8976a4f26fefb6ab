// SPDX-License-Identifier: MIT
// rof::RegionMapping (rof/mapping.h).
#include "rof/mapping.h"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "uapi/rof.h"

namespace rof {

namespace {

Error os_error(const std::string& name, const std::string& what, int err) {
    const Code code = err == EACCES || err == EPERM    ? Code::permission_denied
                      : err == ENOENT || err == ENODEV ? Code::unavailable
                      : err == ENOMEM                  ? Code::resource_exhausted
                                                       : Code::internal;
    return Error(code, "region \"" + name + "\": " + what + ": " + std::strerror(err));
}

}  // namespace

RegionMapping RegionMapping::map(Client& client, const std::string& tenant, const std::string& name,
                                 bool writable) {
    v1::CreateRegionTokenRequest req;
    req.set_tenant(tenant);
    req.set_name(name);
    req.set_access(writable ? 3 : 1);
    return map(client.create_region_token(req), name);
}

RegionMapping RegionMapping::map(const v1::CreateRegionTokenResponse& token,
                                 const std::string& name) {
    if (token.token().size() != 16) {
        throw Error(Code::invalid_argument, "region \"" + name + "\": the token is not 16 bytes");
    }
    rof_region_map m{};
    std::memcpy(m.token, token.token().data(), 16);  // little-endian, as the module reads it
    const std::string dev = token.device().empty() ? "/dev/rof" : token.device();
    const int fd = ::open(dev.c_str(), O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        throw os_error(name, "open " + dev, errno);
    }
    if (::ioctl(fd, ROF_IOC_REGION_MAP, &m) < 0) {
        const int err = errno;
        ::close(fd);
        throw os_error(name, "ROF_IOC_REGION_MAP", err);
    }
    RegionMapping r;
    r.writable_ = (m.access & ROF_ACCESS_WRITE) != 0;
    const int prot = PROT_READ | (r.writable_ ? PROT_WRITE : 0);
    void* p = ::mmap(nullptr, m.size, prot, MAP_SHARED, fd, 0);
    const int err = errno;
    ::close(fd);  // the mapping keeps the region
    if (p == MAP_FAILED) {
        throw os_error(name, "mmap of " + std::to_string(m.size) + " bytes", err);
    }
    r.data_ = static_cast<std::byte*>(p);
    r.size_ = m.size;
    r.id_ = m.region;
    return r;
}

RegionMapping::RegionMapping(RegionMapping&& o) noexcept
    : data_(std::exchange(o.data_, nullptr)),
      size_(std::exchange(o.size_, 0)),
      writable_(o.writable_),
      id_(o.id_) {}

RegionMapping& RegionMapping::operator=(RegionMapping&& o) noexcept {
    if (this != &o) {
        reset();
        data_ = std::exchange(o.data_, nullptr);
        size_ = std::exchange(o.size_, 0);
        writable_ = o.writable_;
        id_ = o.id_;
    }
    return *this;
}

RegionMapping::~RegionMapping() {
    reset();
}

void RegionMapping::reset() noexcept {
    if (data_) {
        ::munmap(data_, size_);
    }
    data_ = nullptr;
    size_ = 0;
}

}  // namespace rof
