// rof-difftest: the kernel-vs-userspace differential test of issue 4.
//
// Random valid programs (rof::prog::random_program) run once in rof.ko's
// executor over INVOKE and once in the very same executor built for
// userspace (rof_exec_user), from identical starting states: the same
// args, the same region contents (written through an mmap of each region
// before every run) and the same session scratch (the userspace copy is
// kept across programs as the session's is).  Compared: the status, the
// program status, the executor status and fault pc, the instruction count,
// the response bytes, and both regions afterwards.
//
//   rof-difftest [-n PROGRAMS] [-s SEED] [-v]      (default 1000 programs)
//
// Needs CAP_SYS_ADMIN, rof.ko and an RDMA device at $ROF_ADDR.  Exit 0
// when every program agreed.
#include <getopt.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "kprog.h"
#include "rof/prog/asm.h"
#include "rof/prog/gen.h"
#include "rof/prog/program.h"
#include "rof/prog/verifier.h"
#include "tests/harness.h"

using rof::prog::GenEnv;

namespace {

constexpr uint64_t kByteBudget = 1u << 24;
constexpr uint32_t kHeapFirst = 64;
constexpr uint32_t kHeapBlocks = (GenEnv::kHeap - kHeapFirst) / GenEnv::kHeapBlock;

// The free list a run starts from, in the ISA layout, over random bytes.
void format_heap(std::vector<uint8_t>& heap) {
    if (!rof::prog::lay_freelist(heap, 0, GenEnv::kHeapBlock, kHeapFirst, kHeapBlocks))
        throw std::logic_error("the generator's heap does not hold its free list");
}

std::string hex(const std::vector<uint8_t>& b, size_t max = 32) {
    std::string s;
    char t[4];
    for (size_t i = 0; i < b.size() && i < max; i++) {
        snprintf(t, sizeof(t), "%02x", b[i]);
        s += t;
    }
    return s + (b.size() > max ? "..." : "");
}

// First differing offset of two buffers, or -1.
long first_diff(const uint8_t* a, const uint8_t* b, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (a[i] != b[i])
            return static_cast<long>(i);
    return -1;
}

}  // namespace

