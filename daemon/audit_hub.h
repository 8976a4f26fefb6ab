// SPDX-License-Identifier: MIT
// AuditHub: hands every audit record the drain reads to the TailAudit
// streams that want it.  A stream that cannot keep up loses records
// rather than holding the drain: each has a bounded queue, and the next
// record it does get carries the count it lost.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>

#include "rof/v1/audit.pb.h"

namespace rofd {

class AuditHub {
  public:
    static constexpr std::size_t queue_max = 4096;  // records per stream

    // One stream.  deliver() is called with the hub's lock held, from the
    // drain thread; it must only queue.
    class Subscriber {
      public:
        virtual ~Subscriber() = default;
        virtual void deliver(const rof::v1::AuditRecord& r) = 0;
    };

    // Adds @s for @tenant (empty: an admin's stream of every tenant);
    // false when @tenant has @max streams already.
    bool subscribe(Subscriber* s, const std::string& tenant, std::uint32_t max);
    void unsubscribe(Subscriber* s);
    void publish(const rof::v1::AuditRecord& r);
    std::size_t streams() const;

  private:
    mutable std::mutex mu_;
    std::map<Subscriber*, std::string> subs_;
    std::map<std::string, std::uint32_t> per_tenant_;
};

}  // namespace rofd
