// SPDX-License-Identifier: MIT
// rof::RegionMapping: a region mapped into this process (docs/api.md section 4.6):
// CreateRegionToken through rofd for a one-time token, /dev/rof's ROF_IOC_REGION_MAP with it, then
// mmap.  The mapping sees the same memory as the region's sessions and programs; it is unmapped by
// the destructor.  Movable, not copyable.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "rof/client.h"
#include "rof/error.h"

namespace rof {

class ROF_EXPORT RegionMapping {
  public:
    // Maps region @name of @tenant (empty: the caller's own), writable when @writable (then the
    // caller needs read-write access on it).  Throws rof::Error naming the region and the
    // reason: CreateRegionToken's error, or the device's (open, ioctl, mmap).
    static RegionMapping map(Client& client, const std::string& tenant, const std::string& name,
                             bool writable);
    // With a token minted elsewhere (Client::create_region_token); @name is for messages.
    static RegionMapping map(const v1::CreateRegionTokenResponse& token, const std::string& name);

    RegionMapping() noexcept = default;  // maps nothing
    RegionMapping(RegionMapping&&) noexcept;
    RegionMapping& operator=(RegionMapping&&) noexcept;
    RegionMapping(const RegionMapping&) = delete;
    RegionMapping& operator=(const RegionMapping&) = delete;
    ~RegionMapping();

    std::byte* data() const noexcept { return data_; }
    std::size_t size() const noexcept { return size_; }
    std::span<std::byte> bytes() const noexcept { return {data_, size_}; }
    bool writable() const noexcept { return writable_; }
    std::uint32_t region_id() const noexcept { return id_; }
    // Unmaps now (the destructor's work); afterwards the object maps nothing.
    void reset() noexcept;

  private:
    std::byte* data_ = nullptr;
    std::size_t size_ = 0;
    bool writable_ = false;
    std::uint32_t id_ = 0;
};

}  // namespace rof
