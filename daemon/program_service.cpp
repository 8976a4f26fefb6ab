// SPDX-License-Identifier: MIT
// rof.v1.Programs: assemble, verify against the tenant's policy and
// regions, load; the source and disassembly are kept in the store.
#include <fmt/format.h>

#include <chrono>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <utility>

#include "call.h"
#include "rof/prog/asm.h"
#include "rof/prog/verifier.h"
#include "services.h"

namespace rofd {
namespace {

namespace prog = rof::prog;
namespace policy = rof::policy;

constexpr std::size_t source_max = 1 << 20;  // bytes of .rofs text

// The instruction class of an opcode byte; 0 for EXIT/EXIT_REG/RESPOND,
// which every program may use, and for the second slot of a wide one.
std::uint32_t insn_class(std::uint8_t op) {
    if (op == ROF_OP_LDIMM64 || (op >= ROF_OP_ALU64_IMM && op < ROF_OP_JMP64_IMM)) {
        return policy::insn_alu;
    }
    if (op == ROF_OP_JA || (op >= ROF_OP_JMP64_IMM && op < ROF_OP_JMP32_REG + 0x10)) {
        return policy::insn_jmp;
    }
    switch (op) {
        case ROF_OP_COPY:
            return policy::insn_copy;
        case ROF_OP_CAS:
        case ROF_OP_FAA:
            return policy::insn_atomic;
        case ROF_OP_ALLOC:
        case ROF_OP_FREE:
            return policy::insn_alloc;
        case ROF_OP_CRC64:
        case ROF_OP_HASH:
            return policy::insn_hash;
        case ROF_OP_LOOP:
            return policy::insn_loop;
        default:
            break;
    }
    if (op >= ROF_OP_LD && op < ROF_OP_ST) {
        return policy::insn_ld;
    }
    if (op >= ROF_OP_ST && op < ROF_OP_ST + 4) {
        return policy::insn_st;
    }
    return 0;
}

struct Prepared {
    prog::Program program;
    std::vector<std::uint8_t> image;
    std::vector<StoredBind> binds;
    rof_prog_load load{};  // tenant, bind[] filled
    prog::VerifyResult result;
    std::string error;  // assembly error or policy refusal; verify result otherwise
};

// Assembles or decodes, binds slots to regions by name, checks the
// tenant's program limits and classes, and verifies.  @v is the view the
// call checked @tenant against.
Prepared prepare(Manager& m, const View& v, const std::string& tenant, const v1::ProgramSource& src,
                 const google::protobuf::RepeatedPtrField<v1::Bind>& binds,
                 std::uint32_t log_level) {
    Prepared out;
    const std::string file = src.file().empty() ? "<program>" : src.file();
    if (src.has_text()) {
        if (src.text().size() > source_max) {
            throw CallError(
                grpc::StatusCode::INVALID_ARGUMENT,
                fmt::format("source.text: {} bytes; at most {}", src.text().size(), source_max));
        }
        auto as = prog::assemble(src.text(), file);
        if (!as.ok()) {
            out.error = as.error_text();
            while (!out.error.empty() && out.error.back() == '\n') {
                out.error.pop_back();
            }
            return out;
        }
        out.program = std::move(*as.program);
    } else if (src.has_image()) {
        if (src.image().size() > ROF_PROG_IMAGE_MAX) {
            throw CallError(grpc::StatusCode::INVALID_ARGUMENT,
                            fmt::format("source.image: {} bytes; at most {}", src.image().size(),
                                        ROF_PROG_IMAGE_MAX));
        }
        const auto* b = reinterpret_cast<const std::uint8_t*>(src.image().data());
        auto p = prog::decode_image({b, src.image().size()});
        if (!p) {
            out.error = file + ": " + p.error;
            return out;
        }
        out.program = std::move(*p);
    } else {
        throw CallError(grpc::StatusCode::INVALID_ARGUMENT, "source: neither text nor image given");
    }
    prog::Program& p = out.program;

    const auto* pt = v.tenant(tenant);
    if (pt == nullptr) {
        throw CallError(grpc::StatusCode::NOT_FOUND,
                        "tenant " + quoted(tenant) + ": not in policy");
    }
    const policy::ProgramLimits& lim = pt->programs;
    for (std::size_t pc = 0; pc < p.insns.size(); pc++) {
        const std::uint32_t cls = insn_class(p.insns[pc].op);
        if (cls != 0 && (lim.classes & cls) == 0) {
            out.error = p.where(static_cast<std::uint32_t>(pc)) + ": instruction class " +
                        std::string(policy::insn_class_name(static_cast<policy::InsnClass>(cls))) +
                        " is not allowed by tenant " + quoted(tenant) + "'s policy";
            return out;
        }
    }

    if (binds.size() != 0 && static_cast<std::size_t>(binds.size()) != p.slots.size()) {
        throw CallError(grpc::StatusCode::INVALID_ARGUMENT,
                        fmt::format("binds: {} given; the program declares {} slots", binds.size(),
                                    p.slots.size()));
    }
    const std::uint32_t tid = Manager::tenant_id(v, tenant);
    std::vector<prog::Grant> grants;
    out.load.tenant = tid;
    out.load.nbind = static_cast<std::uint32_t>(p.slots.size());
    for (std::size_t i = 0; i < p.slots.size(); i++) {
        const auto& slot = p.slots[i];
        StoredBind sb{slot.name, -1};
        if (binds.size() != 0) {
            const auto& b = binds[static_cast<int>(i)];
            sb.region = b.region().empty() ? slot.name : b.region();
            if (b.has_freelist()) {
                // StoredBind keeps -1 for "no list": a number beyond int
                // would wrap to a negative one and bind the first list.
                constexpr auto max = std::numeric_limits<std::int32_t>::max();
                if (b.freelist() > static_cast<std::uint32_t>(max)) {
                    throw CallError(
                        grpc::StatusCode::INVALID_ARGUMENT,
                        fmt::format("binds[{}].freelist: {}; at most {}", i, b.freelist(), max));
                }
                sb.freelist = static_cast<std::int32_t>(b.freelist());
            }
        }
        check_name(fmt::format("binds[{}].region", i), sb.region);
        if ((slot.flags & ROF_SLOT_FREELIST) != 0 && sb.freelist < 0) {
            sb.freelist = 0;  // a free-list slot binds the region's first list by default
        }
        const auto r = m.find_region(tid, sb.region);
        if (!r) {
            throw CallError(grpc::StatusCode::FAILED_PRECONDITION,
                            fmt::format("slot {}: {}: no such region", slot.name,
                                        object_name(tenant, "region", sb.region)));
        }
        out.load.bind[i].region = r->id;
        if (sb.freelist >= 0) {
            const auto fls = m.freelists_of(r->id);
            if (static_cast<std::size_t>(sb.freelist) >= fls.size()) {
                throw CallError(grpc::StatusCode::FAILED_PRECONDITION,
                                fmt::format("slot {}: {} has no free list {}", slot.name,
                                            object_name(tenant, "region", sb.region), sb.freelist));
            }
            out.load.bind[i].freelist = fls[static_cast<std::size_t>(sb.freelist)].id;
        }
        grants.push_back(prog::Grant{slot.name, r->access, r->size});
        out.binds.push_back(sb);
    }

    prog::VerifyOptions opt;
    opt.limits.max_insns = lim.max_insns;
    opt.limits.max_worst_case = lim.max_executed;
    opt.limits.max_trip = lim.max_trip;
    opt.grants = std::move(grants);
    opt.log_level = static_cast<int>(std::min<std::uint32_t>(log_level, 2));
    out.result = prog::verify(p, opt);
    out.image = p.encode();
    out.load.budget = std::max<std::uint64_t>(out.result.worst_case, 1);
    out.load.byte_budget = lim.max_bytes;
    return out;
}

// @stored: rofd's row of the program (nullptr: none), for the origin, the
// binds by name and, when @full, the source and disassembly.
void fill_program(const View& v, const StoredProgram* stored, const rof_prog_info& info,
                  v1::Program* out, bool full) {
    const std::string tenant = v.name_of(info.tenant);
    out->set_tenant(tenant);
    out->set_name(abi_name(info.name));
    out->set_tag(info.tag);
    out->set_budget(info.budget);
    out->set_byte_budget(info.byte_budget);
    out->set_insn_cnt(info.insn_cnt);
    out->set_args_min(info.args_min);
    out->set_args_max(info.args_max);
    out->set_scratch_size(info.scratch_size);
    out->set_resp_max(info.resp_max);
    out->mutable_loaded_at()->set_seconds(static_cast<std::int64_t>(info.loaded_ns / 1000000000));
    out->set_invocations(info.invocations);
    out->set_faults(info.faults);
    out->set_insns(info.insns);
    out->set_revoked((info.flags & ROF_PROG_REVOKED) != 0);
    out->set_deferred((info.flags & ROF_PROG_DEFERRED) != 0);
    out->set_replaced(info.aliases);
    out->set_origin(v1::ORIGIN_MODULE);
    if (stored == nullptr || stored->tenant != tenant || stored->tag != info.tag) {
        return;
    }
    out->set_origin(v1::ORIGIN_API);
    for (const auto& b : stored->binds) {
        auto* pb = out->add_binds();
        pb->set_region(b.region);
        if (b.freelist >= 0) {
            pb->set_freelist(static_cast<std::uint32_t>(b.freelist));
        }
    }
    if (full) {
        out->set_source(stored->source);
        out->set_disassembly(stored->disassembly);
    }
}

// The program a request names by tag or by name.
std::optional<rof_prog_info> find_program(Manager& m, std::uint32_t tid, std::uint64_t tag,
                                          const std::string& name) {
    for (const auto& p : m.module().list_progs()) {
        if (p.tenant == tid &&
            ((tag != 0 && p.tag == tag) || (tag == 0 && abi_name(p.name) == name))) {
            return p;
        }
    }
    return std::nullopt;
}

std::string program_what(const std::string& tenant, std::uint64_t tag, const std::string& name) {
    return tag != 0 ? fmt::format("tenant {}: program tag {:x}", quoted(tenant), tag)
                    : object_name(tenant, "program", name);
}

// What the first step of a load or a replace hands the worker.
struct Staged {
    std::string tenant;
    std::string what;
    Prepared pr;
    Manager::Idempotency id;  // resume() fills it
};

// The first step of LoadProgram and ReplaceProgram, on gRPC's thread:
// assembling and verifying is the slow part, so one tenant's large
// programs never hold up another tenant's state changes on the worker.
// A std::nullopt: go on to the worker with @st filled.  @tag: the program
// a replace names by tag (its @name may then be empty).
std::optional<grpc::Status> stage(Manager& m, CallbackServerContext* ctx, const Principal& p,
                                  const std::string& method, const google::protobuf::Message& req,
                                  const std::string& req_tenant, const std::string& name,
                                  const v1::ProgramSource& src,
                                  const google::protobuf::RepeatedPtrField<v1::Bind>& binds,
                                  const std::string& key, v1::Program* resp, Staged& st,
                                  std::uint64_t tag = 0) {
    const auto v = m.view();
    st.tenant = m.tenant_of(*v, p, req_tenant);
    if (tag == 0 || !name.empty()) {
        check_name("name", name);
    }
    st.what = program_what(st.tenant, name.empty() ? tag : 0, name);
    if (auto s = m.authorize(p, st.tenant, Right::write, st.what); !s.ok()) {
        return s;
    }
    // A retry of a call that succeeded gets its answer, not a new verdict.
    const auto id = Manager::idempotency(p, method, req, key, st.tenant);
    if (auto s = m.replay(id, resp)) {
        return *s;
    }
    st.pr = prepare(m, *v, st.tenant, src, binds, 1);
    const Prepared& pr = st.pr;
    if (!pr.error.empty() || !pr.result.ok) {
        const std::string reason = !pr.error.empty() ? pr.error : pr.result.error;
        if (!pr.result.log.empty()) {
            ctx->AddTrailingMetadata("rof-verifier-log-bin", pr.result.log);
        }
        return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, st.what + ": rejected: " + reason);
    }
    std::snprintf(st.pr.load.name, sizeof(st.pr.load.name), "%s", name.c_str());
    return std::nullopt;
}

// The second step's start, on the worker, where reloads run too: the
// tenant may have left the policy, or been made anew, since its program
// was verified; and a retry of a call that succeeded meanwhile is
// answered.  A std::nullopt: go on, with @st.id filled.
std::optional<grpc::Status> resume(Manager& m, const View& v, const Principal& p,
                                   const std::string& method, const google::protobuf::Message& req,
                                   const std::string& key, Staged& st, v1::Program* resp) {
    const auto tid = v.tenant_id.find(st.tenant);
    if (v.tenant(st.tenant) == nullptr || tid == v.tenant_id.end() ||
        tid->second != st.pr.load.tenant) {
        return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                            st.what + ": the policy changed while it was verified; retry");
    }
    st.id = Manager::idempotency(p, method, req, key, st.tenant);
    return m.replay(st.id, resp);
}

