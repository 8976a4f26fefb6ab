// A userspace invocation environment for the executor: buffers, regions
// with locks and free lists.  Shared by the unit tests and the fuzzers.
#pragma once

#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "rof/prog/asm.h"
#include "rof/prog/program.h"
#include "rof/prog/verifier.h"
#include "rof_exec.h"

namespace rof::prog::test {

struct Region {
    std::vector<uint64_t> words;  // 8-byte aligned backing
    uint64_t len = 0;
    uint8_t* data() { return reinterpret_cast<uint8_t*>(words.data()); }
};

struct Env {
    std::vector<uint8_t> args, scratch, resp;
    std::vector<Region> mem;
    std::vector<rof_exec_region> regions;
    std::vector<rof_exec_lock> locks;
    std::vector<rof_exec_op> code;
    rof_exec_ctx ctx{};

    // Sizes buffers for p: args of args_len bytes, scratch/resp as declared,
    // one region per slot of len bytes (at least 8), read/write/atomic
    // as declared.
    explicit Env(const Program& p, uint32_t args_len = 0) {
        args.assign(args_len ? args_len : p.args_min, 0);
        scratch.assign(p.scratch_size, 0);
        resp.assign(p.resp_max, 0);
        mem.resize(p.slots.size());
        locks.resize(ROF_ISA_MAX_SLOTS);
        for (auto& l : locks)
            ROF_EXEC_LOCK_INIT(&l);
        for (size_t i = 0; i < p.slots.size(); i++) {
            uint64_t len = p.slots[i].len;
            mem[i].words.assign((len + 7) / 8 + 1, 0);
            mem[i].len = len;
            rof_exec_region r{};
            r.base = mem[i].data();
            r.len = len;
            r.access = p.slots[i].access;
            r.freelist = ROF_ISA_NULL;
            r.lock = &locks[i];
            regions.push_back(r);
        }
    }

    // Lays a free list out at offset 0 of slot s: nblocks blocks of bs bytes
    // from offset first, all free, 1 on top.
    void freelist(uint32_t s, uint64_t first, uint64_t bs, uint64_t nblocks) {
        if (!lay_freelist({mem[s].data(), mem[s].len}, 0, bs, first, nblocks))
            throw std::invalid_argument("free list does not fit the region");
        regions[s].freelist = 0;
    }

    void put64(std::vector<uint8_t>& b, size_t off, uint64_t v) {
        std::memcpy(b.data() + off, &v, 8);
    }
    uint64_t get64(const uint8_t* p) const {
        uint64_t v;
        std::memcpy(&v, p, 8);
        return v;
    }
    uint64_t region64(uint32_t s, uint64_t off) { return get64(mem[s].data() + off); }
    void set_region64(uint32_t s, uint64_t off, uint64_t v) {
        std::memcpy(mem[s].data() + off, &v, 8);
    }

    // An empty buffer is passed as NULL, as the module passes the scratch
    // of a program that declares none.
    int run(const Program& p, uint64_t budget = 1000000, uint64_t byte_budget = 1u << 24) {
        auto ptr = [](std::vector<uint8_t>& b) { return b.empty() ? nullptr : b.data(); };
        ctx = rof_exec_ctx{};
        ctx.insns = p.insns.data();
        ctx.insn_cnt = static_cast<uint32_t>(p.insns.size());
        code.assign(ROF_EXEC_CODE_LEN(ctx.insn_cnt), rof_exec_op{});
        rof_exec_decode(ctx.insns, ctx.insn_cnt, code.data());
        ctx.code = code.data();
        ctx.args = ptr(args);
        ctx.args_len = static_cast<uint32_t>(args.size());
        ctx.scratch = ptr(scratch);
        ctx.scratch_len = static_cast<uint32_t>(scratch.size());
        ctx.resp = ptr(resp);
        ctx.resp_cap = static_cast<uint32_t>(resp.size());
        ctx.regions = regions.data();
        ctx.region_cnt = static_cast<uint32_t>(regions.size());
        ctx.budget = budget;
        ctx.byte_budget = byte_budget;
        return rof_exec_run(&ctx);
    }
};

// Assembles or fails the test with the assembler's messages.
// A table case's name as a gtest name: [A-Za-z0-9_], each run of other
// characters one '_'; names[index] already used by an earlier entry gets
// the index appended, so every case has its own test.
template <typename Names>
std::string case_name(const Names& names, size_t index) {
    auto clean = [](std::string_view s) {
        std::string out;
        for (char ch : s) {
            if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9'))
                out += ch;
            else if (!out.empty() && out.back() != '_')
                out += '_';
        }
        while (!out.empty() && out.back() == '_')
            out.pop_back();
        return out.empty() ? std::string("case") : out;
    };
    std::string name = clean(names(index));
    for (size_t i = 0; i < index; i++)
        if (clean(names(i)) == name)
            return name + "_" + std::to_string(index);
    return name;
}

inline Program must_assemble(const std::string& text) {
    AsmResult r = assemble(text, "test.rofs");
    if (!r.ok())
        throw std::runtime_error(r.error_text());
    return *r.program;
}

}  // namespace rof::prog::test
