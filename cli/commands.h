// SPDX-License-Identifier: MIT
// What every rofctl object file (tenant.cpp, region.cpp, ...) gets from the
// dispatcher (rofctl.cpp), and what it gives back.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "print.h"
#include "rof/client.h"
#include "rof/error.h"
#include "rof/session.h"

namespace rofctl {

// Exit statuses scripts can rely on; documented in rofctl(8), EXIT STATUS.
enum ExitCode {
    exit_ok = 0,
    exit_error = 1,         // the command failed for another reason
    exit_usage = 2,         // bad command line
    exit_unreachable = 3,   // UNAVAILABLE, DEADLINE_EXCEEDED, CANCELLED
    exit_not_found = 4,     // NOT_FOUND
    exit_denied = 5,        // PERMISSION_DENIED, UNAUTHENTICATED
    exit_conflict = 6,      // ALREADY_EXISTS, FAILED_PRECONDITION, ABORTED
    exit_invalid = 7,       // INVALID_ARGUMENT, OUT_OF_RANGE (rofd said so)
    exit_exhausted = 8,     // RESOURCE_EXHAUSTED
    exit_check_failed = 9,  // `policy check` found errors, `prog verify` rejected
};

// rof::Code -> exit status, as above; everything else is exit_error.
int exit_status(rof::Code code) noexcept;

// The command line's global options.
struct Globals {
    std::string socket;   // --socket
    std::string connect;  // --connect HOST:PORT
    std::string tls_ca, tls_cert, tls_key;
    unsigned timeout_ms = 0;  // 0: librof's default
    bool json = false;
    bool pretty = false;
};

// The librof options the globals ask for.
rof::ClientOptions client_options(const Globals& g);

// rofd's client, made on first use from @globals (so that commands that
// need no rofd never connect), then kept: every command that runs on it,
// all the lines of a `rofctl batch` among them, shares one channel.  So
// do the data-path sessions of `prog run`, one per tenant.
class Connection {
  public:
    explicit Connection(const Globals& globals) : globals_(globals) {}

    rof::Client& client();

    // A data-path session of @tenant ("": the caller's own), opened on
    // first use.  forget_session() drops it (it failed), so that the next
    // use opens another.
    rof::Session& session(const std::string& tenant);
    void forget_session(const std::string& tenant);

  private:
    const Globals& globals_;
    std::unique_ptr<rof::Client> client_;
    // After client_: closed before it.
    std::map<std::string, rof::Session> sessions_;
};

class Context {
  public:
    Context(Printer& printer, const Globals& globals, Connection& connection, std::ostream& out,
            std::ostream& err)
        : printer(printer), globals(globals), connection(connection), out(out), err(err) {}

    rof::Client& client() { return connection.client(); }

    Printer& printer;
    const Globals& globals;
    Connection& connection;
    // Where the command's printer writes (batch: where its lines print).
    std::ostream& out;
    std::ostream& err;
    // The command is a line of `rofctl batch`: one that cannot run there
    // (it never ends, or is a batch itself) throws UsageError.
    bool in_batch = false;
};

// A command's body, run after a successful parse; returns the exit status.
// Throws rof::Error for what rofd or librof refused, UsageError for a
// command line that parses but makes no sense.
using Handler = std::function<int(Context&)>;

class UsageError : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

// Each object registers its CLI11 subcommand and verbs on @app; parsing a
// verb stores its handler in @selected.
void add_tenant_commands(CLI::App& app, Handler& selected);
void add_policy_commands(CLI::App& app, Handler& selected);
void add_region_commands(CLI::App& app, Handler& selected);
void add_prog_commands(CLI::App& app, Handler& selected);
void add_session_commands(CLI::App& app, Handler& selected);
void add_audit_commands(CLI::App& app, Handler& selected);
void add_status_commands(CLI::App& app, Handler& selected);  // status, health, stats
void add_top_commands(CLI::App& app, Handler& selected);     // top (top.cpp)
void add_batch_commands(CLI::App& app, Handler& selected);   // batch (batch.cpp)

// Helpers shared by the object files.

// "rw", "rwa", "r" -> Access bits; UsageError otherwise.
std::uint32_t parse_access(const std::string& text);
// "4096", "64KiB", "1MiB" -> bytes; UsageError otherwise.
std::uint64_t parse_size(const std::string& text);
// "HEX" (whitespace and an optional 0x ignored) or "@FILE" -> bytes.
std::string parse_bytes(const std::string& text);
// The whole of a file; std::runtime_error naming it when unreadable.
std::string read_file(const std::string& path);
// A list verb's -o wide (text output: every column) into @output.
void add_output_option(CLI::App& verb, std::string& output);

}  // namespace rofctl

namespace rofctl {

// --config-dir's default: $ROF_CONFIG_DIR if set and non-empty, else /etc/rof.
std::string default_config_dir();

}  // namespace rofctl

namespace rofctl {

// One sample line of Prometheus text: its name, what is between its
// braces (empty without), its value as written; nullopt for a comment, a
// blank line or a line without a value.
struct SampleLine {
    std::string name, labels, value;
};
std::optional<SampleLine> split_sample(const std::string& line);
// `rofctl stats`: Prometheus text as {"samples": [{name, labels, value}]}.
Json metric_samples(const std::string& text);
// `rofctl stats -o prom`: the text as it is, or {"text": ...} with -j.
void print_prom(Printer& p, const rof::v1::GetMetricsResponse& r);

}  // namespace rofctl

namespace rofctl {

// `prog dump`: the program's tenant, name, tag, source and disassembly.
void print_prog_dump(Printer& printer, const rof::v1::Program& p);
// `prog run`: what one invocation over the data path answered.
Json prog_run_tree(std::uint32_t session, const rof::v1::Program& prog, std::uint32_t prog_status,
                   std::uint32_t insns, std::string_view response);

}  // namespace rofctl