// rofd's row of a program about to be loaded, in intent.
StoredProgram new_row(const std::string& tenant, const std::string& name,
                      const v1::ProgramSource& src, const Prepared& pr) {
    StoredProgram row;
    row.tenant = tenant;
    row.name = name;
    row.tag = pr.program.tag();
    row.source = src.has_text() ? src.text() : "";
    row.image = pr.image;
    row.disassembly = prog::disassemble(pr.program);
    row.binds = pr.binds;
    row.budget = pr.load.budget;
    row.byte_budget = pr.load.byte_budget;
    row.created_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count();
    row.state = RowState::intent;
    return row;
}

// The bytes Store::program_bytes() counts of @p.
std::uint64_t stored_size(const StoredProgram& p) {
    return p.source.size() + p.image.size() + p.disassembly.size();
}

std::uint64_t stored_size(const std::optional<StoredProgram>& p) {
    return p ? stored_size(*p) : 0;
}

// What rofd keeps of a tenant's programs is bounded: a source may be 1 MiB,
// and a list reads the index of every row.  @previous: the row @row
// overwrites; @leaving: the row a replace removes.
std::optional<grpc::Status> check_stored_bytes(Manager& m, const View& v, const std::string& what,
                                               const StoredProgram& row,
                                               const std::optional<StoredProgram>& previous,
                                               const std::optional<StoredProgram>& leaving) {
    const std::uint64_t cap = v.tenant(row.tenant)->programs.stored_bytes;
    const std::uint64_t adding = stored_size(row);
    const std::uint64_t kept =
        m.store().program_bytes(row.tenant) - stored_size(previous) - stored_size(leaving);
    if (kept + adding > cap) {
        return grpc::Status(
            grpc::StatusCode::RESOURCE_EXHAUSTED,
            fmt::format("{}: {} bytes of source, image and disassembly to keep; tenant {} "
                        "keeps {} of at most {} (programs.stored_bytes)",
                        what, adding, quoted(row.tenant), kept, cap));
    }
    return std::nullopt;
}

