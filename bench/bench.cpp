// rof-bench's shared pieces: see bench.h.
#include "bench.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <stdexcept>

namespace rofbench {

std::uint64_t now_ns() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return std::uint64_t(ts.tv_sec) * 1000000000ULL + std::uint64_t(ts.tv_nsec);
}

// ---- Histogram ---------------------------------------------------------

std::size_t Histogram::bucket_of(std::uint64_t v) {
    if (v < 64) {
        return v;
    }
    unsigned msb = 63 - unsigned(std::countl_zero(v));  // >= 6
    unsigned shift = msb - 5;                           // >= 1
    std::uint64_t sub = v >> shift;                     // 32 .. 63
    return 64 + std::size_t(shift - 1) * 32 + std::size_t(sub - 32);
}

std::uint64_t Histogram::bucket_high(std::size_t b) {
    if (b < 64) {
        return b;
    }
    unsigned shift = unsigned((b - 64) / 32) + 1;
    std::uint64_t sub = (b - 64) % 32 + 32;
    std::uint64_t low = sub << shift;
    return low + ((std::uint64_t(1) << shift) - 1);
}

void Histogram::record(std::uint64_t ns) {
    b_[bucket_of(ns)]++;
    count_++;
    sum_ += ns;
    min_ = std::min(min_, ns);
    max_ = std::max(max_, ns);
}

void Histogram::merge(const Histogram& o) {
    for (std::size_t i = 0; i < kBuckets; i++) {
        b_[i] += o.b_[i];
    }
    count_ += o.count_;
    sum_ += o.sum_;
    min_ = std::min(min_, o.min_);
    max_ = std::max(max_, o.max_);
}

void Histogram::clear() {
    *this = Histogram{};
}

std::uint64_t Histogram::percentile(double p) const {
    if (!count_) {
        return 0;
    }
    p = std::clamp(p, 0.0, 100.0);
    auto rank = std::uint64_t(std::ceil(p / 100.0 * double(count_)));
    rank = std::clamp<std::uint64_t>(rank, 1, count_);
    std::uint64_t seen = 0;
    for (std::size_t i = 0; i < kBuckets; i++) {
        seen += b_[i];
        if (seen >= rank) {
            return std::min(bucket_high(i), max_);
        }
    }
    return max_;
}

nlohmann::json Histogram::summary() const {
    auto us = [](std::uint64_t ns) { return double(ns) / 1000.0; };
    return {{"count", count_},
            {"min_us", us(min())},
            {"p50_us", us(percentile(50))},
            {"p99_us", us(percentile(99))},
            {"p999_us", us(percentile(99.9))},
            {"max_us", us(max_)},
            {"mean_us", mean() / 1000.0}};
}

std::vector<std::array<double, 2>> Histogram::cdf() const {
    std::vector<std::array<double, 2>> out;
    std::uint64_t seen = 0;
    for (std::size_t i = 0; i < kBuckets && count_; i++) {
        if (b_[i]) {
            seen += b_[i];
            out.push_back(
                {double(std::min(bucket_high(i), max_)) / 1000.0, double(seen) / double(count_)});
        }
    }
    return out;
}

// ---- the report --------------------------------------------------------

std::string Target::text() const {
    char buf[48];
    if (cmp == Cmp::within) {
        std::snprintf(buf, sizeof buf, "1 +- %gx", bound);
    } else {
        std::snprintf(buf, sizeof buf, "%s %gx", cmp == Cmp::le ? "<=" : ">=", bound);
    }
    return buf;
}

bool Target::met(double ratio) const {
    switch (cmp) {
        case Cmp::le:
            return ratio <= bound;
        case Cmp::ge:
            return ratio >= bound;
        case Cmp::within:
            return std::fabs(ratio - 1) <= bound;
    }
    return false;
}

CaseReport::CaseReport(std::string id, std::string title)
    : j_{{"id", std::move(id)},
         {"title", std::move(title)},
         {"figures", nlohmann::json::array()},
         {"latency", nlohmann::json::object()},
         {"series", nlohmann::json::array()},
         {"notes", nlohmann::json::array()}} {}

