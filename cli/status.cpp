// SPDX-License-Identifier: MIT
// rofctl status, health, stats: the daemon as a whole.
#include <sstream>

#include "commands.h"
#include "grpc/health/v1/health.pb.h"

namespace rofctl {

std::optional<SampleLine> split_sample(const std::string& line) {
    if (line.empty() || line[0] == '#') {
        return std::nullopt;
    }
    const auto sp = line.rfind(' ');
    if (sp == std::string::npos) {
        return std::nullopt;
    }
    SampleLine s{line.substr(0, sp), {}, line.substr(sp + 1)};
    if (const auto brace = s.name.find('{'); brace != std::string::npos) {
        s.labels = s.name.substr(brace + 1, s.name.size() - brace - 2);
        s.name.resize(brace);
    }
    return s;
}

// The samples of Prometheus text as a table: {"samples": [{"name",
// "labels", "value"}]}; comments and blank lines left out.
Json metric_samples(const std::string& text) {
    Json rows = Json::array();
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
        if (auto s = split_sample(line)) {
            rows.push_back({{"name", s->name}, {"labels", s->labels}, {"value", s->value}});
        }
    }
    return {{"samples", rows}};
}

void print_prom(Printer& p, const rof::v1::GetMetricsResponse& r) {
    if (p.json()) {
        p.print(r);
    } else {
        p.text(r.text().ends_with('\n') ? r.text().substr(0, r.text().size() - 1) : r.text());
    }
}

void add_status_commands(CLI::App& app, Handler& selected) {
    app.add_subcommand("status", "rof.ko, rofd and the RDMA devices")->callback([&selected] {
        selected = [](Context& ctx) {
            ctx.printer.print(ctx.client().get_status());
            return exit_ok;
        };
    });

    auto* health =
        app.add_subcommand("health", "grpc.health.v1 check of rofd; exit 0 only when SERVING");
    auto service = std::make_shared<std::string>();
    health->add_option("service", *service, "a service, e.g. rof.v1.Regions (default: rofd)");
    health->callback([&selected, service] {
        selected = [service](Context& ctx) {
            // librof answers the status name; printed as the protocol's message.
            grpc::health::v1::HealthCheckResponse r;
            grpc::health::v1::HealthCheckResponse::ServingStatus st{};
            const std::string name = ctx.client().health(*service);
            if (grpc::health::v1::HealthCheckResponse::ServingStatus_Parse(name, &st)) {
                r.set_status(st);
            }
            ctx.printer.print(r);
            return r.status() == grpc::health::v1::HealthCheckResponse::SERVING ? exit_ok
                                                                                : exit_error;
        };
    });

    auto* stats = app.add_subcommand("stats", "per-tenant and per-session metrics (GetMetrics)");
    auto format = std::make_shared<std::string>();
    stats->add_option("-o,--output", *format, "prom: the Prometheus text as it is")
        ->check(CLI::IsMember({"prom"}));
    stats->callback([&selected, format] {
        selected = [format](Context& ctx) {
            const auto r = ctx.client().get_metrics();
            if (*format == "prom") {
                print_prom(ctx.printer, r);
            } else {
                ctx.printer.print(metric_samples(r.text()));
            }
            return exit_ok;
        };
    });
}

}  // namespace rofctl