// A load the module refused: the row of @tag as it was before.
void restore_row(Manager& m, const std::string& tenant, std::uint64_t tag,
                 const std::optional<StoredProgram>& previous) {
    if (previous) {
        m.store().put_program(*previous);
    } else {
        m.store().delete_program(tenant, tag);
    }
}

// The module took @row's program (in place of @replaced's): commits the
// row, drops the replaced one's and records the call's answer.
void commit_row(Manager& m, const View& v, const Manager::Idempotency& id, StoredProgram& row,
                std::optional<std::uint64_t> replaced, v1::Program* resp) {
    const auto tid = Manager::tenant_id(v, row.tenant);
    const auto info = m.module().get_prog(tid, row.tag);
    row.state = RowState::committed;
    m.store().transaction([&] {
        m.store().put_program(row);
        if (replaced) {
            m.store().delete_program(row.tenant, *replaced);
        }
        if (info) {
            fill_program(v, &row, *info, resp, false);
        }
        m.record(id, *resp);
    });
}

}  // namespace

ServerUnaryReactor* ProgramService::VerifyProgram(CallbackServerContext* ctx,
                                                  const v1::VerifyProgramRequest* req,
                                                  v1::VerifyProgramResponse* resp) {
    return unary(m_, ctx, "VerifyProgram", CallKind::read, [this, req, resp](const Principal& p) {
        // One view for the check and the verification: a reload may race a read.
        const auto v = m_.view();
        const std::string tenant = m_.tenant_of(*v, p, req->tenant());
        if (auto st =
                m_.authorize(p, tenant, Right::write, "tenant " + quoted(tenant) + ": programs");
            !st.ok()) {
            return st;
        }
        if (req->log_level() > 2) {
            return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                                fmt::format("log_level: {}; 0, 1 or 2", req->log_level()));
        }
        const Prepared pr = prepare(m_, *v, tenant, req->source(), req->binds(), req->log_level());
        if (!pr.error.empty()) {
            resp->set_ok(false);
            resp->set_error(pr.error);
            return grpc::Status::OK;
        }
        resp->set_ok(pr.result.ok);
        resp->set_error(pr.result.error);
        resp->set_error_insn(pr.result.error_insn);
        resp->set_log(pr.result.log);
        resp->set_worst_case(pr.result.worst_case);
        resp->set_tag(pr.program.tag());
        return grpc::Status::OK;
    });
}