void CaseReport::figure(std::string name, double value, std::string unit, std::string baseline,
                        std::optional<double> baseline_value, std::optional<Target> target) {
    nlohmann::json f = {{"name", std::move(name)}, {"value", value}, {"unit", std::move(unit)}};
    if (!baseline.empty()) {
        f["baseline"] = std::move(baseline);
    }
    if (baseline_value) {
        f["baseline_value"] = *baseline_value;
        if (*baseline_value > 0) {
            double ratio = value / *baseline_value;
            f["ratio"] = ratio;
            if (target) {
                f["target"] = target->text();
                f["met"] = target->met(ratio);
            }
        }
    }
    if (target && !f.contains("target")) {
        f["target"] = target->text();
        f["met"] = nullptr;  // no baseline measured: cannot say
    }
    j_["figures"].push_back(std::move(f));
}

void CaseReport::bound(std::string name, double value, std::string unit, Target::Cmp cmp,
                       double bound) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%s %g %s", cmp == Target::Cmp::le ? "<=" : ">=", bound,
                  unit.c_str());
    bool met = cmp == Target::Cmp::le ? value <= bound : value >= bound;
    j_["figures"].push_back({{"name", std::move(name)},
                             {"value", value},
                             {"unit", std::move(unit)},
                             {"target", buf},
                             {"met", met}});
}

void CaseReport::latency(const std::string& name, const Histogram& h) {
    j_["latency"][name] = h.summary();
}

void CaseReport::series(std::string name, std::string title, std::string xlabel, std::string ylabel,
                        std::vector<std::string> columns, std::vector<std::vector<double>> rows,
                        bool logx, bool logy) {
    j_["series"].push_back({{"name", std::move(name)},
                            {"kind", "lines"},
                            {"title", std::move(title)},
                            {"xlabel", std::move(xlabel)},
                            {"ylabel", std::move(ylabel)},
                            {"columns", std::move(columns)},
                            {"rows", std::move(rows)},
                            {"logx", logx},
                            {"logy", logy}});
}

void CaseReport::cdf(std::string name, std::string title,
                     const std::vector<std::pair<std::string, const Histogram*>>& lines) {
    nlohmann::json ls = nlohmann::json::array();
    for (const auto& [label, h] : lines) {
        ls.push_back({{"label", label}, {"points", h->cdf()}});
    }
    j_["series"].push_back({{"name", std::move(name)},
                            {"kind", "cdf"},
                            {"title", std::move(title)},
                            {"xlabel", "latency (us)"},
                            {"ylabel", "fraction of requests"},
                            {"lines", std::move(ls)},
                            {"logx", true},
                            {"logy", false}});
}

void CaseReport::note(std::string text) {
    j_["notes"].push_back(std::move(text));
}

// ---- options, progress, registry --------------------------------------

std::string Options::param(const std::string& key, const std::string& fallback) const {
    auto it = params.find(key);
    return it == params.end() ? fallback : it->second;
}

long Options::param_int(const std::string& key, long fallback) const {
    auto it = params.find(key);
    if (it == params.end()) {
        return fallback;
    }
    std::size_t used = 0;
    long v = std::stol(it->second, &used, 0);
    if (used != it->second.size()) {
        throw std::invalid_argument("--set " + key + "=" + it->second + ": not a number");
    }
    return v;
}

void progress(std::string_view case_id, std::string_view what) {
    std::fprintf(stderr, "rof-bench: %.*s: %.*s\n", int(case_id.size()), case_id.data(),
                 int(what.size()), what.data());
}

std::vector<CaseInfo>& cases() {
    static std::vector<CaseInfo> all;
    return all;
}

Registration::Registration(std::string id, std::string title, CaseFn fn) {
    auto& all = cases();
    CaseInfo c{std::move(id), std::move(title), std::move(fn)};
    // In the order of their numbers: B9 before B10 ("B" and a number: the shorter id first).
    auto at = std::upper_bound(all.begin(), all.end(), c, [](const CaseInfo& a, const CaseInfo& b) {
        return a.id.size() != b.id.size() ? a.id.size() < b.id.size() : a.id < b.id;
    });
    all.insert(at, std::move(c));
}

}  // namespace rofbench