int main(int argc, char** argv) {
    unsigned n = 1000;
    uint64_t seed = 1;
    bool verbose = false;
    int c;
    while ((c = getopt(argc, argv, "n:s:v")) != -1) {
        switch (c) {
            case 'n':
                n = static_cast<unsigned>(std::stoul(optarg));
                break;
            case 's':
                seed = std::stoull(optarg, nullptr, 0);
                break;
            case 'v':
                verbose = true;
                break;
            default:
                fprintf(stderr, "usage: rof-difftest [-n PROGRAMS] [-s SEED] [-v]\n");
                return 2;
        }
    }

    try {
        kprog::Dev dev;
        std::string tag = "difftest-" + std::to_string(getpid());
        uint32_t tenant = dev.tenant_create(tag);
        struct Cleanup {
            kprog::Dev& d;
            uint32_t t;
            ~Cleanup() { d.tenant_destroy(t); }
        } cleanup{dev, tenant};
        uint32_t data = dev.region_create(tenant, tag + "-data", GenEnv::kData, ROF_ACCESS_ALL);
        uint32_t heap = dev.region_create(tenant, tag + "-heap", GenEnv::kHeap, ROF_ACCESS_ALL);
        uint32_t fl = dev.freelist_create(heap, GenEnv::kHeapBlock, 0, kHeapBlocks);
        kprog::Mapping mdata(dev, data), mheap(dev, heap);
        dev.set_random_key();
        kprog::Client client(kprog::server_addr(), dev.prepare(tenant));

        std::mt19937_64 rng(seed);
        std::vector<uint8_t> scratch(GenEnv::kScratch, 0);  // mirrors the session's
        unsigned same = 0, faults = 0, bad = 0;
        for (unsigned i = 0; i < n; i++) {
            rof::prog::Program p = rof::prog::random_program(rng);
            rof::prog::VerifyResult v = rof::prog::verify(p);
            if (!v.ok) {
                printf("program %u: the generator made a program the verifier rejects: %s\n", i,
                       v.error.c_str());
                bad++;
                continue;
            }
            std::vector<uint8_t> image = p.encode();
            // Every other program gets a random budget below its proven
            // bound, so EBUDGET faults (and the writes made before them)
            // are compared too.
            uint64_t budget = i % 2 ? v.worst_case : rng() % v.worst_case + 1;
            std::vector<uint8_t> args(GenEnv::kArgs), d0(GenEnv::kData), h0(GenEnv::kHeap);
            for (auto& b : args)
                b = static_cast<uint8_t>(rng());
            for (auto& b : d0)
                b = static_cast<uint8_t>(rng());
            for (auto& b : h0)
                b = static_cast<uint8_t>(rng());
            format_heap(h0);

            // The kernel's run.
            rof_prog_load l = kprog::load_req(tenant, image, {{data, 0}, {heap, fl}}, budget,
                                              kByteBudget, "diff");
            dev.kmod().prog_load(l, image);
            std::memcpy(mdata.data(), d0.data(), d0.size());
            std::memcpy(mheap.data(), h0.data(), h0.size());
            kprog::InvokeResult k = kprog::decode_invoke(client.invoke(l.tag, args));
            std::vector<uint8_t> dk(mdata.data(), mdata.data() + GenEnv::kData);
            std::vector<uint8_t> hk(mheap.data(), mheap.data() + GenEnv::kHeap);
            dev.kmod().prog_unload(tenant, l.tag);

            // The userspace run, from the same state.
            rof::prog::test::Env env(p, GenEnv::kArgs);
            env.args = args;
            std::memcpy(env.mem[0].data(), d0.data(), d0.size());
            std::memcpy(env.mem[1].data(), h0.data(), h0.size());
            env.regions[1].freelist = 0;
            env.scratch = scratch;
            std::fill(env.resp.begin(), env.resp.end(), 0);
            int st = env.run(p, budget, kByteBudget);
            scratch = env.scratch;
            uint32_t ust = st == ROF_ISA_OK ? ROF_ST_OK : ROF_ST_PROG_FAULT;
            std::vector<uint8_t> uresp;
            if (st == ROF_ISA_OK)
                uresp.assign(env.resp.begin(), env.resp.begin() + env.ctx.resp_len);

            std::string why;
            if (k.status != ust)
                why +=
                    " status kernel " + std::to_string(k.status) + " user " + std::to_string(ust);
            if (k.exec_status != static_cast<uint32_t>(st))
                why += std::string(" executor kernel ") + rof_exec_status_name(k.exec_status) +
                       " user " + rof_exec_status_name(st);
            if (st == ROF_ISA_OK && k.prog_status != env.ctx.prog_status)
                why += " program status kernel " + std::to_string(k.prog_status) + " user " +
                       std::to_string(env.ctx.prog_status);
            if (st != ROF_ISA_OK && k.fault_pc != env.ctx.fault_pc)
                why += " fault pc kernel " + std::to_string(k.fault_pc) + " user " +
                       std::to_string(env.ctx.fault_pc);
            if (k.insns != env.ctx.executed)
                why += " insns kernel " + std::to_string(k.insns) + " user " +
                       std::to_string(env.ctx.executed);
            if (k.resp != uresp)
                why += " response kernel " + hex(k.resp) + " user " + hex(uresp);
            if (long o = first_diff(dk.data(), env.mem[0].data(), GenEnv::kData); o >= 0)
                why += " region data differs at " + std::to_string(o);
            if (long o = first_diff(hk.data(), env.mem[1].data(), GenEnv::kHeap); o >= 0)
                why += " region heap differs at " + std::to_string(o);
            if (!why.empty()) {
                bad++;
                printf("program %u (tag %016llx) differs:%s\n%s", i,
                       static_cast<unsigned long long>(l.tag), why.c_str(),
                       rof::prog::disassemble(p).c_str());
                continue;
            }
            same++;
            faults += st != ROF_ISA_OK;
            if (verbose)
                printf("program %u: budget %llu: %s, %u insns, %zu response bytes\n", i,
                       static_cast<unsigned long long>(budget), rof_exec_status_name(st), k.insns,
                       uresp.size());
        }
        printf("%u programs (seed %llu): %u identical (%u of them faults), %u differ\n", n,
               static_cast<unsigned long long>(seed), same, faults, bad);
        return bad ? 1 : 0;
    } catch (const std::exception& e) {
        fprintf(stderr, "rof-difftest: %s\n", e.what());
        return 1;
    }
}