ServerUnaryReactor* ProgramService::LoadProgram(CallbackServerContext* ctx,
                                                const v1::LoadProgramRequest* req,
                                                v1::Program* resp) {
    auto staged = std::make_shared<Staged>();
    auto check = [this, ctx, req, resp, staged](const Principal& p) -> std::optional<grpc::Status> {
        return stage(m_, ctx, p, "LoadProgram", *req, req->tenant(), req->name(), req->source(),
                     req->binds(), req->idempotency_key(), resp, *staged);
    };
    return unary(
        m_, ctx, "LoadProgram", CallKind::write,
        [this, req, resp, staged](const Principal& p) {
            const auto v = m_.view();
            if (auto st =
                    resume(m_, *v, p, "LoadProgram", *req, req->idempotency_key(), *staged, resp)) {
                return *st;
            }
            const std::string& tenant = staged->tenant;
            const std::string& what = staged->what;
            const auto& id = staged->id;
            Prepared& pr = staged->pr;
            // The store keys programs by (tenant, tag): an intent row for an
            // image the module holds already would replace that program's
            // committed row, and the module's EEXIST would then delete it.
            // So a loaded image is refused before anything is written.
            if (const auto loaded = m_.module().get_prog(pr.load.tenant, pr.program.tag())) {
                // A retry of a load that rofd died in: the program it loaded
                // (reconciliation committed its intent) is the answer.
                if (m_.interrupted(id)) {
                    auto stored = m_.store().program(tenant, loaded->tag);
                    if (stored && stored->state == RowState::committed &&
                        stored->name == req->name()) {
                        fill_program(*v, &*stored, *loaded, resp, false);
                        m_.store().transaction([&] { m_.record(id, *resp); });
                        return grpc::Status::OK;
                    }
                }
                return grpc::Status(grpc::StatusCode::ALREADY_EXISTS,
                                    fmt::format("{}: tag {:x} is loaded already as {}", what,
                                                loaded->tag, quoted(abi_name(loaded->name))));
            }
            StoredProgram row = new_row(tenant, req->name(), req->source(), pr);
            // A row of this tag the module does not hold (it lost it) is
            // replaced by the intent, and put back if the load fails.
            const auto previous = m_.store().program(tenant, row.tag);
            if (auto st = check_stored_bytes(m_, *v, what, row, previous, std::nullopt)) {
                return *st;
            }
            m_.store().transaction([&] {
                m_.store().put_program(row);
                m_.begin(id);
            });
            try {
                m_.module().prog_load(pr.load, pr.image);
            } catch (const KmodError& e) {
                restore_row(m_, tenant, row.tag, previous);
                if (e.code().value() == EEXIST) {
                    return grpc::Status(
                        grpc::StatusCode::ALREADY_EXISTS,
                        fmt::format("{}: tag {:x} is loaded already", what, row.tag));
                }
                return module_status(e, what);
            }
            commit_row(m_, *v, id, row, std::nullopt, resp);
            return grpc::Status::OK;
        },
        check);
}

