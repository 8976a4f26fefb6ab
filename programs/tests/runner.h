// Runs the programs of programs/ on the userspace executor (kmod/rof_exec.c,
// the one the module runs), the way rof.ko runs them: regions shared by every
// invocation, each with its own wide-CAS lock and free lists; args, scratch
// and resp per invocation.  Runs over one Memory may be concurrent, from as
// many threads as a test likes, as sessions are on the server's CPUs.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <regex>
#include <span>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "rof/prog/asm.h"
#include "rof/prog/bpf.h"
#include "rof/prog/program.h"
#include "rof/prog/verifier.h"
#include "rof_exec.h"

namespace rof::programs::test {

// A program of the library as rofd would load it: assembled from
// programs/NAME.rofs, verified with the default limits, with the verifier's
// worst case as its instruction budget.
struct Loaded {
    rof::prog::Program prog;
    uint64_t budget = 0;
};

// The `.const NAME, VALUE` lines of programs/NAME.rofs (its layout: what a
// test or a reference implementation must agree with).
inline std::map<std::string, uint64_t> consts_of(const std::string& name) {
    std::ifstream in(std::string(ROF_PROGRAMS_DIR) + "/" + name + ".rofs");
    std::map<std::string, uint64_t> out;
    std::string line;
    const std::regex re(R"(^\.const (\w+), (\d+))");
    std::smatch m;
    while (std::getline(in, line)) {
        if (std::regex_search(line, m, re)) {
            out[m[1]] = std::stoull(m[2]);
        }
    }
    return out;
}

// The name of a .const of programs/@part.rofs that @whole lacks or gives another value; empty
// when they agree (kv-put and kv-del name some of kv-get's sizes, each must be kv-get's).
inline std::string consts_disagree(const std::map<std::string, uint64_t>& whole,
                                   const std::string& part) {
    for (const auto& [name, value] : consts_of(part)) {
        if (!whole.count(name) || whole.at(name) != value) {
            return name;
        }
    }
    return "";
}

// The C forms need clang (ROF_CLANG, ROF_OFFLOAD_INCLUDE: programs/CMakeLists.txt defines
// them); the other users of this header (the kvstore's client test, bench/exec) run the .rofs.
#if defined(ROF_CLANG) && defined(ROF_OFFLOAD_INCLUDE)
// programs/NAME.c as rofd would load it: compiled with clang (ROF_CLANG), translated, verified
// with the default limits, the verifier's worst case as its budget.  Throws with clang's, the
// translator's or the verifier's message.
inline Loaded load_c(const std::string& name) {
    const std::string clang = ROF_CLANG;
    if (clang.empty())
        throw std::runtime_error("CMake found no clang: it is in packaging/build-deps");
    const std::string src = std::string(ROF_PROGRAMS_DIR) + "/" + name + ".c";
    auto obj = rof::prog::compile_offload(clang, src, {ROF_OFFLOAD_INCLUDE});
    if (!obj.ok())
        throw std::runtime_error(src + ": " + obj.error);
    rof::prog::BpfOptions o;
    o.object_name = name + ".c";
    auto r = rof::prog::translate_bpf(*obj, o);
    if (!r.ok())
        throw std::runtime_error(r.error + "\n" + (r.verify ? r.verify->log : ""));
    return {*r.program, r.verify->worst_case};
}
#endif

// programs/NAME.rofs.  Throws with the assembler's or the verifier's message
// (gtest reports it).
inline Loaded load_rofs(const std::string& name) {
    const std::string path = std::string(ROF_PROGRAMS_DIR) + "/" + name + ".rofs";
    std::ifstream in(path);
    if (!in)
        throw std::runtime_error(path + ": cannot open");
    std::stringstream text;
    text << in.rdbuf();
    auto a = rof::prog::assemble(text.str(), name + ".rofs");
    if (!a.ok())
        throw std::runtime_error(a.error_text());
    auto v = rof::prog::verify(*a.program);
    if (!v.ok)
        throw std::runtime_error(name + ".rofs: rejected by the verifier: " + v.error);
    return {*a.program, v.worst_case};
}

// The program the tests run: load_rofs, or with ROF_PROGRAMS_FORM=c in the
// environment load_c, so that every test of the library runs on the C builds.
inline Loaded load(const std::string& name) {
#if defined(ROF_CLANG) && defined(ROF_OFFLOAD_INCLUDE)
    if (const char* form = std::getenv("ROF_PROGRAMS_FORM"); form && std::string(form) == "c")
        return load_c(name);
#endif
    return load_rofs(name);
}

// Regions by name, 8-byte aligned and zeroed, each with its free lists.
class Memory {
  public:
    struct Region {
        std::vector<uint64_t> words;
        uint64_t len = 0;
        rof_exec_lock lock;
        std::vector<uint64_t> freelists;  // header offsets, in offset order
        uint8_t* data() { return reinterpret_cast<uint8_t*>(words.data()); }
    };

    // Adds region @name of @len bytes, all zero.
    Region& add_region(const std::string& name, uint64_t len) {
        auto r = std::make_unique<Region>();
        r->words.assign((len + 7) / 8, 0);
        r->len = len;
        ROF_EXEC_LOCK_INIT(&r->lock);
        Region& ref = *r;
        regions_[name] = std::move(r);
        return ref;
    }

    // Lays a free list in region @name as CreateRegion's {block_size,
    // offset, count} does: the header at @at, @count blocks of @bs bytes
    // from @at + 64.  Returns its number in the region (offset order, as
    // rofd numbers them for binds).
    unsigned add_freelist(const std::string& name, uint64_t at, uint64_t bs, uint64_t count) {
        Region& r = region(name);
        if (!rof::prog::lay_freelist({r.data(), r.len}, at, bs, at + sizeof(rof_isa_freelist),
                                     count))
            throw std::invalid_argument("region " + name + ": the free list does not fit");
        r.freelists.push_back(at);
        std::sort(r.freelists.begin(), r.freelists.end());
        unsigned i = 0;
        while (r.freelists[i] != at)
            i++;
        return i;
    }

