// SPDX-License-Identifier: MIT
// rof.v1.Metrics: the Prometheus text of rofd's and the module's counters
// (metrics.h), an admin's whole or a tenant's own.
#include "call.h"
#include "services.h"

namespace rofd {

ServerUnaryReactor* MetricsService::GetMetrics(CallbackServerContext* ctx,
                                               const v1::GetMetricsRequest*,
                                               v1::GetMetricsResponse* resp) {
    return unary(m_, ctx, "GetMetrics", CallKind::read, [this, resp](const Principal& p) {
        if (!p.admin() && p.role != Principal::Role::tenant) {
            return m_.authorize(p, "", Right::read, "metrics");
        }
        resp->set_text(m_.metrics_text(p.admin() ? "" : p.tenant));
        return grpc::Status::OK;
    });
}

}  // namespace rofd