ServerUnaryReactor* ProgramService::ReplaceProgram(CallbackServerContext* ctx,
                                                   const v1::ReplaceProgramRequest* req,
                                                   v1::Program* resp) {
    auto staged = std::make_shared<Staged>();
    auto check = [this, ctx, req, resp, staged](const Principal& p) -> std::optional<grpc::Status> {
        return stage(m_, ctx, p, "ReplaceProgram", *req, req->tenant(), req->name(), req->source(),
                     req->binds(), req->idempotency_key(), resp, *staged, req->tag());
    };
    return unary(
        m_, ctx, "ReplaceProgram", CallKind::write,
        [this, req, resp, staged](const Principal& p) {
            const auto v = m_.view();
            if (auto st = resume(m_, *v, p, "ReplaceProgram", *req, req->idempotency_key(), *staged,
                                 resp)) {
                return *st;
            }
            const std::string& tenant = staged->tenant;
            const std::string& what = staged->what;
            const auto& id = staged->id;
            Prepared& pr = staged->pr;
            const std::uint32_t tid = pr.load.tenant;
            std::optional<rof_prog_info> old;
            if (req->tag() != 0) {
                old = m_.module().get_prog(tid, req->tag());
            } else {
                std::size_t named = 0;
                for (const auto& info : m_.module().list_progs()) {
                    if (info.tenant == tid && abi_name(info.name) == req->name()) {
                        named++;
                        old = info;
                    }
                }
                if (named > 1) {
                    return grpc::Status(
                        grpc::StatusCode::FAILED_PRECONDITION,
                        fmt::format("{}: {} programs have this name; give the tag of the one "
                                    "to replace",
                                    what, named));
                }
            }
            if (!old) {
                // A retry by tag of a replace rofd died in after the swap.
                const auto now = m_.module().get_prog(tid, pr.program.tag());
                if (now && m_.interrupted(id)) {
                    const auto stored = m_.store().program(tenant, now->tag);
                    fill_program(*v, stored ? &*stored : nullptr, *now, resp, false);
                    m_.store().transaction([&] { m_.record(id, *resp); });
                    return grpc::Status::OK;
                }
                return grpc::Status(grpc::StatusCode::NOT_FOUND, what + ": not loaded");
            }
            const std::string name = req->name().empty() ? abi_name(old->name) : req->name();
            const auto old_row = m_.store().program(tenant, old->tag);
            // The same image: nothing to swap.  A retry of a replace rofd
            // died in after the swap ends here too (reconciliation dropped
            // the old row and committed the new one).
            if (old->tag == pr.program.tag()) {
                fill_program(*v, old_row ? &*old_row : nullptr, *old, resp, false);
                m_.store().transaction([&] { m_.record(id, *resp); });
                return grpc::Status::OK;
            }
            if (const auto loaded = m_.module().get_prog(tid, pr.program.tag())) {
                return grpc::Status(grpc::StatusCode::ALREADY_EXISTS,
                                    fmt::format("{}: tag {:x} is loaded already as {}", what,
                                                loaded->tag, quoted(abi_name(loaded->name))));
            }
            std::snprintf(pr.load.name, sizeof(pr.load.name), "%s", name.c_str());
            StoredProgram row = new_row(tenant, name, req->source(), pr);
            const auto previous = m_.store().program(tenant, row.tag);
            if (auto st = check_stored_bytes(m_, *v, what, row, previous, old_row)) {
                return *st;
            }
            // Both rows in intent before the swap: reconciliation after a
            // crash keeps whichever of the two the module holds.
            m_.store().transaction([&] {
                m_.store().put_program(row);
                if (old_row) {
                    StoredProgram o = *old_row;
                    o.state = RowState::intent;
                    m_.store().put_program(o);
                }
                m_.begin(id);
            });
            try {
                m_.module().prog_replace(pr.load, pr.image, old->tag);
            } catch (const KmodError& e) {
                restore_row(m_, tenant, row.tag, previous);
                if (old_row) {
                    m_.store().put_program(*old_row);
                }
                switch (e.code().value()) {
                    case EEXIST:
                        return grpc::Status(
                            grpc::StatusCode::ALREADY_EXISTS,
                            fmt::format("{}: tag {:x} is loaded already", what, row.tag));
                    case ENOENT:
                        return grpc::Status(
                            grpc::StatusCode::NOT_FOUND,
                            fmt::format("{}: tag {:x} was unloaded meanwhile", what, old->tag));
                    default:
                        return module_status(e, what);
                }
            }
            commit_row(m_, *v, id, row, old->tag, resp);
            return grpc::Status::OK;
        },
        check);
}