    Region& region(const std::string& name) {
        auto it = regions_.find(name);
        if (it == regions_.end())
            throw std::invalid_argument("no region " + name);
        return *it->second;
    }
    std::span<uint8_t> bytes(const std::string& name) {
        Region& r = region(name);
        return {r.data(), r.len};
    }
    uint64_t u64(const std::string& name, uint64_t off) {
        uint64_t v;
        std::memcpy(&v, bytes(name).subspan(off, 8).data(), 8);
        return v;
    }
    void set_u64(const std::string& name, uint64_t off, uint64_t v) {
        std::memcpy(bytes(name).subspan(off, 8).data(), &v, 8);
    }

    // The free blocks of free list @fl of region @name now, by walking its
    // chain (not concurrently with runs); throws on a chain that leaves the
    // list or visits a block twice (a double free).
    std::vector<uint64_t> free_blocks(const std::string& name, unsigned fl) {
        Region& r = region(name);
        rof_isa_freelist h;
        std::memcpy(&h, r.data() + r.freelists.at(fl), sizeof(h));
        std::vector<uint64_t> out;
        std::vector<bool> seen(h.nblocks + 1);
        for (uint64_t i = h.head & 0xffffffff; i != 0;) {
            if (i > h.nblocks || seen[i])
                throw std::runtime_error("region " + name +
                                         ": free list chain is corrupt at block " +
                                         std::to_string(i));
            seen[i] = true;
            const uint64_t off = h.first + (i - 1) * h.block_size;
            out.push_back(off);
            std::memcpy(&i, r.data() + off, 8);
        }
        return out;
    }

  private:
    std::map<std::string, std::unique_ptr<Region>> regions_;
};

// One invocation's answer.
struct Result {
    int status = ROF_ISA_EINVAL;  // executor status; only OK has the rest
    uint32_t prog_status = 0;
    std::vector<uint8_t> resp;
    uint64_t executed = 0;
    uint32_t fault_pc = 0;
};

// The 8-byte little-endian word at byte AT of a run's response.
inline uint64_t word(const Result& r, size_t at) {
    uint64_t v;
    std::memcpy(&v, r.resp.data() + at, 8);
    return v;
}

// One session's view of a program: its slots bound to regions of a Memory,
// and the session's scratch, kept across runs.  Use one Invoker per thread.
class Invoker {
  public:
    std::vector<uint8_t> scratch;  // the session's

    struct Bind {
        std::string region;     // empty: the slot's name
        unsigned freelist = 0;  // for a freelist slot: its number in the region
    };

    Invoker(const Loaded& l, Memory& mem, std::vector<Bind> binds = {})
        : scratch(l.prog.scratch_size), l_(l) {
        const auto& slots = l.prog.slots;
        if (!binds.empty() && binds.size() != slots.size())
            throw std::invalid_argument("binds: one per slot");
        for (size_t i = 0; i < slots.size(); i++) {
            const Bind b = binds.empty() ? Bind{} : binds[i];
            Memory::Region& r = mem.region(b.region.empty() ? slots[i].name : b.region);
            if (r.len < slots[i].len)
                throw std::invalid_argument("slot " + slots[i].name + ": region too short");
            rof_exec_region e{};
            e.base = r.data();
            e.len = slots[i].len;
            e.access = slots[i].access;
            e.freelist = ROF_ISA_NULL;
            if (slots[i].flags & ROF_SLOT_FREELIST)
                e.freelist = r.freelists.at(b.freelist);
            e.lock = &r.lock;
            regions_.push_back(e);
        }
    }

    // Runs the program on @args as rof.ko does: EARGS without running it
    // when @args is outside [args_min, args_max], resp zeroed first.
    Result run(std::span<const uint8_t> args) {
        Result out;
        const auto& p = l_.prog;
        if (args.size() < p.args_min || args.size() > p.args_max) {
            out.status = ROF_ISA_EARGS;
            return out;
        }
        std::vector<uint8_t> resp(p.resp_max);
        rof_exec_ctx c{};
        c.insns = p.insns.data();
        c.insn_cnt = static_cast<uint32_t>(p.insns.size());
        std::vector<rof_exec_op> code(ROF_EXEC_CODE_LEN(c.insn_cnt));
        rof_exec_decode(c.insns, c.insn_cnt, code.data());
        c.code = code.data();
        c.args = args.data();
        c.args_len = static_cast<uint32_t>(args.size());
        c.scratch = scratch.empty() ? nullptr : scratch.data();
        c.scratch_len = static_cast<uint32_t>(scratch.size());
        c.resp = resp.empty() ? nullptr : resp.data();
        c.resp_cap = static_cast<uint32_t>(resp.size());
        c.regions = regions_.empty() ? nullptr : regions_.data();
        c.region_cnt = static_cast<uint32_t>(regions_.size());
        c.budget = l_.budget;
        c.byte_budget = 1u << 20;  // rof.ko's default byte budget
        out.status = rof_exec_run(&c);
        out.prog_status = c.prog_status;
        out.executed = c.executed;
        out.fault_pc = c.fault_pc;
        if (out.status == ROF_ISA_OK)
            out.resp.assign(resp.begin(), resp.begin() + c.resp_len);
        return out;
    }

    // The slots as bound, what run() passes (bench/exec times rof_exec_run on them).
    const std::vector<rof_exec_region>& regions() const { return regions_; }

  private:
    const Loaded& l_;
    std::vector<rof_exec_region> regions_;
};

}  // namespace rof::programs::test
