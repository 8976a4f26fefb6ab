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

    // Whose streams a subscription counts against: its tenant's, or the
    // admins' own (whichever tenant it names), so that a tenant holding all
    // of its streams does not lock the operator out of its audit.
    enum class Holder { tenant, admin };

    // Adds @s for the records of @tenant (empty: of every tenant, admins
    // only); false when @holder has @max streams already (the admins, or
    // @tenant).
    bool subscribe(Subscriber* s, const std::string& tenant, Holder holder, std::uint32_t max);
    void unsubscribe(Subscriber* s);
    void publish(const rof::v1::AuditRecord& r);
    std::size_t streams() const;
    // Subscriptions made since the hub was, refused ones not counted.
    std::uint64_t opened() const;

  private:
    struct Subscription {
        std::string tenant;  // whose records; empty: everyone's
        Holder holder = Holder::tenant;
    };

    // The count @holder's subscriptions to @tenant are held against.
    std::uint32_t& held(Holder holder, const std::string& tenant);

    mutable std::mutex mu_;
    std::map<Subscriber*, Subscription> subs_;
    std::map<std::string, std::uint32_t> per_tenant_;
    std::uint32_t admin_ = 0;
    std::uint64_t opened_ = 0;
};

}  // namespace rofd