ServerUnaryReactor* ProgramService::UnloadProgram(CallbackServerContext* ctx,
                                                  const v1::UnloadProgramRequest* req,
                                                  v1::UnloadProgramResponse* resp) {
    return unary(m_, ctx, "UnloadProgram", CallKind::write, [this, req, resp](const Principal& p) {
        const std::string tenant = m_.tenant_of(p, req->tenant());
        if (req->tag() == 0) {
            check_name("name", req->name());
        }
        const std::string what = program_what(tenant, req->tag(), req->name());
        if (auto st = m_.authorize(p, tenant, Right::write, what); !st.ok()) {
            return st;
        }
        const auto id =
            Manager::idempotency(p, "UnloadProgram", *req, req->idempotency_key(), tenant);
        if (auto st = m_.replay(id, resp)) {
            return *st;
        }
        const auto info = find_program(m_, m_.tenant_id(tenant), req->tag(), req->name());
        if (!info) {
            // A retry of an unload that rofd died in: the program is gone.
            if (m_.interrupted(id)) {
                m_.store().transaction([&] { m_.record(id, *resp); });
                return grpc::Status::OK;
            }
            return grpc::Status(grpc::StatusCode::NOT_FOUND, what + ": not loaded");
        }
        m_.store().transaction([&] {
            if (auto s = m_.store().program(tenant, info->tag)) {
                s->state = RowState::intent;
                m_.store().put_program(*s);
            }
            m_.begin(id);
        });
        try {
            m_.module().prog_unload(info->tenant, info->tag);
        } catch (const KmodError& e) {
            if (e.code().value() != ENOENT) {
                return module_status(e, what);
            }
        }
        m_.store().transaction([&] {
            m_.store().delete_program(tenant, info->tag);
            m_.record(id, *resp);
        });
        return grpc::Status::OK;
    });
}

