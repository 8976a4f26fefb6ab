// SPDX-License-Identifier: MIT
// The text form of rofctl's output (print.h, render_text), for people.
//
// What a message looks like is data, not code: kFields says which fields
// are sizes, durations, access or lines, inline_specs() which nested
// messages print on one line, table_specs() which columns a list shows by
// default and which only with -o wide.  The renderer walks the JSON tree (to_json's,
// protobuf's canonical JSON mapping) with the message's descriptor beside
// it, read back first into plain values (tree_for_text: 64-bit integers as
// numbers, tags as "0x..." hex, enum values without their prefix, bytes as
// hex), so the text carries what the JSON carries, in other units.  The JSON output never comes
// through here.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <sstream>
#include <string_view>
#include <vector>

#include "print.h"

namespace rofctl {
namespace {

namespace pb = google::protobuf;
using FD = pb::FieldDescriptor;

// How a field's value is written.
enum class Fmt {
    plain,        // as it is
    size,         // bytes: "512 B", "64 KiB", "20.1 MiB"
    bytes,        // bytes, exact: "4368 B"
    size_limit,   // a size where 2^64-1 is "unlimited"
    count_limit,  // a u32 where 0xffffffff is "unlimited"
    ms,           // a duration in ms: "300ms", "5s", "5m"
    ns,           // a duration in ns: "944.8us"
    access,       // Access bits: "r", "rw", "rwa", "-"
    lines,        // repeated string, one element a line
    count,        // a repeated field: how many elements
    ops_rate,     // ops per second, 0 (unlimited) left out
    bytes_rate,   // bytes per second, 0 (unlimited) left out
    nonzero,      // a number, 0 left out
    tag,          // a fixed64 tag, 0 left out
    flag,         // a bool: its upper-cased name when true, left out when false
};

struct FieldSpec {
    std::string_view field;  // full name, "rof.v1.Region.size"
    Fmt fmt;
    std::string_view label = {};  // the key in a block instead of the field name
};

// clang-format off
const FieldSpec kFields[] = {
    {"rof.v1.TenantQuota.region_bytes", Fmt::size_limit},
    {"rof.v1.TenantQuota.regions", Fmt::count_limit},
    {"rof.v1.TenantQuota.sessions", Fmt::count_limit},
    {"rof.v1.TenantQuota.programs", Fmt::count_limit},
    {"rof.v1.TenantQuota.credits", Fmt::count_limit},
    {"rof.v1.TenantUsage.region_bytes", Fmt::size},
    {"rof.v1.TenantCounters.bytes", Fmt::size},
    {"rof.v1.Rate.ops_per_sec", Fmt::ops_rate},
    {"rof.v1.Rate.bytes_per_sec", Fmt::bytes_rate},
    {"rof.v1.Region.size", Fmt::size},
    {"rof.v1.Region.access", Fmt::access},
    {"rof.v1.FreeList.block_size", Fmt::bytes},
    {"rof.v1.FreeList.corrupt", Fmt::flag},
    {"rof.v1.CreateRegionTokenResponse.size", Fmt::size},
    {"rof.v1.VerifyProgramResponse.tag", Fmt::tag},
    {"rof.v1.UnloadProgramRequest.tag", Fmt::tag},
    {"rof.v1.GetProgramRequest.tag", Fmt::tag},
    {"rof.v1.CreateRegionTokenResponse.access", Fmt::access},
    {"rof.v1.Program.byte_budget", Fmt::size},
    {"rof.v1.Program.args_min", Fmt::bytes},
    {"rof.v1.Program.args_max", Fmt::bytes},
    {"rof.v1.Program.scratch_size", Fmt::size},
    {"rof.v1.Program.resp_max", Fmt::size},
    {"rof.v1.GrantedRegion.access", Fmt::access},
    {"rof.v1.GrantedRegion.size", Fmt::size},
    {"rof.v1.SessionRegion.access", Fmt::access},
    {"rof.v1.Session.idle_timeout_ms", Fmt::ms, "idle_timeout"},
    {"rof.v1.OpenSessionResponse.idle_timeout_ms", Fmt::ms, "idle_timeout"},
    {"rof.v1.SessionCounters.bytes_in", Fmt::size},
    {"rof.v1.SessionCounters.bytes_out", Fmt::size},
    {"rof.v1.AuditRecord.tag", Fmt::tag},
    {"rof.v1.AuditRecord.bytes", Fmt::size},
    {"rof.v1.AuditRecord.latency_ns", Fmt::ns, "latency"},
    {"rof.v1.Port.active_mtu", Fmt::nonzero},
    {"rof.v1.GetStatusResponse.drift", Fmt::lines},
    {"rof.v1.ReloadPolicyResponse.notes", Fmt::lines},
    {"rof.v1.GetPolicyResponse.tenant_files", Fmt::lines},
};
// clang-format on

// A nested message on one line: each field's text, prefix and suffix,
// joined with sep; a field with no text is left out with its prefix.
struct InlineField {
    std::string_view name;
    std::string_view prefix = {};
    std::string_view suffix = {};
};
struct InlineSpec {
    std::string_view message;
    std::vector<InlineField> fields;
    std::string_view sep;
    std::string_view none = "-";  // when every field is left out
};

const std::vector<InlineSpec>& inline_specs() {
    static const std::vector<InlineSpec> specs = {
        {"rof.v1.TenantQuota",
         {{"region_bytes", "memory "},
          {"regions", "regions "},
          {"sessions", "sessions "},
          {"programs", "programs "},
          {"credits", "credits "}},
         ", "},
        {"rof.v1.TenantUsage",
         {{"region_bytes", "memory "},
          {"regions", "regions "},
          {"sessions", "sessions "},
          {"programs", "programs "},
          {"freelists", "freelists "}},
         ", "},
        {"rof.v1.Rate", {{"ops_per_sec"}, {"bytes_per_sec"}}, ", ", "unlimited"},
        {"rof.v1.ModuleInfo", {{"version"}, {"abi_major", " (ABI "}, {"abi_minor", ".", ")"}}, ""},
        {"rof.v1.DaemonInfo", {{"version"}, {"uptime", "up "}}, ", "},
        {"rof.v1.Port", {{"port_num", "port "}, {"state"}, {"active_mtu", "mtu "}}, " "},
        {"rof.v1.Bind", {{"slot"}, {"region", "="}, {"freelist", "#"}}, ""},
        {"rof.v1.GrantedRegion", {{"name"}, {"access", ":"}}, ""},
        {"rof.v1.FreeList",
         {{"count"},
          {"block_size", " x "},
          {"offset", " at offset "},
          {"free", ", ", " free"},
          {"corrupt", ", "}},
         ""},
    };
    return specs;
}

// Which columns a list shows.
enum class Show { always, narrow, wide };
struct Column {
    std::string header;
    std::string path;     // dotted: "usage.sessions"
    std::string of = {};  // "USED/LIMIT": the path of the limit
    Show show = Show::always;
    std::optional<Fmt> fmt = std::nullopt;  // instead of the field's own
};
struct TableSpec {
    std::string_view message;  // the element's full name
    std::vector<Column> columns;
};

constexpr Show wide = Show::wide;

const std::vector<TableSpec>& table_specs() {
    static const std::vector<TableSpec> specs = {
        {"rof.v1.Tenant",
         {{"NAME", "name"},
          {"ID", "id"},
          {"STATE", "state"},
          {"MEMORY", "usage.region_bytes", "quota.region_bytes"},
          {"REGIONS", "usage.regions", "quota.regions"},
          {"SESSIONS", "usage.sessions", "quota.sessions"},
          {"PROGRAMS", "usage.programs", "quota.programs"},
          {"CREDITS", "quota.credits", {}, wide},
          {"FREELISTS", "usage.freelists", {}, wide},
          {"INVOCATIONS", "counters.invocations"},
          {"INVOKE_ERRORS", "counters.invoke_errors", {}, wide},
          {"COMPLETION_ERRORS", "counters.completion_errors", {}, wide},
          {"BYTES", "counters.bytes", {}, wide},
          {"INSNS", "counters.insns", {}, wide},
          {"SESSIONS_OPENED", "counters.sessions_opened", {}, wide},
          {"SESSIONS_CLOSED", "counters.sessions_closed", {}, wide},
          {"SESSIONS_REJECTED", "counters.sessions_rejected", {}, wide},
          {"AUDIT_DROPPED", "counters.audit_dropped", {}, wide},
          {"SESSION_RATE", "session_rate", {}, wide},
          {"TENANT_RATE", "tenant_rate", {}, wide},
          {"AUDIT", "audit", {}, wide},
          {"INVOKE_RECORDS", "invoke_records", {}, wide},
          {"DYING", "dying", {}, wide},
          {"GRANTED_REGIONS", "granted_regions", {}, wide},
          {"REMOVAL_DEADLINE", "removal_deadline", {}, wide}}},
        {"rof.v1.Region",
         {{"TENANT", "tenant"},
          {"NAME", "name"},
          {"ID", "id", {}, wide},
          {"SIZE", "size"},
          {"ACCESS", "access"},
          {"ORIGIN", "origin"},
          {"FREELISTS", "freelists", {}, Show::narrow, Fmt::count},
          {"ATTACHMENTS", "attachments"},
          {"MAPPINGS", "mappings", {}, wide},
          {"CHUNKS", "chunks", {}, wide},
          {"GRANTED_TO", "granted_to"},
          {"FREELISTS", "freelists", {}, wide}}},
        {"rof.v1.Program",
         {{"TENANT", "tenant"},
          {"NAME", "name"},
          {"TAG", "tag"},
          {"ORIGIN", "origin"},
          {"INSN_CNT", "insn_cnt"},
          {"BUDGET", "budget", {}, wide},
          {"BYTE_BUDGET", "byte_budget", {}, wide},
          {"ARGS_MIN", "args_min", {}, wide},
          {"ARGS_MAX", "args_max", {}, wide},
          {"SCRATCH_SIZE", "scratch_size", {}, wide},
          {"RESP_MAX", "resp_max", {}, wide},
          {"LOADED_AT", "loaded_at", {}, wide},
          {"INVOCATIONS", "invocations"},
          {"FAULTS", "faults"},
          {"INSNS", "insns", {}, wide},
          {"REVOKED", "revoked"},
          {"DEFERRED", "deferred"},
          {"REPLACED", "replaced", {}, wide},
          {"BINDS", "binds", {}, wide}}},
        {"rof.v1.Session",
         {{"ID", "id"},
          {"TENANT", "tenant"},
          {"STATE", "state"},
          {"DEVICE", "device"},
          {"PORT", "port_num"},
          {"CREDITS", "credits", {}, wide},
          {"PEER", "peer"},
          {"REGIONS", "regions"},
          {"REQUESTS", "counters.requests"},
          {"BYTES_IN", "counters.bytes_in", {}, wide},
          {"BYTES_OUT", "counters.bytes_out", {}, wide},
          {"DEFERRED", "counters.deferred", {}, wide},
          {"COMPLETION_ERRORS", "counters.completion_errors", {}, wide},
          {"BAD_REQUESTS", "counters.bad_requests", {}, wide},
          {"RATE", "rate", {}, wide},
          {"QP_PACED", "qp_paced", {}, wide},
          {"IDLE_TIMEOUT", "idle_timeout_ms", {}, wide},
          {"CONNECTED_AT", "connected_at", {}, wide},
          {"EXPIRES_AT", "expires_at", {}, wide}}},
    };
    return specs;
}

const FieldSpec* field_spec(const FD* f) {
    if (f == nullptr) {
        return nullptr;
    }
    static const std::map<std::string_view, const FieldSpec*> by_name = [] {
        std::map<std::string_view, const FieldSpec*> m;
        for (const FieldSpec& s : kFields) {
            m.emplace(s.field, &s);
        }
        return m;
    }();
    const auto it = by_name.find(f->full_name());
    return it == by_name.end() ? nullptr : it->second;
}

template <class Spec>
const Spec* find_spec(const std::vector<Spec>& specs, const pb::Descriptor* d) {
    if (d == nullptr) {
        return nullptr;
    }
    const auto it = std::find_if(specs.begin(), specs.end(),
                                 [d](const Spec& s) { return s.message == d->full_name(); });
    return it == specs.end() ? nullptr : &*it;
}

const pb::Descriptor* message_of(const FD* f) {
    return f != nullptr && f->cpp_type() == FD::CPPTYPE_MESSAGE ? f->message_type() : nullptr;
}

bool is_type(const FD* f, std::string_view full_name) {
    const pb::Descriptor* d = message_of(f);
    return d != nullptr && d->full_name() == full_name;
}

std::string upper(std::string_view s) {
    std::string out(s);
    for (char& c : out) {
        c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    }
    return out;
}

// "1.0" -> "1", "12.5" stays.
std::string trim_zero(std::string s) {
    if (s.size() > 2 && s.ends_with(".0")) {
        s.resize(s.size() - 2);
    }
    return s;
}

std::uint64_t as_u64(const Json& v) {
    return v.is_number_unsigned()  ? v.get<std::uint64_t>()
           : v.is_number_integer() ? static_cast<std::uint64_t>(v.get<std::int64_t>())
                                   : 0;
}

// More than one line: a newline before the last character.
bool multi_line(const std::string& s) {
    const auto nl = s.find('\n');
    return nl != std::string::npos && nl + 1 < s.size();
}

std::string scalar_text(const Json& j) {
    if (j.is_string()) {
        return j.get<std::string>();
    }
    if (j.is_null()) {
        return "-";
    }
    return j.dump();
}

}  // namespace

std::string human_size(std::uint64_t bytes) {
    static constexpr std::string_view units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    if (bytes < 1024) {
        return fmt::format("{} B", bytes);
    }
    std::size_t i = 0;
    std::uint64_t unit = 1024;
    while (i + 1 < std::size(units) && bytes / unit >= 1024) {
        unit *= 1024;
        i++;
    }
    if (bytes % unit == 0) {
        return fmt::format("{} {}", bytes / unit, units[i]);
    }
    return fmt::format("{:.1f} {}", static_cast<double>(bytes) / static_cast<double>(unit),
                       units[i]);
}

std::string human_duration_ns(double ns) {
    if (ns < 1e3) {
        return fmt::format("{}ns", static_cast<std::uint64_t>(ns));
    }
    if (ns < 1e6) {
        return trim_zero(fmt::format("{:.1f}", ns / 1e3)) + "us";
    }
    if (ns < 1e9) {
        return trim_zero(fmt::format("{:.1f}", ns / 1e6)) + "ms";
    }
    if (ns < 60e9) {
        return trim_zero(fmt::format("{:.1f}", ns / 1e9)) + "s";
    }
    auto s = static_cast<std::uint64_t>(ns / 1e9);
    static constexpr std::pair<char, std::uint64_t> parts[] = {
        {'d', 86400}, {'h', 3600}, {'m', 60}, {'s', 1}};
    std::string out;
    for (const auto& [unit, len] : parts) {
        if (s >= len) {
            out += fmt::format("{}{}", s / len, unit);
            s %= len;
        }
    }
    return out;
}

namespace {

std::string access_text(std::uint64_t bits) {
    static constexpr std::pair<std::uint64_t, char> letters[] = {{1, 'r'}, {2, 'w'}, {4, 'a'}};
    std::string out;
    for (const auto& [bit, letter] : letters) {
        if ((bits & bit) != 0) {
            out += letter;
        }
    }
    if ((bits & ~std::uint64_t{7}) != 0) {
        out += fmt::format("+{:#x}", bits & ~std::uint64_t{7});
    }
    return out.empty() ? "-" : out;
}

std::string value_text(const Json& v, const FD* f, std::optional<Fmt> fmt_override = {});

// A nested message on one line: its inline spec, else "key value, ...".
std::string inline_text(const Json& obj, const pb::Descriptor* d) {
    if (!obj.is_object()) {
        return value_text(obj, nullptr);
    }
    const InlineSpec* spec = find_spec(inline_specs(), d);
    std::string out;
    if (spec == nullptr) {
        for (const auto& [k, v] : obj.items()) {
            const std::string t = value_text(v, d != nullptr ? d->FindFieldByName(k) : nullptr);
            if (!t.empty()) {
                out += (out.empty() ? "" : ", ") + k + " " + t;
            }
        }
        return out.empty() ? "-" : out;
    }
    bool first = true;
    for (const InlineField& f : spec->fields) {
        const std::string name(f.name);
        if (!obj.contains(name)) {
            continue;
        }
        const std::string t = value_text(obj[name], d->FindFieldByName(name));
        if (t.empty()) {
            continue;
        }
        out += fmt::format("{}{}{}{}", first ? "" : spec->sep, f.prefix, t, f.suffix);
        first = false;
    }
    return out.empty() ? std::string(spec->none) : out;
}

// The text of a value in a cell or after "key: "; empty for what is better
// left out (an empty string, an unset timestamp, a zero that means none).
std::string value_text(const Json& v, const FD* f, std::optional<Fmt> fmt_override) {
    const FieldSpec* spec = field_spec(f);
    const Fmt fmt = fmt_override ? *fmt_override : spec != nullptr ? spec->fmt : Fmt::plain;
    if (fmt == Fmt::count && v.is_array()) {
        return std::to_string(v.size());
    }
    if (v.is_array()) {
        std::string out;
        for (const Json& e : v) {
            const std::string t = value_text(e, f);
            out += (out.empty() ? "" : ", ") + (t.empty() ? "-" : t);
        }
        return out;
    }
    if (v.is_object()) {
        return inline_text(v, message_of(f));
    }
    if (v.is_string() && v.get<std::string>().ends_with('\n') &&
        !multi_line(v.get<std::string>())) {
        const std::string& s = v.get<std::string>();
        return s.substr(0, s.size() - 1);
    }
    if (is_type(f, "google.protobuf.Timestamp")) {
        return v == "1970-01-01T00:00:00Z" ? "" : scalar_text(v);
    }
    if (is_type(f, "google.protobuf.Duration") && v.is_number()) {
        return human_duration_ns(v.get<double>() * 1e9);
    }
    if (!v.is_number() && fmt != Fmt::tag && fmt != Fmt::flag) {
        return scalar_text(v);
    }
    const std::uint64_t n = v.is_number() ? as_u64(v) : 0;
    switch (fmt) {
        case Fmt::plain:
        case Fmt::lines:
        case Fmt::count:
            return scalar_text(v);
        case Fmt::size:
            return human_size(n);
        case Fmt::bytes:
            return fmt::format("{} B", n);
        case Fmt::size_limit:
            return n == std::numeric_limits<std::uint64_t>::max() ? "unlimited" : human_size(n);
        case Fmt::count_limit:
            return n == std::numeric_limits<std::uint32_t>::max() ? "unlimited" : scalar_text(v);
        case Fmt::ms:
            return human_duration_ns(static_cast<double>(n) * 1e6);
        case Fmt::ns:
            return human_duration_ns(static_cast<double>(n));
        case Fmt::access:
            return access_text(n);
        case Fmt::ops_rate:
            return n == 0 ? "" : fmt::format("{} ops/s", n);
        case Fmt::bytes_rate:
            return n == 0 ? "" : human_size(n) + "/s";
        case Fmt::nonzero:
            return n == 0 ? "" : scalar_text(v);
        case Fmt::tag:
            return v == hex64(0) ? "" : scalar_text(v);
        case Fmt::flag:
            return v == true && f != nullptr ? upper(f->name()) : "";
    }
    return scalar_text(v);
}

// The value at a dotted @path of @row, and the field it is.
std::pair<const Json*, const FD*> at_path(const Json& row, const pb::Descriptor* d,
                                          std::string_view path) {
    const Json* at = &row;
    const FD* f = nullptr;
    while (!path.empty()) {
        const auto dot = path.find('.');
        const std::string key(path.substr(0, dot));
        path = dot == std::string_view::npos ? std::string_view() : path.substr(dot + 1);
        if (!at->is_object() || !at->contains(key)) {
            return {nullptr, nullptr};
        }
        at = &(*at)[key];
        f = d != nullptr ? d->FindFieldByName(key) : nullptr;
        d = message_of(f);
    }
    return {at, f};
}

std::string cell_text(const Json& row, const pb::Descriptor* d, const Column& c) {
    const auto [v, f] = at_path(row, d, c.path);
    if (v == nullptr) {
        return "";
    }
    std::string t = value_text(*v, f, c.fmt);
    if (!c.of.empty()) {
        const auto [limit, lf] = at_path(row, d, c.of);
        t += "/" + (limit == nullptr ? "-" : value_text(*limit, lf));
    }
    if (const auto nl = t.find('\n'); nl != std::string::npos) {
        t = t.substr(0, nl) + "...";
    }
    return t;
}

// The columns of a table of @rows of message @d: its spec's, else one per
// key of the rows in order.
std::vector<Column> columns_of(const Json& rows, const pb::Descriptor* d, bool wide_view) {
    std::vector<Column> cols;
    if (const TableSpec* spec = find_spec(table_specs(), d)) {
        for (const Column& c : spec->columns) {
            if (c.show == Show::always || (c.show == Show::wide) == wide_view) {
                cols.push_back(c);
            }
        }
        return cols;
    }
    std::vector<std::string> keys;
    for (const Json& row : rows) {
        for (const auto& [k, v] : row.items()) {
            if (std::find(keys.begin(), keys.end(), k) == keys.end()) {
                keys.push_back(k);
            }
        }
    }
    for (const std::string& k : keys) {
        const FieldSpec* s = field_spec(d != nullptr ? d->FindFieldByName(k) : nullptr);
        cols.push_back({upper(s != nullptr && !s->label.empty() ? s->label : k), k});
    }
    return cols;
}

void render_table(const Json& rows, const pb::Descriptor* d, bool wide_view,
                  const std::string& indent, std::ostream& os) {
    const std::vector<Column> cols = columns_of(rows, d, wide_view);
    std::vector<std::vector<std::string>> cells;
    for (const Json& row : rows) {
        cells.emplace_back();
        for (const Column& c : cols) {
            cells.back().push_back(cell_text(row, d, c));
        }
    }
    // No empty columns; an empty cell of a column kept is "-".
    std::vector<std::size_t> keep;
    std::vector<std::size_t> width;
    for (std::size_t i = 0; i < cols.size(); i++) {
        std::size_t w = 0;
        for (const auto& line : cells) {
            w = std::max(w, line[i].empty() ? 0 : line[i].size());
        }
        if (w > 0) {
            keep.push_back(i);
            width.push_back(std::max(w, cols[i].header.size()));
        }
    }
    auto line_of = [&](auto&& text_of) {
        std::string out = indent;
        for (std::size_t k = 0; k < keep.size(); k++) {
            const std::string t = text_of(keep[k]);
            out += t;
            if (k + 1 < keep.size()) {
                out += std::string(width[k] - t.size() + 2, ' ');
            }
        }
        os << out << '\n';
    };
    line_of([&](std::size_t i) { return cols[i].header; });
    for (const auto& line : cells) {
        line_of([&](std::size_t i) { return line[i].empty() ? std::string("-") : line[i]; });
    }
}

bool is_rows(const Json& j) {
    return j.is_array() && !j.empty() &&
           std::all_of(j.begin(), j.end(), [](const Json& e) { return e.is_object(); });
}

void render_block(const Json& obj, const pb::Descriptor* d, const std::string& indent,
                  std::ostream& os) {
    for (const auto& [k, v] : obj.items()) {
        const FD* f = d != nullptr ? d->FindFieldByName(k) : nullptr;
        const FieldSpec* spec = field_spec(f);
        const std::string key =
            spec != nullptr && !spec->label.empty() ? std::string(spec->label) : k;
        const pb::Descriptor* md = message_of(f);
        if (v.is_object() && find_spec(inline_specs(), md) == nullptr) {
            os << indent << key << ":\n";
            render_block(v, md, indent + "  ", os);
        } else if (is_rows(v)) {
            os << indent << key << ":\n";
            render_table(v, md, true, indent + "  ", os);
        } else if (v.is_array() && !v.empty() && spec != nullptr && spec->fmt == Fmt::lines) {
            os << indent << key << ":\n";
            for (const Json& e : v) {
                os << indent << "  " << scalar_text(e) << '\n';
            }
        } else if (v.is_array()) {
            os << indent << key << ": " << (v.empty() ? "-" : value_text(v, f)) << '\n';
        } else if (v.is_string() && multi_line(v.get<std::string>())) {
            os << indent << key << ":\n";
            std::istringstream lines(v.get<std::string>());
            for (std::string line; std::getline(lines, line);) {
                os << indent << "  " << line << '\n';
            }
        } else if (const std::string t = value_text(v, f); !t.empty()) {
            os << indent << key << ": " << t << '\n';
        }
    }
}

// A List*Response: its one field, a repeated message.
const FD* list_field(const pb::Descriptor* d) {
    if (d == nullptr || d->field_count() != 1) {
        return nullptr;
    }
    const FD* f = d->field(0);
    return f->is_repeated() && f->cpp_type() == FD::CPPTYPE_MESSAGE ? f : nullptr;
}

// A tree no message describes (one a command builds) spells a program tag
// and bytes as the JSON does; these keys are read back as such.
enum class Spelled { fixed64, bytes };
const std::pair<std::string_view, Spelled> kTreeKeys[] = {
    {"tag", Spelled::fixed64},
    {"response", Spelled::bytes},
    {"old", Spelled::bytes},
    {"new", Spelled::bytes},
};

Json fixed64_text(const Json& v) {
    std::uint64_t n = 0;
    const std::string& s = v.get_ref<const std::string&>();
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
    return ec == std::errc() && end == s.data() + s.size() ? Json(hex64(n)) : v;
}

Json bytes_text(const Json& v) {
    const auto b = unbase64(v.get_ref<const std::string&>());
    return b ? Json(hex_bytes(*b)) : v;
}

template <class T>
Json number_of(const Json& v) {
    T n{};
    const std::string& s = v.get_ref<const std::string&>();
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
    return ec == std::errc() && end == s.data() + s.size() ? Json(n) : v;
}

// A scalar of field @f, from the canonical JSON spelling to the one the
// renderer reads: 64-bit integers numbers, tags "0x...", enum values
// without their prefix, bytes hex, a Duration a number of seconds.
Json scalar_for_text(const Json& v, const FD& f) {
    if (!v.is_string()) {
        return v;
    }
    const std::string& s = v.get_ref<const std::string&>();
    if (is_type(&f, "google.protobuf.Duration")) {
        const std::string_view n =
            s.ends_with('s') ? std::string_view(s).substr(0, s.size() - 1) : std::string_view(s);
        double sec = 0;
        const auto [end, ec] = std::from_chars(n.data(), n.data() + n.size(), sec);
        return ec == std::errc() && end == n.data() + n.size() ? Json(sec) : v;
    }
    switch (f.type()) {
        case FD::TYPE_INT64:
        case FD::TYPE_SINT64:
        case FD::TYPE_SFIXED64:
            return number_of<std::int64_t>(v);
        case FD::TYPE_UINT64:
            return number_of<std::uint64_t>(v);
        case FD::TYPE_FIXED64:
            return fixed64_text(v);
        case FD::TYPE_ENUM: {
            const pb::EnumValueDescriptor* e = f.enum_type()->FindValueByName(s);
            return e != nullptr ? Json(enum_value_name(*e)) : v;
        }
        case FD::TYPE_BYTES:
            return bytes_text(v);
        default:
            return v;
    }
}

Json tree_for_text(const Json& tree, const pb::Descriptor* d);

Json value_for_text(const Json& v, const FD& f) {
    if (v.is_array()) {
        Json out = Json::array();
        for (const Json& e : v) {
            out.push_back(value_for_text(e, f));
        }
        return out;
    }
    if (v.is_object()) {
        return tree_for_text(v, message_of(&f));
    }
    return scalar_for_text(v, f);
}

// The tree as the renderer reads it.  A message's fields in field order,
// an unset message field (the JSON leaves it out) as its default, so the
// text shows what it showed when every field was printed.  A tree no
// message describes: the keys of kTreeKeys read back.
Json tree_for_text(const Json& tree, const pb::Descriptor* d) {
    if (d == nullptr) {
        if (tree.is_array()) {
            Json out = Json::array();
            for (const Json& e : tree) {
                out.push_back(tree_for_text(e, nullptr));
            }
            return out;
        }
        if (!tree.is_object()) {
            return tree;
        }
        Json out = Json::object();
        for (const auto& item : tree.items()) {
            const std::string& k = item.key();
            const Json& v = item.value();
            const auto* key = std::find_if(std::begin(kTreeKeys), std::end(kTreeKeys),
                                           [&k](const auto& e) { return e.first == k; });
            if (key != std::end(kTreeKeys) && v.is_string()) {
                out[k] = key->second == Spelled::fixed64 ? fixed64_text(v) : bytes_text(v);
            } else {
                out[k] = tree_for_text(v, nullptr);
            }
        }
        return out;
    }
    if (!tree.is_object()) {
        return tree;
    }
    Json out = Json::object();
    for (int i = 0; i < d->field_count(); i++) {
        const FD& f = *d->field(i);
        if (tree.contains(f.name())) {
            out[f.name()] = value_for_text(tree[f.name()], f);
        } else if (f.cpp_type() == FD::CPPTYPE_MESSAGE && !f.is_repeated() &&
                   f.real_containing_oneof() == nullptr) {
            const pb::Message* def =
                pb::MessageFactory::generated_factory()->GetPrototype(f.message_type());
            if (def != nullptr) {
                out[f.name()] = value_for_text(to_json(*def), f);
            }
        }
    }
    for (const auto& [k, v] : tree.items()) {
        if (!out.contains(k)) {
            out[k] = v;
        }
    }
    return out;
}

}  // namespace

std::vector<std::string> text_spec_errors() {
    std::vector<std::string> errors;
    const pb::DescriptorPool& pool = *pb::DescriptorPool::generated_pool();
    auto message = [&](std::string_view name) {
        const pb::Descriptor* d = pool.FindMessageTypeByName(std::string(name));
        if (d == nullptr) {
            errors.push_back(std::string(name) + ": no such message");
        }
        return d;
    };
    for (const FieldSpec& s : kFields) {
        if (pool.FindFieldByName(std::string(s.field)) == nullptr) {
            errors.push_back(std::string(s.field) + ": no such field");
        }
    }
    for (const InlineSpec& s : inline_specs()) {
        if (const pb::Descriptor* d = message(s.message)) {
            for (const InlineField& f : s.fields) {
                if (d->FindFieldByName(std::string(f.name)) == nullptr) {
                    errors.push_back(std::string(s.message) + "." + std::string(f.name) +
                                     ": no such field");
                }
            }
        }
    }
    for (const TableSpec& s : table_specs()) {
        const pb::Descriptor* d = message(s.message);
        for (const Column& c : s.columns) {
            for (const std::string& path : {c.path, c.of}) {
                const pb::Descriptor* at = d;
                std::string_view rest = path;
                while (at != nullptr && !rest.empty()) {
                    const auto dot = rest.find('.');
                    const FD* f = at->FindFieldByName(std::string(rest.substr(0, dot)));
                    if (f == nullptr) {
                        errors.push_back(std::string(s.message) + " column " + c.header + ": " +
                                         path + ": no such field");
                    }
                    rest = dot == std::string_view::npos ? "" : rest.substr(dot + 1);
                    at = message_of(f);
                }
            }
        }
    }
    return errors;
}

std::string render_text(const Json& canonical, const pb::Descriptor* type, bool wide_view) {
    const Json tree = tree_for_text(canonical, type);
    std::ostringstream os;
    const FD* lf = list_field(type);
    const bool generic_list = type == nullptr && tree.is_object() && tree.size() == 1 &&
                              tree.begin()->is_array() &&
                              std::all_of(tree.begin()->begin(), tree.begin()->end(),
                                          [](const Json& e) { return e.is_object(); });
    if ((lf != nullptr && tree.is_object() && tree.contains(lf->name())) || generic_list) {
        const Json& rows = lf != nullptr ? tree[lf->name()] : *tree.begin();
        if (rows.empty()) {
            os << "no " << (lf != nullptr ? lf->name() : tree.begin().key()) << "\n";
        } else {
            render_table(rows, message_of(lf), wide_view, "", os);
        }
    } else if (tree.is_object()) {
        render_block(tree, type, "", os);
    } else {
        os << scalar_text(tree) << '\n';
    }
    return os.str();
}

}  // namespace rofctl
