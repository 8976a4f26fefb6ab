// SPDX-License-Identifier: MIT
// The rof.v1 services (proto/rof/v1/*.proto, docs/api.md).  Each holds the
// Manager and nothing else; what each call may do and who may make it is
// in docs/api.md.
#pragma once

#include "manager.h"
#include "rof/v1/audit.grpc.pb.h"
#include "rof/v1/control.grpc.pb.h"
#include "rof/v1/metrics.grpc.pb.h"
#include "rof/v1/policy.grpc.pb.h"
#include "rof/v1/program.grpc.pb.h"
#include "rof/v1/region.grpc.pb.h"
#include "rof/v1/session.grpc.pb.h"
#include "rof/v1/tenant.grpc.pb.h"

namespace rofd {

using grpc::CallbackServerContext;
using grpc::ServerUnaryReactor;
namespace v1 = rof::v1;

class ControlService final : public v1::Control::CallbackService {
  public:
    explicit ControlService(Manager& m) : m_(m) {}
    ServerUnaryReactor* GetStatus(CallbackServerContext* ctx, const v1::GetStatusRequest* req,
                                  v1::GetStatusResponse* resp) override;
    ServerUnaryReactor* RotateTicketKey(CallbackServerContext* ctx,
                                        const v1::RotateTicketKeyRequest* req,
                                        v1::RotateTicketKeyResponse* resp) override;

  private:
    Manager& m_;
};

class TenantService final : public v1::Tenants::CallbackService {
  public:
    explicit TenantService(Manager& m) : m_(m) {}
    ServerUnaryReactor* ListTenants(CallbackServerContext* ctx, const v1::ListTenantsRequest* req,
                                    v1::ListTenantsResponse* resp) override;
    ServerUnaryReactor* GetTenant(CallbackServerContext* ctx, const v1::GetTenantRequest* req,
                                  v1::Tenant* resp) override;
    ServerUnaryReactor* DestroyTenant(CallbackServerContext* ctx,
                                      const v1::DestroyTenantRequest* req,
                                      v1::DestroyTenantResponse* resp) override;

  private:
    Manager& m_;
};

class PolicyService final : public v1::Policy::CallbackService {
  public:
    explicit PolicyService(Manager& m) : m_(m) {}
    ServerUnaryReactor* GetPolicy(CallbackServerContext* ctx, const v1::GetPolicyRequest* req,
                                  v1::GetPolicyResponse* resp) override;
    ServerUnaryReactor* ReloadPolicy(CallbackServerContext* ctx, const v1::ReloadPolicyRequest* req,
                                     v1::ReloadPolicyResponse* resp) override;

  private:
    Manager& m_;
};

class RegionService final : public v1::Regions::CallbackService {
  public:
    explicit RegionService(Manager& m) : m_(m) {}
    ServerUnaryReactor* CreateRegion(CallbackServerContext* ctx, const v1::CreateRegionRequest* req,
                                     v1::Region* resp) override;
    ServerUnaryReactor* DeleteRegion(CallbackServerContext* ctx, const v1::DeleteRegionRequest* req,
                                     v1::DeleteRegionResponse* resp) override;
    ServerUnaryReactor* ListRegions(CallbackServerContext* ctx, const v1::ListRegionsRequest* req,
                                    v1::ListRegionsResponse* resp) override;
    ServerUnaryReactor* GetRegion(CallbackServerContext* ctx, const v1::GetRegionRequest* req,
                                  v1::Region* resp) override;
    ServerUnaryReactor* CreateRegionToken(CallbackServerContext* ctx,
                                          const v1::CreateRegionTokenRequest* req,
                                          v1::CreateRegionTokenResponse* resp) override;

  private:
    Manager& m_;
};

class ProgramService final : public v1::Programs::CallbackService {
  public:
    explicit ProgramService(Manager& m) : m_(m) {}
    ServerUnaryReactor* VerifyProgram(CallbackServerContext* ctx,
                                      const v1::VerifyProgramRequest* req,
                                      v1::VerifyProgramResponse* resp) override;
    ServerUnaryReactor* LoadProgram(CallbackServerContext* ctx, const v1::LoadProgramRequest* req,
                                    v1::Program* resp) override;
    ServerUnaryReactor* ReplaceProgram(CallbackServerContext* ctx,
                                       const v1::ReplaceProgramRequest* req,
                                       v1::Program* resp) override;
    ServerUnaryReactor* UnloadProgram(CallbackServerContext* ctx,
                                      const v1::UnloadProgramRequest* req,
                                      v1::UnloadProgramResponse* resp) override;
    ServerUnaryReactor* ListPrograms(CallbackServerContext* ctx, const v1::ListProgramsRequest* req,
                                     v1::ListProgramsResponse* resp) override;
    ServerUnaryReactor* GetProgram(CallbackServerContext* ctx, const v1::GetProgramRequest* req,
                                   v1::Program* resp) override;

  private:
    Manager& m_;
};

class SessionService final : public v1::Sessions::CallbackService {
  public:
    explicit SessionService(Manager& m) : m_(m) {}
    ServerUnaryReactor* OpenSession(CallbackServerContext* ctx, const v1::OpenSessionRequest* req,
                                    v1::OpenSessionResponse* resp) override;
    ServerUnaryReactor* ListSessions(CallbackServerContext* ctx, const v1::ListSessionsRequest* req,
                                     v1::ListSessionsResponse* resp) override;
    ServerUnaryReactor* GetSession(CallbackServerContext* ctx, const v1::GetSessionRequest* req,
                                   v1::Session* resp) override;
    ServerUnaryReactor* CloseSession(CallbackServerContext* ctx, const v1::CloseSessionRequest* req,
                                     v1::CloseSessionResponse* resp) override;

  private:
    Manager& m_;
};

class MetricsService final : public v1::Metrics::CallbackService {
  public:
    explicit MetricsService(Manager& m) : m_(m) {}
    ServerUnaryReactor* GetMetrics(CallbackServerContext* ctx, const v1::GetMetricsRequest* req,
                                   v1::GetMetricsResponse* resp) override;

  private:
    Manager& m_;
};

class AuditService final : public v1::Audit::CallbackService {
  public:
    explicit AuditService(Manager& m) : m_(m) {}
    grpc::ServerWriteReactor<v1::AuditRecord>* TailAudit(CallbackServerContext* ctx,
                                                         const v1::TailAuditRequest* req) override;
    ServerUnaryReactor* GetAuditStats(CallbackServerContext* ctx,
                                      const v1::GetAuditStatsRequest* req,
                                      v1::AuditStats* resp) override;

  private:
    Manager& m_;
};

// Exposed for the unit tests: the mapping from the ABI to the proto.
rof::v1::PortState to_proto_port_state(std::uint32_t abi_state);

}  // namespace rofd
