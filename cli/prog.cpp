// SPDX-License-Identifier: MIT
// rofctl prog verify|load|list|show|dump|unload|run|test.
//
// `run` is a test invocation over the data path (a rof::Session, like
// `bpftool prog run`); `test` runs a program on the userspace executor
// (the kernel's rof_exec.c built for userspace) against local files as
// regions, with no server at all.
#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "commands.h"
#include "rof/prog/asm.h"
#include "rof/prog/bpf.h"
#include "rof/prog/program.h"
#include "rof/prog/verifier.h"
#include "rof/session.h"
#include "rof_exec.h"

namespace rofctl {
namespace {

// "A:B:C", three unsigned decimal numbers, nothing else.
bool parse_triple(std::string_view s, unsigned long long& a, unsigned long long& b,
                  unsigned long long& c) {
    unsigned long long* out[] = {&a, &b, &c};
    const char* p = s.data();
    const char* end = s.data() + s.size();
    for (std::size_t i = 0; i < 3; i++) {
        if (i > 0) {
            if (p == end || *p != ':') {
                return false;
            }
            p++;
        }
        const auto r = std::from_chars(p, end, *out[i]);
        if (r.ec != std::errc() || r.ptr == p) {
            return false;
        }
        p = r.ptr;
    }
    return p == end;
}

namespace fs = std::filesystem;

struct ProgOpts {
    std::string file, name, tenant, args;
    std::vector<std::string> binds, regions, freelists;
    unsigned log_level = 0;
    bool offline = false;
    bool write_back = false;
    std::uint64_t budget = 1000000;
    std::uint64_t byte_budget = 1 << 20;
    std::uint32_t resp_max = 65536;
    std::string output;  // list -o
};

// An offload in C (docs/programs.md, "Offloads in C"): FILE.c compiled with
// clang ($ROF_CLANG, default clang; -I each directory of the colon-separated
// $ROF_OFFLOAD_INCLUDE besides the installed <rof/offload.h>), or FILE.o,
// clang's object, translated.  Not verified here: the callers verify.
bool is_c_offload(const std::string& file) {
    const auto ext = fs::path(file).extension();
    return ext == ".c" || ext == ".o";
}

rof::prog::BpfResult c_translate(const std::string& file) {
    std::vector<std::uint8_t> obj;
    if (fs::path(file).extension() == ".c") {
        const char* env_clang = std::getenv("ROF_CLANG");
        std::vector<std::string> inc;
        if (const char* env_inc = std::getenv("ROF_OFFLOAD_INCLUDE")) {
            std::string dirs = env_inc;
            for (size_t at = 0; at <= dirs.size();) {
                size_t end = dirs.find(':', at);
                if (end == std::string::npos) {
                    end = dirs.size();
                }
                if (end > at) {
                    inc.push_back(dirs.substr(at, end - at));
                }
                at = end + 1;
            }
        }
        auto o =
            rof::prog::compile_offload(env_clang && *env_clang ? env_clang : "clang", file, inc);
        if (!o) {
            throw rof::Error(rof::Code::invalid_argument, o.error);
        }
        obj = std::move(*o);
    } else {
        const std::string body = read_file(file);
        obj.assign(body.begin(), body.end());
    }
    rof::prog::BpfOptions bo;
    bo.object_name = fs::path(file).filename().string();
    bo.verify = false;
    auto r = rof::prog::translate_bpf(obj, bo);
    if (!r.ok()) {
        throw rof::Error(rof::Code::invalid_argument, r.error);
    }
    return r;
}

rof::prog::Program c_program(const std::string& file) {
    return *c_translate(file).program;
}

// FILE as the API takes it: *.rofs is assembly, *.c and *.o are offloads in
// C (translated here, sent as an image), anything else an image.
rof::v1::ProgramSource program_source(const std::string& file) {
    rof::v1::ProgramSource src;
    if (is_c_offload(file)) {
        const auto img = c_program(file).encode();
        src.set_image(std::string(img.begin(), img.end()));
        src.set_file(fs::path(file).filename().string());
        return src;
    }
    const std::string body = read_file(file);
    if (fs::path(file).extension() == ".rofs") {
        src.set_text(body);
    } else {
        src.set_image(body);
    }
    src.set_file(fs::path(file).filename().string());
    return src;
}

// SLOT=REGION or SLOT=REGION#FREELIST.
rof::v1::Bind parse_bind(const std::string& text) {
    const auto eq = text.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == text.size()) {
        throw UsageError("--bind \"" + text + "\": want SLOT=REGION[#FREELIST]");
    }
    rof::v1::Bind b;
    b.set_slot(text.substr(0, eq));
    std::string region = text.substr(eq + 1);
    if (const auto hash = region.find('#'); hash != std::string::npos) {
        try {
            b.set_freelist(static_cast<std::uint32_t>(std::stoul(region.substr(hash + 1))));
        } catch (const std::logic_error&) {
            throw UsageError("--bind \"" + text + "\": want SLOT=REGION[#FREELIST]");
        }
        region.resize(hash);
    }
    b.set_region(region);
    return b;
}

// The program of FILE in memory: assembled, translated from C, or decoded
// from an image.
rof::prog::Program local_program(const std::string& file) {
    if (is_c_offload(file)) {
        return c_program(file);
    }
    const std::string body = read_file(file);
    if (fs::path(file).extension() == ".rofs") {
        auto r = rof::prog::assemble(body, fs::path(file).filename().string());
        if (!r.ok()) {
            throw rof::Error(rof::Code::invalid_argument, r.error_text());
        }
        return *r.program;
    }
    auto p = rof::prog::decode_image(
        std::span(reinterpret_cast<const std::uint8_t*>(body.data()), body.size()));
    if (!p) {
        throw rof::Error(rof::Code::invalid_argument, file + ": " + p.error);
    }
    return *p;
}

// rof.ko answers an INVOKE in the softirq or a polling thread's turn only when the program's
// worst case fits in one such turn (ROF_EXEC_ATOMIC_INSNS instructions, ROF_EXEC_ATOMIC_BYTES
// bytes moved; docs/kmod.md 8.3); a program over either is run in its session's poll work
// every time, a workqueue wake-up each (Program.deferred, as rof.ko says it).  Said on stderr,
// beside the result, when a program verifies, loads or is replaced so.
void note_worst_case(Context& ctx, std::uint64_t insns, std::uint64_t bytes) {
    if (insns > ROF_EXEC_ATOMIC_INSNS || bytes > ROF_EXEC_ATOMIC_BYTES) {
        ctx.err << "rofctl: note: a worst case of " << insns << " instructions";
        if (bytes != 0) {
            ctx.err << " and " << bytes << " bytes moved";
        }
        ctx.err << ", over " << ROF_EXEC_ATOMIC_INSNS << " instructions or "
                << ROF_EXEC_ATOMIC_BYTES
                << " bytes: rof.ko runs every INVOKE of this program in its session's poll work, "
                   "not in the softirq or a polling thread (docs/kmod.md 8.3)\n";
    }
}

int verify(Context& ctx, const ProgOpts& o) {
    if (o.log_level > 2) {
        throw UsageError("-v: 0, 1 or 2");
    }
    rof::v1::VerifyProgramResponse resp;
    if (o.offline) {
        if (!o.tenant.empty() || !o.binds.empty()) {
            throw UsageError("--offline checks the program on its own: no --tenant, --bind");
        }
        try {
            const rof::prog::Program p = local_program(o.file);
            rof::prog::VerifyOptions vo;
            vo.log_level = static_cast<int>(o.log_level);
            const auto v = rof::prog::verify(p, vo);
            resp.set_ok(v.ok);
            resp.set_error(v.error);
            resp.set_error_insn(v.ok ? 0 : v.error_insn);
            resp.set_log(v.log);
            resp.set_worst_case(v.worst_case);
            resp.set_tag(p.tag());
        } catch (const rof::Error& e) {
            resp.set_ok(false);
            resp.set_error(e.what());
        }
    } else {
        rof::v1::VerifyProgramRequest req;
        req.set_tenant(o.tenant);
        *req.mutable_source() = program_source(o.file);
        for (const std::string& b : o.binds) {
            *req.add_binds() = parse_bind(b);
        }
        req.set_log_level(o.log_level);
        resp = ctx.client().verify_program(req);
    }
    ctx.printer.print(resp);
    if (resp.ok()) {
        note_worst_case(ctx, resp.worst_case(), 0);  // the byte budget is the load's
    }
    return resp.ok() ? exit_ok : exit_check_failed;
}

rof::v1::GetProgramRequest get_req(const ProgOpts& o) {
    rof::v1::GetProgramRequest req;
    req.set_tenant(o.tenant);
    req.set_name(o.name);
    return req;
}

// ---- prog run: one invocation over the data path ----

// The lines of a batch share the session of their tenant (the Connection
// keeps it), so a batch of runs pays one session setup.
int run_remote(Context& ctx, const ProgOpts& o) {
    const std::string args = parse_bytes(o.args);
    const rof::v1::Program prog = ctx.client().get_program(get_req(o));
    rof::Session& s = ctx.connection.session(o.tenant);
    std::vector<std::byte> resp(std::max<std::uint32_t>(prog.resp_max(), 1));
    rof::InvokeResult r{};
    try {
        r = s.invoke(prog.tag(), std::as_bytes(std::span(args.data(), args.size())),
                     std::span(resp));
    } catch (const rof::Error&) {
        ctx.connection.forget_session(o.tenant);
        throw;
    }
    ctx.printer.print(
        prog_run_tree(s.id(), prog, r.prog_status, r.insns,
                      std::string_view(reinterpret_cast<const char*>(resp.data()), r.len)));
    return exit_ok;
}

// ---- prog test: the userspace executor over local files ----

struct LocalRegion {
    std::string name, file;
    std::vector<std::uint64_t> words;  // 8-byte aligned backing
    std::uint64_t len = 0;
    std::string before;
    std::uint8_t* data() { return reinterpret_cast<std::uint8_t*>(words.data()); }
};

// Lays a fresh free list at offset 0: @count blocks of @bs bytes from @first.
void lay_freelist(LocalRegion& r, std::uint64_t bs, std::uint64_t first, std::uint64_t count) {
    if (!rof::prog::lay_freelist({r.data(), r.len}, 0, bs, first, count)) {
        throw UsageError("--freelist " + r.name + ": does not fit the region");
    }
}

// Changed byte ranges of a region, as {offset, old, new}: the offset a
// decimal string, the bytes base64 (print.h's spelling).
Json diff(LocalRegion& r) {
    Json out = Json::array();
    const auto* now = reinterpret_cast<const char*>(r.data());
    std::uint64_t i = 0;
    while (i < r.len) {
        if (now[i] == r.before[i]) {
            i++;
            continue;
        }
        std::uint64_t end = i;
        // Runs closer than 8 equal bytes are one range.
        for (std::uint64_t k = i; k < r.len && k < end + 8; k++) {
            if (now[k] != r.before[k]) {
                end = k;
            }
        }
        end++;
        out.push_back({{"region", r.name},
                       {"offset", std::to_string(i)},
                       {"old", base64(std::string_view(r.before).substr(i, end - i))},
                       {"new", base64(std::string_view(now + i, end - i))}});
        i = end;
    }
    return out;
}

int test_local(Context& ctx, const ProgOpts& o) {
    const rof::prog::Program p = local_program(o.file);
    const std::string args = parse_bytes(o.args);

    const auto v = rof::prog::verify(p);
    if (!v.ok) {
        throw rof::Error(rof::Code::invalid_argument, "the verifier rejects it: " + v.error);
    }

    std::vector<LocalRegion> mem(p.slots.size());
    for (std::size_t s = 0; s < p.slots.size(); s++) {
        mem[s].name = p.slots[s].name;
    }
    for (const std::string& spec : o.regions) {
        const auto eq = spec.find('=');
        if (eq == std::string::npos) {
            throw UsageError("--region \"" + spec + "\": want NAME=FILE");
        }
        const auto slot = p.find_slot(spec.substr(0, eq));
        if (!slot) {
            throw UsageError("--region " + spec.substr(0, eq) + ": the program has no such region");
        }
        mem[*slot].file = spec.substr(eq + 1);
    }
    for (std::size_t s = 0; s < p.slots.size(); s++) {
        LocalRegion& r = mem[s];
        std::string content;
        if (!r.file.empty()) {
            content = read_file(r.file);
        }
        r.len = std::max<std::uint64_t>(p.slots[s].len, content.size());
        r.words.assign(r.len / 8 + 1, 0);
        std::memcpy(r.data(), content.data(), content.size());
    }
    for (const std::string& spec : o.freelists) {
        const auto eq = spec.find('=');
        const auto slot = eq == std::string::npos ? std::nullopt : p.find_slot(spec.substr(0, eq));
        unsigned long long bs = 0, first = 0, count = 0;
        if (!slot || !parse_triple(std::string_view(spec).substr(eq + 1), bs, first, count)) {
            throw UsageError("--freelist \"" + spec + "\": want REGION=BLOCK_SIZE:FIRST:COUNT");
        }
        lay_freelist(mem[*slot], bs, first, count);
    }

    std::vector<rof_exec_lock> locks(std::max<std::size_t>(p.slots.size(), 1));
    std::vector<rof_exec_region> regions;
    for (std::size_t s = 0; s < p.slots.size(); s++) {
        ROF_EXEC_LOCK_INIT(&locks[s]);
        mem[s].before.assign(reinterpret_cast<const char*>(mem[s].data()), mem[s].len);
        rof_exec_region r{};
        r.base = mem[s].data();
        r.len = mem[s].len;
        r.access = p.slots[s].access;
        r.freelist = (p.slots[s].flags & ROF_SLOT_FREELIST) != 0 ? 0 : ROF_ISA_NULL;
        r.lock = &locks[s];
        regions.push_back(r);
    }
    // The module refuses args outside the header's bounds before running.
    if (args.size() < p.args_min || args.size() > p.args_max) {
        Json tree = Json::object();
        tree["tag"] = std::to_string(p.tag());
        tree["result"] = rof::prog::status_name(ROF_ISA_EARGS);
        tree["args_min"] = p.args_min;
        tree["args_max"] = p.args_max;
        ctx.printer.print(tree);
        return exit_ok;
    }
    std::vector<std::uint8_t> scratch(p.scratch_size), resp(p.resp_max);
    auto ptr = [](std::vector<std::uint8_t>& b) { return b.empty() ? nullptr : b.data(); };
    rof_exec_ctx c{};
    c.insns = p.insns.data();
    c.insn_cnt = static_cast<std::uint32_t>(p.insns.size());
    std::vector<rof_exec_op> code(ROF_EXEC_CODE_LEN(c.insn_cnt));
    rof_exec_decode(c.insns, c.insn_cnt, code.data());
    c.code = code.data();
    c.args = reinterpret_cast<const std::uint8_t*>(args.data());
    c.args_len = static_cast<std::uint32_t>(args.size());
    c.scratch = ptr(scratch);
    c.scratch_len = static_cast<std::uint32_t>(scratch.size());
    c.resp = ptr(resp);
    c.resp_cap = static_cast<std::uint32_t>(resp.size());
    c.regions = regions.data();
    c.region_cnt = static_cast<std::uint32_t>(regions.size());
    c.budget = o.budget;
    c.byte_budget = o.byte_budget;
    const int st = rof_exec_run(&c);

    Json tree = Json::object();
    tree["tag"] = std::to_string(p.tag());
    tree["result"] = rof::prog::status_name(st);
    if (st == ROF_ISA_OK) {
        tree["prog_status"] = c.prog_status;
    } else {
        tree["fault_pc"] = c.fault_pc;
        // The source line of the faulting instruction: the .rofs line, or
        // the C line of an offload in C.
        if (const std::string at = p.where(c.fault_pc); !at.empty()) {
            tree["fault_at"] = at;
        }
    }
    tree["insns"] = std::to_string(c.executed);
    tree["bytes"] = std::to_string(c.bytes);
    tree["response"] =
        base64(std::string_view(reinterpret_cast<const char*>(resp.data()), c.resp_len));
    Json changes = Json::array();
    Json written = Json::array();
    for (LocalRegion& r : mem) {
        Json d = diff(r);
        if (d.empty()) {
            continue;
        }
        if (o.write_back && !r.file.empty()) {
            std::ofstream out(r.file, std::ios::binary | std::ios::trunc);
            out.write(reinterpret_cast<const char*>(r.data()), static_cast<std::streamsize>(r.len));
            if (!out) {
                throw std::runtime_error(r.file + ": write failed");
            }
            written.push_back(r.file);
        }
        for (Json& e : d) {
            changes.push_back(std::move(e));
        }
    }
    tree["changes"] = std::move(changes);
    tree["written"] = std::move(written);
    ctx.printer.print(tree);
    return exit_ok;
}

}  // namespace

