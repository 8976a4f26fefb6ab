// SPDX-License-Identifier: MIT
// A stub of every rof.v1 service over one channel: librof's Client and the
// service tests of rofd (daemon/service_harness.h) call through the same set.
// Header only: librof compiles it in (nothing of it is exported).
#pragma once

#include <grpcpp/grpcpp.h>

#include <memory>

#include "rof/v1/audit.grpc.pb.h"
#include "rof/v1/control.grpc.pb.h"
#include "rof/v1/metrics.grpc.pb.h"
#include "rof/v1/policy.grpc.pb.h"
#include "rof/v1/program.grpc.pb.h"
#include "rof/v1/region.grpc.pb.h"
#include "rof/v1/session.grpc.pb.h"
#include "rof/v1/tenant.grpc.pb.h"

namespace rof::internal {

struct Stubs {
    explicit Stubs(const std::shared_ptr<grpc::Channel>& ch)
        : control(v1::Control::NewStub(ch)),
          tenants(v1::Tenants::NewStub(ch)),
          policy(v1::Policy::NewStub(ch)),
          regions(v1::Regions::NewStub(ch)),
          programs(v1::Programs::NewStub(ch)),
          sessions(v1::Sessions::NewStub(ch)),
          audit(v1::Audit::NewStub(ch)),
          metrics(v1::Metrics::NewStub(ch)) {}

    std::unique_ptr<v1::Control::Stub> control;
    std::unique_ptr<v1::Tenants::Stub> tenants;
    std::unique_ptr<v1::Policy::Stub> policy;
    std::unique_ptr<v1::Regions::Stub> regions;
    std::unique_ptr<v1::Programs::Stub> programs;
    std::unique_ptr<v1::Sessions::Stub> sessions;
    std::unique_ptr<v1::Audit::Stub> audit;
    std::unique_ptr<v1::Metrics::Stub> metrics;
};

}  // namespace rof::internal