ServerUnaryReactor* ProgramService::ListPrograms(CallbackServerContext* ctx,
                                                 const v1::ListProgramsRequest* req,
                                                 v1::ListProgramsResponse* resp) {
    return unary(m_, ctx, "ListPrograms", CallKind::read, [this, req, resp](const Principal& p) {
        const std::string tenant =
            req->tenant().empty() && p.admin() ? "" : m_.tenant_of(p, req->tenant());
        if (auto st =
                m_.authorize(p, tenant, Right::read, "tenant " + quoted(tenant) + ": programs");
            !st.ok()) {
            return st;
        }
        const auto v = m_.view();
        // The rows without their source, image and disassembly: a list
        // must not read every tenant's programs whole.
        std::map<std::pair<std::string, std::uint64_t>, StoredProgram> stored;
        for (auto& s : m_.store().program_index(tenant)) {
            auto key = std::make_pair(s.tenant, s.tag);
            stored.emplace(std::move(key), std::move(s));
        }
        for (const auto& info : m_.module().list_progs()) {
            const std::string name = v->name_of(info.tenant);
            if (tenant.empty() || name == tenant) {
                const auto it = stored.find({name, info.tag});
                fill_program(*v, it != stored.end() ? &it->second : nullptr, info,
                             resp->add_programs(), false);
            }
        }
        return grpc::Status::OK;
    });
}

ServerUnaryReactor* ProgramService::GetProgram(CallbackServerContext* ctx,
                                               const v1::GetProgramRequest* req,
                                               v1::Program* resp) {
    return unary(m_, ctx, "GetProgram", CallKind::read, [this, req, resp](const Principal& p) {
        const auto v = m_.view();
        const std::string tenant = m_.tenant_of(*v, p, req->tenant());
        if (req->tag() == 0) {
            check_name("name", req->name());
        }
        const std::string what = program_what(tenant, req->tag(), req->name());
        if (auto st = m_.authorize(p, tenant, Right::read, what); !st.ok()) {
            return st;
        }
        const auto info = find_program(m_, Manager::tenant_id(*v, tenant), req->tag(), req->name());
        if (!info) {
            return grpc::Status(grpc::StatusCode::NOT_FOUND, what + ": not loaded");
        }
        const auto stored = m_.store().program(tenant, info->tag);
        fill_program(*v, stored ? &*stored : nullptr, *info, resp, true);
        return grpc::Status::OK;
    });
}

}  // namespace rofd
