// rof-bench: the benchmark of rof's data path against the alternatives a user
// would pick, every figure a ratio taken side by side in one run
// (../docs/performance.md, ../../shared/design/PERFORMANCE.md's cases B0-B8).
//
// The pieces every case shares: a latency histogram with log buckets
// (HdrHistogram's layout), the run's report (one JSON document: figures with
// their baselines and ratios, series for the plots), the options, progress on
// the terminal, and the registry of cases (ROF_BENCH_CASE).
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace rofbench {

using Clock = std::chrono::steady_clock;

// Nanoseconds since an arbitrary epoch, from the monotonic clock.
std::uint64_t now_ns();

// Latency samples in log buckets: values below 64 exactly, above that 32
// linear sub-buckets per power of two (about 3% resolution), 0 .. 2^64-1.
class Histogram {
  public:
    static constexpr std::size_t kBuckets = 64 + 58 * 32;

    void record(std::uint64_t ns);
    void merge(const Histogram& other);
    void clear();
    std::uint64_t count() const { return count_; }
    std::uint64_t min() const { return count_ ? min_ : 0; }
    std::uint64_t max() const { return max_; }
    double mean() const { return count_ ? double(sum_) / double(count_) : 0.0; }
    // The value at percentile @p (0..100): the highest value of the bucket
    // that holds the sample of that rank (what HdrHistogram reports), 0 when
    // empty.
    std::uint64_t percentile(double p) const;
    // {"count", "min_us", "p50_us", "p99_us", "p999_us", "max_us", "mean_us"}
    nlohmann::json summary() const;
    // The cumulative distribution as [latency_us, fraction] points, one per
    // non-empty bucket: what a CDF plot draws.
    std::vector<std::array<double, 2>> cdf() const;

    static std::size_t bucket_of(std::uint64_t v);
    static std::uint64_t bucket_high(std::size_t b);  // highest value in bucket b

  private:
    std::array<std::uint64_t, kBuckets> b_{};
    std::uint64_t count_ = 0, min_ = UINT64_MAX, max_ = 0, sum_ = 0;
};

// What makes a figure meet its target: ratio <= bound, ratio >= bound, or
// |ratio - 1| <= bound (within).
struct Target {
    enum class Cmp { le, ge, within };
    Cmp cmp;
    double bound;
    std::string text() const;  // "<= 1.5x", "1 +- 0.05x"
    bool met(double ratio) const;
};

// One case's part of the report.
class CaseReport {
  public:
    CaseReport(std::string id, std::string title);

    // A figure with its baseline in the same run: ratio = value / baseline.
    // Without a baseline, the figure is reported alone (B0, B8's absolutes).
    void figure(std::string name, double value, std::string unit, std::string baseline = {},
                std::optional<double> baseline_value = {}, std::optional<Target> target = {});
    // A figure with an absolute bound, no baseline: met when value <= or
    // >= bound (B3's failed requests, B8's load time).
    void bound(std::string name, double value, std::string unit, Target::Cmp cmp, double bound);
    // A latency distribution, under @name.
    void latency(const std::string& name, const Histogram& h);
    // A table for a plot: plot.sh draws one PNG per series, x the first
    // column, one line per other column.  kind: "lines" (x numeric) or
    // "cdf" (columns are [x, y] pairs per line, see add_cdf).
    void series(std::string name, std::string title, std::string xlabel, std::string ylabel,
                std::vector<std::string> columns, std::vector<std::vector<double>> rows,
                bool logx = false, bool logy = false);
    // A CDF plot: one line per named histogram.
    void cdf(std::string name, std::string title,
             const std::vector<std::pair<std::string, const Histogram*>>& lines);
    void note(std::string text);  // what a reader must know: a limit, a skip
    const nlohmann::json& json() const { return j_; }

  private:
    nlohmann::json j_;
};

struct Options {
    std::string rofd = "unix:/run/rofd/rofd.sock";  // rofd's control address
    std::string server;      // the rof.ko session address (rxe), e.g. 10.0.0.1
    std::string raw_server;  // rof-bench-server, host:port of its rdma_cm listener
    std::string memcached;   // stock memcached, host:port (TCP)
    bool smoke = false;      // seconds-long: keep the tool working, figures mean nothing
    double seconds = 3.0;    // measured time per point (smoke: 0.3)
    double warmup = 0.5;     // warm-up per point, not recorded (smoke: 0.1)
    int reps = 3;            // repetitions per point (smoke: 1); medians over them
    std::map<std::string, std::string> params;  // --set key=value, case-specific

    std::string param(const std::string& key, const std::string& fallback) const;
    long param_int(const std::string& key, long fallback) const;
};

// Progress on stderr: which case, which point, how far.  Never on stdout.
void progress(std::string_view case_id, std::string_view what);

struct Env {
    const Options& opt;
    CaseReport& report;
};

using CaseFn = std::function<void(Env&)>;

struct CaseInfo {
    std::string id;     // "B1"
    std::string title;  // "hash GET offload vs READ, two READs, RPC, memcached"
    CaseFn fn;
};

// The registry, in id order.
std::vector<CaseInfo>& cases();
struct Registration {
    Registration(std::string id, std::string title, CaseFn fn);
};

#define ROF_BENCH_CONCAT2(a, b) a##b
#define ROF_BENCH_CONCAT(a, b) ROF_BENCH_CONCAT2(a, b)
// ROF_BENCH_CASE("B1", "title") { ... env.report.figure(...) ... }
#define ROF_BENCH_CASE(id, title)                                                     \
    static void ROF_BENCH_CONCAT(rof_bench_case_, __LINE__)(::rofbench::Env & env);   \
    static const ::rofbench::Registration ROF_BENCH_CONCAT(rof_bench_reg_, __LINE__)( \
        id, title, ROF_BENCH_CONCAT(rof_bench_case_, __LINE__));                      \
    static void ROF_BENCH_CONCAT(rof_bench_case_, __LINE__)([[maybe_unused]] ::rofbench::Env & env)

}  // namespace rofbench