void print_prog_dump(Printer& printer, const rof::v1::Program& p) {
    const Json all = to_json(p);
    Json tree = Json::object();
    for (const char* k : {"tenant", "name", "tag", "source", "disassembly"}) {
        tree[k] = all[k];
    }
    printer.print(tree, rof::v1::Program::descriptor());
}

Json prog_run_tree(std::uint32_t session, const rof::v1::Program& prog, std::uint32_t prog_status,
                   std::uint32_t insns, std::string_view response) {
    Json tree = Json::object();
    tree["session"] = session;
    tree["name"] = prog.name();
    tree["tag"] = std::to_string(prog.tag());
    tree["prog_status"] = prog_status;
    tree["insns"] = insns;
    tree["response"] = base64(response);
    return tree;
}

void add_prog_commands(CLI::App& app, Handler& selected) {
    auto* obj = app.add_subcommand("prog", "offload programs (docs/isa.md)");
    obj->require_subcommand(0, 1);
    auto o = std::make_shared<ProgOpts>();
    const char* tenant_help = "the program's tenant (default: the caller's own)";
    const char* file_help =
        "FILE.rofs (assembly), FILE.c or FILE.o (an offload in C) or an encoded image";
    const char* bind_help = "SLOT=REGION[#FREELIST]: bind a slot (repeatable; default: by name)";

    auto* ver = obj->add_subcommand("verify", "assemble and verify without loading");
    ver->add_option("file", o->file, file_help)->required()->check(CLI::ExistingFile);
    ver->add_option("-v,--log-level", o->log_level, "verifier log: 0, 1 or 2");
    ver->add_option("--tenant", o->tenant, "verify against this tenant's policy and regions");
    ver->add_option("--bind", o->binds, bind_help);
    ver->add_flag("--offline", o->offline, "verify here with librof's verifier, no rofd");
    ver->callback([&selected, o] { selected = [o](Context& ctx) { return verify(ctx, *o); }; });

    auto* load = obj->add_subcommand("load", "verify and load a program");
    load->add_option("file", o->file, file_help)->required()->check(CLI::ExistingFile);
    load->add_option("--name", o->name, "the program's name")->required();
    load->add_option("--tenant", o->tenant, tenant_help);
    load->add_option("--bind", o->binds, bind_help);
    load->callback([&selected, o] {
        selected = [o](Context& ctx) {
            rof::v1::LoadProgramRequest req;
            req.set_tenant(o->tenant);
            req.set_name(o->name);
            *req.mutable_source() = program_source(o->file);
            for (const std::string& b : o->binds) {
                *req.add_binds() = parse_bind(b);
            }
            const rof::v1::Program p = ctx.client().load_program(req);
            ctx.printer.print(p);
            note_worst_case(ctx, p.budget(), p.byte_budget());
            return exit_ok;
        };
    });

    auto* replace = obj->add_subcommand(
        "replace",
        "put a new image in a loaded program's place, in one step (like bpf_link update)");
    replace->add_option("name", o->name, "the program to replace; the new one keeps the name")
        ->required();
    replace->add_option("file", o->file, file_help)->required()->check(CLI::ExistingFile);
    replace->add_option("--tenant", o->tenant, tenant_help);
    replace->add_option("--bind", o->binds, bind_help);
    replace->callback([&selected, o] {
        selected = [o](Context& ctx) {
            rof::v1::ReplaceProgramRequest req;
            req.set_tenant(o->tenant);
            req.set_name(o->name);
            *req.mutable_source() = program_source(o->file);
            for (const std::string& b : o->binds) {
                *req.add_binds() = parse_bind(b);
            }
            const rof::v1::Program p = ctx.client().replace_program(req);
            ctx.printer.print(p);
            note_worst_case(ctx, p.budget(), p.byte_budget());
            return exit_ok;
        };
    });

    auto* list = obj->add_subcommand("list", "list loaded programs");
    list->add_option("--tenant", o->tenant, "only this tenant's");
    add_output_option(*list, o->output);
    list->callback([&selected, o] {
        selected = [o](Context& ctx) {
            ctx.printer.set_wide(o->output == "wide");
            rof::v1::ListProgramsRequest req;
            req.set_tenant(o->tenant);
            ctx.printer.print(ctx.client().list_programs(req));
            return exit_ok;
        };
    });

    auto* show = obj->add_subcommand("show", "one program with its counters");
    show->add_option("name", o->name, "program name")->required();
    show->add_option("--tenant", o->tenant, tenant_help);
    show->callback([&selected, o] {
        selected = [o](Context& ctx) {
            rof::v1::Program p = ctx.client().get_program(get_req(*o));
            p.clear_source();  // `prog dump` shows these
            p.clear_disassembly();
            ctx.printer.print(p);
            return exit_ok;
        };
    });

    auto* build = obj->add_subcommand(
        "build", "translate an offload in C to assembly, C lines as comments, for review");
    build->add_option("file", o->file, "FILE.c or FILE.o")->required()->check(CLI::ExistingFile);
    build->add_option("-o,--output", o->output, "write the assembly here (default: stdout)");
    build->callback([&selected, o] {
        selected = [o](Context& ctx) {
            if (!is_c_offload(o->file)) {
                throw UsageError("prog build: want FILE.c or FILE.o");
            }
            const auto r = c_translate(o->file);
            const std::string text = rof::prog::disassemble_with_source(*r.program, r.locs);
            if (o->output.empty() || o->output == "-") {
                if (ctx.printer.json()) {
                    Json tree = Json::object();
                    tree["assembly"] = text;
                    ctx.printer.print(tree);
                } else {
                    ctx.printer.text(std::string_view(text).substr(0, text.size() - 1));
                }
            } else {
                std::ofstream f(o->output, std::ios::binary | std::ios::trunc);
                f << text;
                if (!f.flush()) {
                    throw rof::Error(rof::Code::internal, "cannot write " + o->output);
                }
            }
            return exit_ok;
        };
    });

    auto* dump = obj->add_subcommand("dump", "a program's source and disassembly");
    dump->add_option("name", o->name, "program name")->required();
    dump->add_option("--tenant", o->tenant, tenant_help);
    dump->callback([&selected, o] {
        selected = [o](Context& ctx) {
            print_prog_dump(ctx.printer, ctx.client().get_program(get_req(*o)));
            return exit_ok;
        };
    });

    auto* unload = obj->add_subcommand("unload", "unload a program");
    unload->add_option("name", o->name, "program name")->required();
    unload->add_option("--tenant", o->tenant, tenant_help);
    unload->callback([&selected, o] {
        selected = [o](Context& ctx) {
            rof::v1::UnloadProgramRequest req;
            req.set_tenant(o->tenant);
            req.set_name(o->name);
            ctx.client().unload_program(req);
            req.clear_idempotency_key();
            ctx.printer.print(req);
            return exit_ok;
        };
    });

    auto* run = obj->add_subcommand(
        "run", "one test invocation over the data path (opens a session, like bpftool prog run)");
    run->add_option("name", o->name, "program name")->required();
    run->add_option("--args", o->args, "the arguments: hex bytes, or @FILE")->required();
    run->add_option("--tenant", o->tenant, tenant_help);
    run->callback([&selected, o] { selected = [o](Context& ctx) { return run_remote(ctx, *o); }; });

    auto* test = obj->add_subcommand(
        "test",
        "run FILE on the userspace executor against local files as regions, no rofd (dry run); "
        "modified regions are shown as a diff, written back only with --write-back");
    test->add_option("file", o->file, file_help)->required()->check(CLI::ExistingFile);
    test->add_option("--args", o->args, "the arguments: hex bytes, or @FILE")->required();
    test->add_option("--region", o->regions,
                     "NAME=FILE: the region's contents (repeatable; default: zeros of the slot's "
                     "length)");
    test->add_option("--freelist", o->freelists,
                     "REGION=BLOCK_SIZE:FIRST:COUNT: lay a fresh free list at offset 0");
    test->add_flag("--write-back", o->write_back, "write modified regions back to their files");
    test->add_option("--budget", o->budget, "instruction budget (default 1000000)");
    test->add_option("--byte-budget", o->byte_budget, "byte budget (default 1048576)");
    test->callback(
        [&selected, o] { selected = [o](Context& ctx) { return test_local(ctx, *o); }; });
}

}  // namespace rofctl
