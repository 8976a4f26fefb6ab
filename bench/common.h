// What rof-bench's cases share beyond bench.h: measuring loops, the rof
// side's set-up (programs, regions, sessions through rofd), and a client of
// stock memcached's text protocol.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "bench.h"
#include "rof/client.h"
#include "rof/session.h"

namespace rofbench {

// The tenant every case but B4/B6 runs as (bench/guest.sh's policy), and the
// kvstore's (rof-kvstore's).
std::string bench_tenant(const Options& opt);  // --set tenant=..., default "bench"
std::string kv_tenant(const Options& opt);     // --set kv_tenant=..., default "kv"

// @v, or std::runtime_error("needs @what") when it is empty: an option or
// parameter a case cannot run without.
std::string need(const std::string& v, const char* what);

// Closed loop, one operation in flight: warm-up, then opt.reps repetitions
// of opt.seconds, each operation's latency recorded.  @op throws on a wrong
// answer (a benchmark that reads a wrong value has measured nothing).
Histogram measure_latency(const Env& env, std::string_view what, const std::function<void()>& op);
// Two operations measured in turn, one call of each alternately, so that both
// see the same conditions (a loaded host, a noisy neighbour): for comparing
// two ways of doing one thing.
std::pair<Histogram, Histogram> measure_latency_pair(const Env& env, std::string_view what,
                                                     const std::function<void()>& a,
                                                     const std::function<void()>& b);

// Throughput: @run(ns) does as many operations as it can in ns nanoseconds
// and returns how many; warm-up, then opt.reps runs; the median rate (ops/s).
double measure_rate(const Env& env, std::string_view what,
                    const std::function<std::uint64_t(std::uint64_t)>& run);

double median(std::vector<double> v);

// Starts @argv (argv[0] found on $PATH) with this process's environment, its standard output
// to /dev/null when @quiet; returns its pid, to be reaped by the caller.  Throws
// std::runtime_error ("cannot run NAME: ...") when it cannot start.
pid_t spawn(std::vector<std::string> argv, bool quiet = false);

// ---- the rof side ----------------------------------------------------------------

rof::Client connect_rofd(const Options& opt);
// Loads @source as @name for @tenant, replacing a program of that name with
// another tag; returns the tag.  @binds: slot -> region, in slot order.
std::uint64_t load_program(rof::Client& c, const std::string& tenant, const std::string& name,
                           const std::string& source,
                           const std::vector<std::pair<std::string, std::string>>& binds = {});
// Creates region @name (read, write, atomic) unless the tenant has it.
void ensure_region(rof::Client& c, const std::string& tenant, const std::string& name,
                   std::uint64_t size);
// A session of @tenant, granted @regions.
rof::Session open_session(rof::Client& c, const std::string& tenant,
                          const std::vector<std::string>& regions = {});

// "echo": the INVOKE that does nothing but answer: its arguments back.  The
// offload's counterpart of the raw SEND/RECV echo; the cases echo kEchoBytes.
extern const char* const kEchoProgram;
inline constexpr std::size_t kEchoBytes = 32;

// One INVOKE of @tag with @args, synchronous (on a busy_poll session, as
// open_session() makes them, it spins as the raw baselines do); throws
// unless the program answered with status 0.  Returns response bytes.
std::size_t invoke_ok(rof::Session& s, std::uint64_t tag, std::span<const std::byte> args,
                      std::span<std::byte> resp);

// Keeps @window echoes (INVOKEs of @tag, kEchoBytes each) in flight on each
// of @ss, round robin, for @ns (UINT64_MAX: until @stop), one doorbell per
// poll's worth of new requests (Kalia's doorbell batching); returns how many
// finished.  Throws on a failed or short answer.
std::uint64_t invoke_window(std::span<rof::Session> ss, std::uint64_t tag, std::size_t window,
                            std::uint64_t ns, const std::atomic<bool>* stop = nullptr);

// ---- stock memcached, over TCP -----------------------------------------------

class Memcached {
  public:
    explicit Memcached(const std::string& host_port);
    Memcached(const Memcached&) = delete;
    Memcached& operator=(const Memcached&) = delete;
    ~Memcached();
    void set(std::string_view key, std::string_view value);
    // The value's length; throws when the key is missing.
    std::size_t get(std::string_view key);

  private:
    void send_all(std::string_view s) const;
    void fill();               // receives more into in_
    std::string line();        // up to "\r\n", without it
    void skip(std::size_t n);  // consumes n bytes
    int fd_ = -1;
    std::string in_;  // received, not yet consumed
};

}  // namespace rofbench
