// kprog-check: end-to-end checks of programs inside rof.ko (issue 4).
//
//   kprog-check ioctls     every program ioctl with good and bad arguments,
//                          and without CAP_SYS_ADMIN: each errno as documented
//   kprog-check invoke     programs loaded and invoked over rxe: a hash GET
//                          and a list traversal over regions filled through
//                          their mmap, per-session scratch, a run-time fault
//                          (the session keeps serving), budget, bad args,
//                          unknown program, a revoked program, the audit
//   kprog-check race       a region force-destroyed under a stream of
//                          INVOKEs: right sums, then PROG_REVOKED only
//   kprog-check replace    PROG_REPLACE with good and bad arguments, the
//                          quota, chains of replaces and the aliases INVOKE
//                          follows (capped, shadowed by a load), the audit
//   kprog-check replace-race  20 replaces under a stream of INVOKEs by the
//                          original tag: each answered by one image
//   kprog-check replace-cycles N  N rounds of load, 20 replaces, unload;
//                          then a tenant destroyed with aliases (slabs)
//   kprog-check cycles N   N load/unload cycles, then a tenant destroyed
//                          with programs loaded (the script compares slabs)
//   kprog-check fair       tenant A floods maximal-budget INVOKEs from
//                          several sessions; tenant B's ECHOs are all
//                          answered (their p99 with and without the flood
//                          is printed, never asserted: timings vary)
//   kprog-check leave NAME a tenant with a program, left behind on exit
//   kprog-check count      programs loaded;  kprog-check drain: force drain
//
// Prints "ok"/"FAIL" lines; exit status 0 when every expectation held.
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/capability.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "kprog.h"
#include "rof/prog/asm.h"
#include "rof_exec.h"
#include "test_programs.h"

namespace {

using kprog::assemble;

int failed = 0;

// Force-destroys the test's tenants when the test leaves their scope, by
// return or by exception.
struct DestroyTenants {
    kprog::Dev& dev;
    std::vector<uint32_t> ids;
    ~DestroyTenants() {
        for (uint32_t id : ids)
            dev.tenant_destroy(id);
    }
};

void check(bool ok, const std::string& what, const std::string& detail = "") {
    printf("%s %s%s%s\n", ok ? "ok  " : "FAIL", what.c_str(), detail.empty() ? "" : ": ",
           detail.c_str());
    failed += !ok;
}

void expect_errno(const kprog::Dev& dev, unsigned long cmd, void* arg, int want,
                  const std::string& what) {
    int got = dev.ioc(cmd, arg);
    check(got == want, what, "got " + kprog::errno_name(got) + ", want " + kprog::errno_name(want));
}

// The tag field is a CRC of the image with the field as 0: re-sign an
// image edited on purpose, so that the module sees the edit, not the tag.
void retag(std::vector<uint8_t>& img) {
    uint64_t t = rof_exec_image_tag(img.data(), img.size());
    std::memcpy(img.data() + offsetof(rof_isa_hdr, tag), &t, 8);
}

rof_isa_hdr* hdr(std::vector<uint8_t>& img) {
    return reinterpret_cast<rof_isa_hdr*>(img.data());
}

std::vector<uint8_t> u64le(std::initializer_list<uint64_t> v) {
    std::vector<uint8_t> b;
    for (uint64_t x : v)
        for (int i = 0; i < 8; i++)
            b.push_back(static_cast<uint8_t>(x >> (8 * i)));
    return b;
}

void put64(uint8_t* p, uint64_t v) {
    std::memcpy(p, &v, 8);
}

const char* kFreelist = R"(
.resp 8
.region heap, rwa, 8192, freelist
        alloc r2, heap
        st64  resp[0], r2
        exit  0
)";

// Runs @body in a child process without capabilities (a /dev/rof fd the
// parent opened stays open); true when the child saw nothing unexpected.
template <typename F>
bool without_caps(F body) {
    pid_t pid = fork();
    if (pid == 0) {
        __user_cap_header_struct h{_LINUX_CAPABILITY_VERSION_3, 0};
        __user_cap_data_struct d[2] = {};
        if (syscall(SYS_capset, &h, d))
            _exit(2);
        body();
        _exit(failed ? 1 : 0);
    }
    int status = 0;
    return pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
           WEXITSTATUS(status) == 0;
}

// ---- ioctls -------------------------------------------------------------

void set_program_quota(kprog::Dev& dev, uint32_t t, uint32_t programs) {
    rof_tenant_quota q{};
    q.region_bytes = ROF_QUOTA_UNLIMITED;
    q.sessions = 0xffffffff;
    q.programs = programs;
    q.credits = ROF_CREDITS_DEFAULT;
    dev.kmod().tenant_set_quota(t, q);
}

bool tenant_has_programs(kprog::Dev& dev, uint32_t t) {
    for (const rof_prog_info& p : dev.kmod().list_progs())
        if (p.tenant == t)
            return true;
    return false;
}

int cmd_ioctls() {
    kprog::Dev dev;
    std::string tag = "kprog-ioctl-" + std::to_string(getpid());
    uint32_t t = dev.tenant_create(tag);
    uint32_t t2 = dev.tenant_create(tag + "-2");
    DestroyTenants cleanup{dev, {t, t2}};
    uint32_t rw = dev.region_create(t, tag + "-rw", 4096, ROF_ACCESS_READ | ROF_ACCESS_WRITE);
    uint32_t ro = dev.region_create(t, tag + "-ro", 4096, ROF_ACCESS_READ);
    uint32_t heap = dev.region_create(t, tag + "-heap", 8192, ROF_ACCESS_ALL);
    uint32_t heap2 = dev.region_create(t, tag + "-heap2", 8192, ROF_ACCESS_ALL);
    uint32_t other = dev.region_create(t2, tag + "-other", 4096, ROF_ACCESS_ALL);
    uint32_t fl = dev.freelist_create(heap, 64, 0, 16);
    uint32_t fl2 = dev.freelist_create(heap2, 64, 0, 16);

    rof::prog::Program small = assemble(kprog::kReadWordProgram, "small.rofs");
    const std::vector<uint8_t> good = small.encode();
    auto req = [&](const std::vector<uint8_t>& img) {
        return kprog::load_req(t, img, {{rw, 0}}, 100, 4096, "small");
    };

    // Good arguments: load, get, list, unload.
    rof_prog_load l = req(good);
    expect_errno(dev, ROF_IOC_PROG_LOAD, &l, 0, "load a good program");
    check(l.tag == small.tag(), "load returns the image's tag");
    rof_prog_load again = req(good);
    expect_errno(dev, ROF_IOC_PROG_LOAD, &again, EEXIST, "load the same tag twice");
    rof_prog_info pi{};
    pi.tenant = t;
    pi.tag = l.tag;
    expect_errno(dev, ROF_IOC_PROG_GET, &pi, 0, "get");
    check(!strcmp(pi.name, "small") && pi.budget == 100 && pi.byte_budget == 4096 &&
              pi.nbind == 1 && pi.bind[0].region == rw && pi.insn_cnt == small.insns.size() &&
              pi.resp_max == 8 && pi.args_max == 8 && !pi.flags,
          "get reports what was loaded");
    {
        std::vector<rof_prog_info> v(4);
        rof_list li{};
        li.elems = reinterpret_cast<uintptr_t>(v.data());
        li.capacity = 4;
        li.elem_size = sizeof(rof_prog_info);
        expect_errno(dev, ROF_IOC_PROG_LIST, &li, 0, "list");
        bool found = false;
        for (uint32_t i = 0; i < li.count; i++)
            found |= v[i].tag == l.tag && v[i].tenant == t;
        check(found && li.total >= 1, "list contains it");
        li.elem_size = sizeof(rof_prog_info) - 8;
        expect_errno(dev, ROF_IOC_PROG_LIST, &li, EINVAL, "list wrong elem_size");
        li.elem_size = sizeof(rof_prog_info);
        li.flags = ROF_LIST_FROM << 1;
        expect_errno(dev, ROF_IOC_PROG_LIST, &li, EINVAL, "list flags");
        li.flags = 0;
        li.start = 1;
        expect_errno(dev, ROF_IOC_PROG_LIST, &li, EINVAL, "list start without ROF_LIST_FROM");
        li.start = 0;
        li.capacity = ROF_LIST_MAX + 1;
        expect_errno(dev, ROF_IOC_PROG_LIST, &li, E2BIG, "list capacity too big");
        li.capacity = 4;
        li.elems = 16;
        expect_errno(dev, ROF_IOC_PROG_LIST, &li, EFAULT, "list unwritable array");
    }
    {
        // ROF_LIST_FROM: a second program (loaded later, so with a later
        // id), then pages of one: every program of one unpaged LIST once,
        // the two in load order, start growing page by page.
        rof_prog_load l2 = kprog::load_req(t2, good, {{other, 0}}, 100, 4096, "small2");
        expect_errno(dev, ROF_IOC_PROG_LOAD, &l2, 0, "load a second program");
        std::vector<rof_prog_info> all(64);
        rof_list li{};
        li.elems = reinterpret_cast<uintptr_t>(all.data());
        li.capacity = static_cast<uint32_t>(all.size());
        li.elem_size = sizeof(rof_prog_info);
        expect_errno(dev, ROF_IOC_PROG_LIST, &li, 0, "list unpaged");
        all.resize(li.count);
        std::vector<std::pair<uint32_t, __u64>> paged;
        uint32_t start = 0, pages = 0;
        bool cursor = true, totals = true;
        for (;;) {
            rof_prog_info one{};
            rof_list pg{};
            pg.elems = reinterpret_cast<uintptr_t>(&one);
            pg.capacity = 1;
            pg.elem_size = sizeof(rof_prog_info);
            pg.flags = ROF_LIST_FROM;
            pg.start = start;
            if (dev.ioc(ROF_IOC_PROG_LIST, &pg) != 0) {
                check(false, "list ROF_LIST_FROM");
                break;
            }
            pages++;
            totals &= pg.total == all.size() - paged.size();
            if (pg.count == 1)
                paged.emplace_back(one.tenant, one.tag);
            cursor &= pg.count == 0 ? pg.start == start : pg.start > start;
            if (pg.count == pg.total || pg.count == 0 || pages > all.size() + 1)
                break;
            start = pg.start;
        }
        bool same = paged.size() == all.size();
        for (size_t i = 0; same && i < all.size(); i++)
            same = paged[i] == std::pair<uint32_t, __u64>(all[i].tenant, all[i].tag);
        check(same && totals, "list in pages of one: every program once, as unpaged",
              std::to_string(paged.size()) + " paged, " + std::to_string(all.size()) + " unpaged");
        check(cursor, "list in pages: start grows page by page");
        auto at = [&](uint32_t tenant, __u64 tag) {
            return std::find(paged.begin(), paged.end(), std::pair<uint32_t, __u64>(tenant, tag)) -
                   paged.begin();
        };
        check(at(t, l.tag) < at(t2, l2.tag), "list in pages: in load order");
        rof_prog_id id2{};
        id2.tenant = t2;
        id2.tag = l2.tag;
        expect_errno(dev, ROF_IOC_PROG_UNLOAD, &id2, 0, "unload the second program");
    }
    {
        rof_destroy d{};
        d.id = rw;
        expect_errno(dev, ROF_IOC_REGION_DESTROY, &d, EBUSY,
                     "destroy a region a program is bound to, without force");
    }
    pi.flags = 1;
    expect_errno(dev, ROF_IOC_PROG_GET, &pi, EINVAL, "get flags");
    pi.flags = 0;
    pi.tag ^= 1;
    expect_errno(dev, ROF_IOC_PROG_GET, &pi, ENOENT, "get unknown tag");
    pi.tag = l.tag;
    pi.tenant = t2;
    expect_errno(dev, ROF_IOC_PROG_GET, &pi, ENOENT, "get with another tenant");

    rof_prog_id id{};
    id.tenant = t;
    id.tag = l.tag;
    id.flags = 1;
    expect_errno(dev, ROF_IOC_PROG_UNLOAD, &id, EINVAL, "unload flags");
    id.flags = 0;
    id.reserved = 1;
    expect_errno(dev, ROF_IOC_PROG_UNLOAD, &id, EINVAL, "unload reserved");
    id.reserved = 0;
    id.tenant = t2;
    expect_errno(dev, ROF_IOC_PROG_UNLOAD, &id, ENOENT, "unload with another tenant");
    id.tenant = t;
    expect_errno(dev, ROF_IOC_PROG_UNLOAD, &id, 0, "unload");
    expect_errno(dev, ROF_IOC_PROG_UNLOAD, &id, ENOENT, "unload again");

    // Bad fields of the load request.
    l = req(good);
    l.flags = 1;
    expect_errno(dev, ROF_IOC_PROG_LOAD, &l, EINVAL, "load unknown flags");
    l = req(good);
    l.reserved = 1;
    expect_errno(dev, ROF_IOC_PROG_LOAD, &l, EINVAL, "load reserved field");
    l = req(good);
    l.tag = 5;
    expect_errno(dev, ROF_IOC_PROG_LOAD, &l, EINVAL, "load with an out field set");
    l = req(good);
    std::memset(l.name, 'x', sizeof(l.name));
    expect_errno(dev, ROF_IOC_PROG_LOAD, &l, EINVAL, "load name not NUL-terminated");
    l = req(good);
    l.name[0] = 0;
    expect_errno(dev, ROF_IOC_PROG_LOAD, &l, EINVAL, "load empty name");
    l = req(good);
    l.budget = 0;
    expect_errno(dev, ROF_IOC_PROG_LOAD, &l, EINVAL, "load budget 0");
    l = req(good);
    l.byte_budget = 0;
    expect_errno(dev, ROF_IOC_PROG_LOAD, &l, EINVAL, "load byte budget 0");
    l = req(good);
    l.budget = 1ull << 40;
    expect_errno(dev, ROF_IOC_PROG_LOAD, &l, E2BIG, "load budget above the module limit");
    l = req(good);
    l.byte_budget = 1ull << 40;
    expect_errno(dev, ROF_IOC_PROG_LOAD, &l, E2BIG, "load byte budget above the module limit");
    l = req(good);
    l.image_len = ROF_PROG_IMAGE_MAX + 1;
    expect_errno(dev, ROF_IOC_PROG_LOAD, &l, E2BIG, "load image too large");
    l = req(good);
    l.image_len = 0;
    expect_errno(dev, ROF_IOC_PROG_LOAD, &l, E2BIG, "load empty image");
    l = req(good);
    l.image = 16;
    expect_errno(dev, ROF_IOC_PROG_LOAD, &l, EFAULT, "load unreadable image");
    expect_errno(dev, ROF_IOC_PROG_LOAD, reinterpret_cast<void*>(16), EFAULT,
                 "load unreadable argument");
    l = req(good);
    l.nbind = 2;
    l.bind[1] = {rw, 0};
    expect_errno(dev, ROF_IOC_PROG_LOAD, &l, EINVAL, "load bindings != image slots");
    l = req(good);
    l.nbind = ROF_ISA_MAX_SLOTS + 1;
    expect_errno(dev, ROF_IOC_PROG_LOAD, &l, EINVAL, "load 17 bindings");
    l = req(good);
    l.bind[5] = {rw, 0};
    expect_errno(dev, ROF_IOC_PROG_LOAD, &l, EINVAL, "load unused binding set");
    l = req(good);
    l.tenant = ROF_TENANT_ID_MAX;
    expect_errno(dev, ROF_IOC_PROG_LOAD, &l, ENOENT, "load unknown tenant");

    // Bad images.
    {
        std::vector<uint8_t> img = good;
        img.resize(img.size() - 8);
        l = req(img);
        expect_errno(dev, ROF_IOC_PROG_LOAD, &l, ENOEXEC, "load truncated image");
        img = good;
        hdr(img)->magic ^= 1;
        retag(img);
        l = req(img);
        expect_errno(dev, ROF_IOC_PROG_LOAD, &l, ENOEXEC, "load bad magic");
        check(l.error_insn == ~0U, "... error_insn names the header");
        img = good;
        hdr(img)->version = 2;
        retag(img);
        l = req(img);
        expect_errno(dev, ROF_IOC_PROG_LOAD, &l, ENOEXEC, "load bad version");
        img = good;
        hdr(img)->flags = 1;
        retag(img);
        l = req(img);
        expect_errno(dev, ROF_IOC_PROG_LOAD, &l, ENOEXEC, "load image flags");
        img = good;
        hdr(img)->reserved[1] = 1;
        retag(img);
        l = req(img);
        expect_errno(dev, ROF_IOC_PROG_LOAD, &l, ENOEXEC, "load image reserved");
        img = good;
        img.back() ^= 0x40;  // the exit status: the tag no longer matches
        l = req(img);
        expect_errno(dev, ROF_IOC_PROG_LOAD, &l, EBADMSG, "load bad tag (hash)");
        img = good;
        size_t insn2 = sizeof(rof_isa_hdr) + sizeof(rof_isa_slot) + 2 * sizeof(rof_insn);
        img[insn2] = 0xff;  // no such opcode
        retag(img);
        l = req(img);
        expect_errno(dev, ROF_IOC_PROG_LOAD, &l, ENOEXEC, "load unknown opcode");
        check(l.error_insn == 2, "... error_insn names the instruction",
              std::to_string(l.error_insn));
        img = good;
        hdr(img)->resp_max = ROF_INVOKE_RESP_MAX + 8;
        retag(img);
        l = req(img);
        expect_errno(dev, ROF_IOC_PROG_LOAD, &l, EFBIG, "load resp_max above the message");
        img = good;
        hdr(img)->scratch_size = 1u << 20;
        retag(img);
        l = req(img);
        expect_errno(dev, ROF_IOC_PROG_LOAD, &l, EFBIG, "load scratch above the module limit");
        img = good;
        hdr(img)->args_min = ROF_INVOKE_ARGS_MAX + 1;
        hdr(img)->args_max = ROF_INVOKE_ARGS_MAX + 1;
        retag(img);
        l = req(img);
        expect_errno(dev, ROF_IOC_PROG_LOAD, &l, EFBIG, "load args_min above the message");
    }

    // Bindings.
    l = kprog::load_req(t, good, {{ro, 0}}, 100, 4096, "small");
    expect_errno(dev, ROF_IOC_PROG_LOAD, &l, EACCES, "load slot access beyond the region's");
    l = kprog::load_req(t, good, {{other, 0}}, 100, 4096, "small");
    expect_errno(dev, ROF_IOC_PROG_LOAD, &l, ENXIO, "load with another tenant's region");
    l = kprog::load_req(t, good, {{0x7fffffff, 0}}, 100, 4096, "small");
    expect_errno(dev, ROF_IOC_PROG_LOAD, &l, ENXIO, "load unknown region");
    l = kprog::load_req(t, good, {{rw, fl}}, 100, 4096, "small");
    expect_errno(dev, ROF_IOC_PROG_LOAD, &l, EINVAL, "load free list on a plain slot");
    {
        std::vector<uint8_t> img = good;
        auto* s = reinterpret_cast<rof_isa_slot*>(img.data() + sizeof(rof_isa_hdr));
        s->len = 8192;
        retag(img);
        l = kprog::load_req(t, img, {{rw, 0}}, 100, 4096, "small");
        expect_errno(dev, ROF_IOC_PROG_LOAD, &l, ERANGE, "load slot longer than the region");
    }
    rof::prog::Program fprog = assemble(kFreelist, "fl.rofs");
    std::vector<uint8_t> fimg = fprog.encode();
    l = kprog::load_req(t, fimg, {{heap, 0}}, 100, 4096, "fl");
    expect_errno(dev, ROF_IOC_PROG_LOAD, &l, EINVAL, "load free-list slot without a list");
    l = kprog::load_req(t, fimg, {{heap, fl2}}, 100, 4096, "fl");
    expect_errno(dev, ROF_IOC_PROG_LOAD, &l, EXDEV, "load free list of another region");
    l = kprog::load_req(t, fimg, {{heap, 0x7fffffff}}, 100, 4096, "fl");
    expect_errno(dev, ROF_IOC_PROG_LOAD, &l, ENXIO, "load unknown free list");
    l = kprog::load_req(t, fimg, {{heap, fl}}, 100, 4096, "fl");
    expect_errno(dev, ROF_IOC_PROG_LOAD, &l, 0, "load a free-list program");
    {
        rof_destroy d{};
        d.id = fl;
        expect_errno(dev, ROF_IOC_FREELIST_DESTROY, &d, EBUSY,
                     "destroy a free list a program holds, without force");
    }

    // Quota: the free-list program counts; a quota of 1 refuses a second.
    {
        set_program_quota(dev, t, 1);
        l = req(good);
        expect_errno(dev, ROF_IOC_PROG_LOAD, &l, EDQUOT, "load beyond the program quota");
        const rof_tenant_info ti = dev.kmod().get_tenant(t).value();
        check(ti.usage.programs == 1, "tenant usage counts the program",
              std::to_string(ti.usage.programs));
        rof_destroy d{};
        d.id = t;
        expect_errno(dev, ROF_IOC_TENANT_DESTROY, &d, ENOTEMPTY,
                     "destroy a tenant with a program, without force");
    }

    // Without CAP_SYS_ADMIN: EPERM for each (the fd is open already).
    bool eperm = without_caps([&] {
        rof_prog_load ll = req(good);
        expect_errno(dev, ROF_IOC_PROG_LOAD, &ll, EPERM, "no CAP_SYS_ADMIN: load");
        rof_prog_id ii{};
        ii.tenant = t;
        ii.tag = fprog.tag();
        expect_errno(dev, ROF_IOC_PROG_UNLOAD, &ii, EPERM, "no CAP_SYS_ADMIN: unload");
        rof_prog_info pp{};
        pp.tenant = t;
        pp.tag = fprog.tag();
        expect_errno(dev, ROF_IOC_PROG_GET, &pp, EPERM, "no CAP_SYS_ADMIN: get");
        rof_list li{};
        li.elem_size = sizeof(rof_prog_info);
        expect_errno(dev, ROF_IOC_PROG_LIST, &li, EPERM, "no CAP_SYS_ADMIN: list");
    });
    check(eperm, "the unprivileged child saw EPERM everywhere");

    // A forced tenant destroy unloads its programs.
    dev.tenant_destroy(t);
    check(!tenant_has_programs(dev, t), "forced tenant destroy unloaded its programs");
    printf("%d unexpected results\n", failed);
    return failed ? 1 : 0;
}

// ---- invoke --------------------------------------------------------------

const char* kHashGet = R"(
; Hash GET (docs/isa.md 11.2): index of 8-byte record offsets, records
; {u64 key, u64 len, value}; the value goes out with respond.
.args 8, 8
.resp 256
.region index, r, 8192
.region heap, r, 65536
        ld64  r2, args[0]
        mov64 r3, 0
        hash  r3, args[0], r1
        and64 r3, 1023
        lsh64 r3, 3
        ld64  r4, index[r3]
        ld64  r5, heap[r4]
        jne   r5, r2, miss
        ld64  r7, heap[r4+8]
        copy  resp[0], heap[r4+16], r7 max 240 -> r6
        respond r6, 0
miss:   exit  2
)";

const char* kList = R"(
; List traversal with a predicate (docs/isa.md 11.3): first key >= target.
.args 16, 16
.resp 64
.region nodes, r, 65536
        ld64  r2, args[0]
        ld64  r3, args[8]
        mov64 r4, 0
top:    ld64  r5, nodes[r3]
        jge   r5, r2, hit
        ld64  r3, nodes[r3+8]
        jeq   r3, 0, miss
        loop  r4, top, 64
miss:   exit  1
hit:    copy  resp[0], nodes[r3], 64
        exit  0
)";

const char* kSpin = R"(
.args 0, 0
        mov64 r2, 0
top:    loop  r2, top, 100
        exit  0
)";

uint64_t load(kprog::Dev& dev, uint32_t t, const rof::prog::Program& p,
              const std::vector<rof_prog_bind>& b, uint64_t budget, const char* name) {
    return kprog::load(dev, t, p, b, budget, 1 << 20, name);
}

std::string describe(const kprog::InvokeResult& r) {
    return "status " + std::to_string(r.status) + " prog " + std::to_string(r.prog_status) +
           " exec " + rof_exec_status_name(static_cast<int>(r.exec_status)) + " pc " +
           std::to_string(r.fault_pc) + " insns " + std::to_string(r.insns) + " resp " +
           std::to_string(r.resp.size()) + " bytes";
}

int cmd_invoke() {
    kprog::Dev dev;
    std::string tag = "kprog-inv-" + std::to_string(getpid());
    uint32_t t = dev.tenant_create(tag);
    DestroyTenants cleanup{dev, {t}};
    uint32_t index = dev.region_create(t, tag + "-index", 8192, ROF_ACCESS_READ);
    uint32_t heap = dev.region_create(t, tag + "-heap", 65536, ROF_ACCESS_READ);
    uint32_t nodes = dev.region_create(t, tag + "-nodes", 65536, ROF_ACCESS_READ);

    // Open the audit ring first: the records of this test follow.
    rofd::UniqueFd audit = dev.kmod().audit_open(true);
    std::vector<rof_audit_record> old(256);
    while (read(audit.get(), old.data(), old.size() * sizeof(old[0])) > 0) {
    }

    // Fill the regions through their mappings, as a tenant application would.
    std::vector<uint64_t> stored;
    {
        kprog::Mapping mi(dev, index), mh(dev, heap), mn(dev, nodes);
        std::vector<bool> used(1024);
        for (uint64_t k = 1; k <= 20; k++) {
            uint64_t key = k * 1000003;
            uint64_t b = rof_exec_hash64(0, &key, 8) & 1023;
            if (used[b])
                continue;  // a collision: this simple index keeps one key
            used[b] = true;
            stored.push_back(k);
            uint64_t off = 64 + (k - 1) * 256;
            put64(mi.data() + 8 * b, off);
            put64(mh.data() + off, key);
            put64(mh.data() + off + 8, 10 + k);
            for (uint64_t j = 0; j < 10 + k; j++)
                mh.data()[off + 16 + j] = static_cast<uint8_t>(k + j);
        }
        for (uint64_t i = 1; i <= 100; i++) {
            put64(mn.data() + 64 * i, 10 * i);
            put64(mn.data() + 64 * i + 8, i < 100 ? 64 * (i + 1) : 0);
            for (int j = 16; j < 64; j++)
                mn.data()[64 * i + j] = static_cast<uint8_t>(i ^ j);
        }
        put64(mn.data() + 16, 0xffffffff0000ull);  // the fault's pointer
    }

    rof::prog::Program get = assemble(kHashGet, "hash_get.rofs");
    rof::prog::Program list = assemble(kList, "list.rofs");
    rof::prog::Program fault = assemble(kprog::kFaultProgram, "fault.rofs");
    rof::prog::Program counter = assemble(kprog::kCounterProgram, "counter.rofs");
    rof::prog::Program spin = assemble(kSpin, "spin.rofs");
    uint64_t tget = load(dev, t, get, {{index, 0}, {heap, 0}}, 100, "hash-get");
    uint64_t tlist = load(dev, t, list, {{nodes, 0}}, 1000, "list");
    uint64_t tfault = load(dev, t, fault, {{nodes, 0}}, 10, "fault");
    uint64_t tcount = load(dev, t, counter, {}, 10, "counter");
    uint64_t tspin = load(dev, t, spin, {}, 10, "spin");  // the loop needs ~102

    dev.set_random_key();
    {
        kprog::Client c(kprog::server_addr(), dev.prepare(t));

        for (uint64_t k : {stored.front(), stored.back()}) {
            uint64_t key = k * 1000003;
            kprog::InvokeResult r = kprog::decode_invoke(c.invoke(tget, u64le({key})));
            std::vector<uint8_t> want;
            for (uint64_t j = 0; j < 10 + k; j++)
                want.push_back(static_cast<uint8_t>(k + j));
            check(r.status == ROF_ST_OK && r.prog_status == 0 && r.resp == want && r.insns > 5,
                  "hash GET of key " + std::to_string(key) + " returns its value", describe(r));
        }
        kprog::InvokeResult r = kprog::decode_invoke(c.invoke(tget, u64le({4242})));
        check(r.status == ROF_ST_OK && r.prog_status == 2 && r.resp.empty(),
              "hash GET of a missing key: program status 2", describe(r));

        r = kprog::decode_invoke(c.invoke(tlist, u64le({355, 64})));
        std::vector<uint8_t> node40 = u64le({360, 64 * 37});
        for (int j = 16; j < 64; j++)
            node40.push_back(static_cast<uint8_t>(36 ^ j));
        check(r.status == ROF_ST_OK && r.prog_status == 0 && r.resp == node40,
              "list traversal finds the first key >= 355 (node 36)", describe(r));
        r = kprog::decode_invoke(c.invoke(tlist, u64le({100000, 64})));
        check(r.status == ROF_ST_OK && r.prog_status == 1, "list traversal: no such key",
              describe(r));

        r = kprog::decode_invoke(c.invoke(tfault, {}));
        check(r.status == ROF_ST_PROG_FAULT && r.exec_status == ROF_ISA_EPTR && r.fault_pc == 0 &&
                  r.insns == 1,
              "an out-of-bounds indirect read faults with EPTR at pc 0", describe(r));
        std::vector<uint8_t> hello = {'h', 'e', 'l', 'l', 'o'};
        kprog::Response e = c.request(ROF_OP_ECHO, hello);
        check(e.status == ROF_ST_OK && e.payload == hello, "the same session then ECHOes");
        r = kprog::decode_invoke(c.invoke(tget, u64le({stored.front() * 1000003})));
        check(r.status == ROF_ST_OK && r.prog_status == 0, "... and serves a good INVOKE",
              describe(r));

        r = kprog::decode_invoke(c.invoke(tspin, {}));
        check(r.status == ROF_ST_PROG_FAULT && r.exec_status == ROF_ISA_EBUDGET && r.insns == 10,
              "a run past its budget faults with EBUDGET after 10 insns", describe(r));
        r = kprog::decode_invoke(c.invoke(tget, std::vector<uint8_t>(4, 0)));
        check(r.status == ROF_ST_BAD_ARGS, "args shorter than args_min: BAD_ARGS", describe(r));
        r = kprog::decode_invoke(c.invoke(tget ^ 1, u64le({1})));
        check(r.status == ROF_ST_NO_PROGRAM, "unknown tag: NO_PROGRAM", describe(r));
        kprog::Response shorty = c.request(ROF_OP_INVOKE, std::vector<uint8_t>(4, 0));
        check(shorty.status == ROF_ST_BAD_LENGTH, "INVOKE payload shorter than the tag");

        for (uint64_t i = 1; i <= 3; i++) {
            r = kprog::decode_invoke(c.invoke(tcount, {}));
            check(r.status == ROF_ST_OK && r.prog_status == 7 && r.resp == u64le({i}),
                  "scratch keeps a counter across invocations: " + std::to_string(i), describe(r));
        }
    }
    {
        kprog::Client c(kprog::server_addr(), dev.prepare(t));
        kprog::InvokeResult r = kprog::decode_invoke(c.invoke(tcount, {}));
        check(r.status == ROF_ST_OK && r.resp == u64le({1}), "a new session's scratch starts at 0",
              describe(r));

        // A forced destroy of a bound region revokes the program only.
        dev.kmod().region_destroy(nodes, true);
        r = kprog::decode_invoke(c.invoke(tlist, u64le({355, 64})));
        check(r.status == ROF_ST_PROG_REVOKED, "a program of a destroyed region: PROG_REVOKED",
              describe(r));
        const rof_prog_info pi = dev.kmod().get_prog(t, tlist).value();
        check(pi.flags & ROF_PROG_REVOKED, "get shows ROF_PROG_REVOKED");
        check(pi.invocations == 2 && pi.faults == 0, "get counts its runs",
              std::to_string(pi.invocations));
        kprog::Response e = c.request(ROF_OP_ECHO, std::vector<uint8_t>(3, 9));
        check(e.status == ROF_ST_OK, "the session still serves ECHO");
        r = kprog::decode_invoke(c.invoke(tget, u64le({stored.back() * 1000003})));
        check(r.status == ROF_ST_OK && r.prog_status == 0, "... and other programs", describe(r));
        rof_prog_id id{};
        id.tenant = t;
        id.tag = tlist;
        expect_errno(dev, ROF_IOC_PROG_UNLOAD, &id, 0, "a revoked program unloads");
    }

    // The audit: one INVOKE record per run, with the tag and instructions.
    std::vector<rof_audit_record> recs(1024);
    ssize_t n = read(audit.get(), recs.data(), recs.size() * sizeof(recs[0]));
    bool ok_rec = false, fault_rec = false;
    for (ssize_t i = 0; i < n / static_cast<ssize_t>(sizeof(recs[0])); i++) {
        const rof_audit_record& a = recs[i];
        if (a.kind != ROF_AUDIT_INVOKE || a.tenant != t)
            continue;
        ok_rec |= a.tag == tget && a.status == ROF_ST_OK && a.insns > 5;
        fault_rec |= a.tag == tfault && a.status == ROF_ST_PROG_FAULT && a.reason == ROF_ISA_EPTR &&
                     a.insns == 1;
    }
    check(ok_rec, "audit: INVOKE record of the GET with its instructions");
    check(fault_rec, "audit: INVOKE record of the fault, reason EPTR");
    audit.reset();
    printf("%d unexpected results\n", failed);
    return failed ? 1 : 0;
}

// ---- race: a region revoked under a stream of invocations ---------------

const char* kSum = R"(
; Sums the region's first 512 words: a run that takes a while.
.args 0, 0
.resp 8
.region data, r, 4096
        mov64 r2, 0
        mov64 r3, 0
        mov64 r4, 0
top:    ld64  r5, data[r3]
        add64 r2, r5
        add64 r3, 8
        loop  r4, top, 512
        st64  resp[0], r2
        exit  0
)";

int cmd_race() {
    kprog::Dev dev;
    std::string tag = "kprog-race-" + std::to_string(getpid());
    uint32_t t = dev.tenant_create(tag);
    DestroyTenants cleanup{dev, {t}};
    uint32_t data = dev.region_create(t, tag + "-data", 4096, ROF_ACCESS_READ);
    {
        kprog::Mapping m(dev, data);
        for (uint64_t i = 0; i < 512; i++)
            put64(m.data() + 8 * i, i);
    }
    uint64_t tsum = load(dev, t, assemble(kSum, "sum.rofs"), {{data, 0}}, 4000, "sum");
    dev.set_random_key();
    kprog::Client c(kprog::server_addr(), dev.prepare(t));

    std::atomic<bool> stop{false};
    std::atomic<int> oks{0}, revoked{0}, wrong{0};
    std::thread invoker([&] {
        bool seen_revoked = false;
        try {
            while (!stop) {
                kprog::InvokeResult r = kprog::decode_invoke(c.invoke(tsum, {}));
                if (r.status == ROF_ST_OK && !seen_revoked && r.resp == u64le({511 * 512 / 2}))
                    oks++;
                else if (r.status == ROF_ST_PROG_REVOKED)
                    seen_revoked = true, revoked++;
                else
                    wrong++;
            }
        } catch (const std::exception& e) {
            printf("invoker: %s\n", e.what());
            wrong++;
        }
    });
    while (oks < 20 && !wrong)
        usleep(1000);
    rof_destroy d{};
    d.id = data;
    d.flags = ROF_DESTROY_FORCE;
    int e = dev.ioc(ROF_IOC_REGION_DESTROY, &d);
    while (revoked < 5 && !wrong)
        usleep(1000);
    stop = true;
    invoker.join();
    check(e == 0, "forced region destroy under a stream of INVOKEs", kprog::errno_name(e));
    check(oks >= 20 && revoked >= 5 && wrong == 0,
          "every answer is the right sum until the revoke, then PROG_REVOKED",
          std::to_string(oks) + " sums, " + std::to_string(revoked) + " revoked, " +
              std::to_string(wrong) + " wrong");
    kprog::Response echo = c.request(ROF_OP_ECHO, std::vector<uint8_t>(8, 1));
    check(echo.status == ROF_ST_OK, "the session keeps serving");
    printf("%d unexpected results\n", failed);
    return failed ? 1 : 0;
}

// ---- replace: PROG_REPLACE, aliases, INVOKE across a replace ---------------

// An image per constant @k: it loops a little (a run under way when a
// replace stops it is likely), then answers @k as its program status and
// as its 8-byte response.  Different @k, different tags.
std::vector<uint8_t> const_image(uint64_t k) {
    std::string text = ".args 0, 0\n.resp 8\n        mov64 r3, 0\ntop:    loop  r3, top, 50\n";
    text += "        mov64 r2, " + std::to_string(k) + "\n        st64  resp[0], r2\n";
    text += "        exit  " + std::to_string(k) + "\n";
    return assemble(text, "const" + std::to_string(k) + ".rofs").encode();
}

uint64_t image_tag(const std::vector<uint8_t>& img) {
    uint64_t t = 0;
    std::memcpy(&t, img.data() + offsetof(rof_isa_hdr, tag), 8);
    return t;
}

rof_prog_replace replace_req(uint32_t t, uint64_t old, const std::vector<uint8_t>& img,
                             const std::vector<rof_prog_bind>& binds = {}) {
    rof_prog_replace r{};
    r.load = kprog::load_req(t, img, binds, 1000, 4096, "replaced");
    r.old_tag = old;
    return r;
}

// Replaces tenant @t's program @old by @img; the new tag.
uint64_t replace(kprog::Dev& dev, uint32_t t, uint64_t old, const std::vector<uint8_t>& img) {
    rof_prog_replace r = replace_req(t, old, img);
    dev.must(ROF_IOC_PROG_REPLACE, &r, "replace");
    return r.load.tag;
}

uint64_t load_const(kprog::Dev& dev, uint32_t t, const std::vector<uint8_t>& img) {
    rof_prog_load l = kprog::load_req(t, img, {}, 1000, 4096, "const");
    return dev.kmod().prog_load(l, img);
}

uint32_t aliases(kprog::Dev& dev, uint32_t t, uint64_t tag) {
    std::optional<rof_prog_info> pi = dev.kmod().get_prog(t, tag);
    return pi ? pi->aliases : ~0U;
}

// INVOKE by @tag is answered by the image of constant @k.
void expect_served(kprog::Client& c, uint64_t tag, uint64_t k, const std::string& what) {
    kprog::InvokeResult r = kprog::decode_invoke(c.invoke(tag, {}));
    check(r.status == ROF_ST_OK && r.prog_status == k && r.resp == u64le({k}), what, describe(r));
}

void expect_no_program(kprog::Client& c, uint64_t tag, const std::string& what) {
    kprog::InvokeResult r = kprog::decode_invoke(c.invoke(tag, {}));
    check(r.status == ROF_ST_NO_PROGRAM, what, describe(r));
}

uint32_t programs_used(kprog::Dev& dev, uint32_t t) {
    return dev.kmod().get_tenant(t).value().usage.programs;
}

// The INVOKE records of tenant @t in the audit ring (@audit is
// nonblocking), which this empties.
std::vector<rof_audit_record> invoke_records(int audit, uint32_t t) {
    std::vector<rof_audit_record> recs(256), out;
    ssize_t n;
    while ((n = read(audit, recs.data(), recs.size() * sizeof(recs[0]))) > 0)
        for (ssize_t i = 0; i < n / static_cast<ssize_t>(sizeof(recs[0])); i++)
            if (recs[i].kind == ROF_AUDIT_INVOKE && recs[i].tenant == t)
                out.push_back(recs[i]);
    return out;
}

// Bad requests first (nothing changes), then chains of replaces.
void replace_ioctls(kprog::Dev& dev, uint32_t t, uint32_t t2) {
    uint32_t rw = dev.region_create(t, "kprog-repl-rw-" + std::to_string(t), 4096,
                                    ROF_ACCESS_READ | ROF_ACCESS_WRITE);
    const std::vector<uint8_t> img1 = const_image(1), img2 = const_image(2),
                               img100 = const_image(100);
    const uint64_t tag1 = load_const(dev, t, img1), tag100 = load_const(dev, t, img100);

    rof_prog_replace r = replace_req(t, tag1, img2);
    r.reserved = 1;
    expect_errno(dev, ROF_IOC_PROG_REPLACE, &r, EINVAL, "replace reserved field");
    r = replace_req(t, tag1, img2);
    r.load.flags = 1;
    expect_errno(dev, ROF_IOC_PROG_REPLACE, &r, EINVAL, "replace, load part: unknown flags");
    r = replace_req(t, tag1, img2);
    r.load.tag = 5;
    expect_errno(dev, ROF_IOC_PROG_REPLACE, &r, EINVAL, "replace, load part: out field set");
    r = replace_req(t, tag1 ^ 1, img2);
    expect_errno(dev, ROF_IOC_PROG_REPLACE, &r, ENOENT, "replace an unknown old tag");
    r = replace_req(t2, tag1, img2);
    expect_errno(dev, ROF_IOC_PROG_REPLACE, &r, ENOENT, "replace another tenant's program");
    r = replace_req(t, tag1, img1);
    expect_errno(dev, ROF_IOC_PROG_REPLACE, &r, EEXIST, "replace by the same image (old tag)");
    r = replace_req(t, tag1, img100);
    expect_errno(dev, ROF_IOC_PROG_REPLACE, &r, EEXIST,
                 "replace by the image of another loaded program");
    {
        std::vector<uint8_t> bad = assemble(kprog::kReadWordProgram, "small.rofs").encode();
        bad[sizeof(rof_isa_hdr) + sizeof(rof_isa_slot) + 2 * sizeof(rof_insn)] = 0xff;
        retag(bad);
        r = replace_req(t, tag1, bad, {{rw, 0}});
        expect_errno(dev, ROF_IOC_PROG_REPLACE, &r, ENOEXEC, "replace by a bad image");
        check(r.load.error_insn == 2, "... error_insn names the instruction",
              std::to_string(r.load.error_insn));
        std::vector<uint8_t> good = assemble(kprog::kReadWordProgram, "small.rofs").encode();
        r = replace_req(t, tag1, good, {{0x7fffffff, 0}});
        expect_errno(dev, ROF_IOC_PROG_REPLACE, &r, ENXIO, "replace binding an unknown region");
        r = replace_req(t, tag1, good);
        expect_errno(dev, ROF_IOC_PROG_REPLACE, &r, EINVAL, "replace, bindings != image slots");
    }
    r = replace_req(t, tag1, img2);
    r.load.image = 16;
    expect_errno(dev, ROF_IOC_PROG_REPLACE, &r, EFAULT, "replace unreadable image");
    expect_errno(dev, ROF_IOC_PROG_REPLACE, reinterpret_cast<void*>(16), EFAULT,
                 "replace unreadable argument");
    check(aliases(dev, t, tag1) == 0 && aliases(dev, t, tag100) == 0 && programs_used(dev, t) == 2,
          "failed replaces changed nothing: both programs, no alias, usage 2");

    bool eperm = without_caps([&] {
        rof_prog_replace rr = replace_req(t, tag1, img2);
        expect_errno(dev, ROF_IOC_PROG_REPLACE, &rr, EPERM, "no CAP_SYS_ADMIN: replace");
    });
    check(eperm, "the unprivileged child saw EPERM");

    // At its quota (2 programs), the tenant may still replace.
    set_program_quota(dev, t, 2);
    rof_prog_load l = kprog::load_req(t, img2, {}, 1000, 4096, "const");
    expect_errno(dev, ROF_IOC_PROG_LOAD, &l, EDQUOT, "a load at the program quota");
    r = replace_req(t, tag1, img2);
    expect_errno(dev, ROF_IOC_PROG_REPLACE, &r, 0, "a replace at the program quota");
    const uint64_t tag2 = r.load.tag;
    check(tag2 == image_tag(img2), "replace returns the new image's tag");
    check(programs_used(dev, t) == 2, "the quota usage stays the same",
          std::to_string(programs_used(dev, t)));
    check(!dev.kmod().get_prog(t, tag1), "get of the old tag: ENOENT");
    check(aliases(dev, t, tag2) == 1, "get of the new tag: aliases 1");
    rof_prog_id id{};
    id.tenant = t;
    id.tag = tag1;
    expect_errno(dev, ROF_IOC_PROG_UNLOAD, &id, ENOENT, "unload of the old tag: ENOENT");
    const std::vector<uint8_t> img3 = const_image(3);
    r = replace_req(t, tag1, img3);
    expect_errno(dev, ROF_IOC_PROG_REPLACE, &r, ENOENT,
                 "replace names the old program by its own tag, not an alias");
    bool listed = false;
    for (const rof_prog_info& p : dev.kmod().list_progs())
        if (p.tenant == t && p.tag == tag2)
            listed = p.aliases == 1;
    check(listed, "list reports the aliases");
    set_program_quota(dev, t, 0xffffffff);
}

int cmd_replace() {
    kprog::Dev dev;
    std::string name = "kprog-repl-" + std::to_string(getpid());
    uint32_t t = dev.tenant_create(name);
    uint32_t t2 = dev.tenant_create(name + "-2");
    DestroyTenants cleanup{dev, {t, t2}};
    rofd::UniqueFd audit = dev.kmod().audit_open(true);
    invoke_records(audit.get(), t);  // what came before

    replace_ioctls(dev, t, t2);

    std::vector<std::vector<uint8_t>> img(20);
    std::vector<uint64_t> tag(20);
    for (uint64_t k = 1; k < img.size(); k++) {
        img[k] = const_image(k);
        tag[k] = image_tag(img[k]);
    }
    dev.set_random_key();
    kprog::Client c(kprog::server_addr(), dev.prepare(t));

    // 1 was replaced by 2 (replace_ioctls); then 2 by 3: a chain.
    expect_served(c, tag[1], 2, "INVOKE by the replaced tag 1 runs 2");
    replace(dev, t, tag[2], img[3]);
    check(aliases(dev, t, tag[3]) == 2, "a chain 1 -> 2 -> 3: 3 has aliases 2",
          std::to_string(aliases(dev, t, tag[3])));
    invoke_records(audit.get(), t);
    for (uint64_t k : {1, 2, 3})
        expect_served(c, tag[k], 3, "INVOKE by tag " + std::to_string(k) + " runs 3");
    {
        std::vector<rof_audit_record> recs = invoke_records(audit.get(), t);
        bool all3 = recs.size() == 3;
        for (const rof_audit_record& a : recs)
            all3 &= a.tag == tag[3] && a.status == ROF_ST_OK;
        check(all3, "audit: the INVOKEs by tags 1, 2 and 3 carry tag 3",
              std::to_string(recs.size()) + " records");
    }

    // A load of tag 1 shadows the alias: 3 serves 2 only, and unloading
    // 1 leaves nothing behind for tag 1.
    const uint64_t again1 = load_const(dev, t, img[1]);
    check(again1 == tag[1] && aliases(dev, t, tag[3]) == 1,
          "a load of an aliased tag takes the alias away (3 has aliases 1)");
    expect_served(c, tag[1], 1, "INVOKE by tag 1 runs the loaded 1");
    expect_served(c, tag[2], 3, "INVOKE by tag 2 still runs 3");
    dev.kmod().prog_unload(t, tag[1]);
    expect_no_program(c, tag[1], "1 unloaded: INVOKE by tag 1 finds no program");

    // Back to 1: 3 -> 1, and 1 serves 2 and 3.
    replace(dev, t, tag[3], img[1]);
    check(aliases(dev, t, tag[1]) == 2, "3 -> 1: 1 has aliases 2 (2, 3)",
          std::to_string(aliases(dev, t, tag[1])));
    for (uint64_t k : {1, 2, 3})
        expect_served(c, tag[k], 1, "after 3 -> 1, INVOKE by tag " + std::to_string(k) + " runs 1");

    // 1 -> 4 -> ... -> 19: aliases 2, 3, 1, 4, ... 18, oldest first; at
    // most ROF_PROG_ALIASES_MAX stay, the least recently used go: 2 and 3,
    // last invoked before any of the others was made.
    uint64_t cur = tag[1];
    for (uint64_t k = 4; k <= 19; k++)
        cur = replace(dev, t, cur, img[k]);
    check(cur == tag[19] && aliases(dev, t, tag[19]) == ROF_PROG_ALIASES_MAX,
          "16 more replaces: aliases capped at ROF_PROG_ALIASES_MAX",
          std::to_string(aliases(dev, t, tag[19])));
    expect_no_program(c, tag[2], "the oldest alias (2) was dropped: NO_PROGRAM");
    expect_no_program(c, tag[3], "the next oldest (3) too");
    for (uint64_t k : {1, 4, 18, 19})
        expect_served(c, tag[k], 19, "INVOKE by tag " + std::to_string(k) + " runs 19");
    check(programs_used(dev, t) == 2, "usage: 2 programs (19 and 100) after 19 replaces",
          std::to_string(programs_used(dev, t)));

    // A tenant destroyed with aliases: everything goes (kprog-replace
    // compares slabs around replace-cycles; kmemleak sees the rest).
    dev.tenant_destroy(t);
    check(!tenant_has_programs(dev, t), "forced tenant destroy unloaded the programs");
    printf("%d unexpected results\n", failed);
    return failed ? 1 : 0;
}

// One client invokes by the original tag in a loop while the program is
// replaced 20 times, alternating two images: each answer is one image's,
// never an error, and both served.
int cmd_replace_race() {
    constexpr int kReplaces = 20;
    kprog::Dev dev;
    std::string name = "kprog-rrace-" + std::to_string(getpid());
    uint32_t t = dev.tenant_create(name);
    DestroyTenants cleanup{dev, {t}};
    const std::vector<uint8_t> a = const_image(1), b = const_image(2);
    const uint64_t ta = load_const(dev, t, a);
    dev.set_random_key();
    kprog::Client c(kprog::server_addr(), dev.prepare(t));

    std::atomic<bool> stop{false};
    std::atomic<uint64_t> answers{0}, by_a{0}, by_b{0}, wrong{0};
    std::string first_wrong;
    std::thread invoker([&] {
        try {
            while (!stop) {
                kprog::InvokeResult r = kprog::decode_invoke(c.invoke(ta, {}));
                if (r.status == ROF_ST_OK && r.prog_status == 1 && r.resp == u64le({1})) {
                    by_a++;
                } else if (r.status == ROF_ST_OK && r.prog_status == 2 && r.resp == u64le({2})) {
                    by_b++;
                } else {
                    if (!wrong++)
                        first_wrong = describe(r);
                }
                answers++;
            }
        } catch (const std::exception& e) {
            if (!wrong++)
                first_wrong = e.what();
        }
    });
    // Each replace waits for two answers after the previous one: the
    // second was asked after the replace returned, so it is the new
    // image's.  The next replace races the stream of INVOKEs.
    auto two_more = [&] {
        uint64_t from = answers;
        while (answers < from + 2 && !wrong)
            usleep(1000);
    };
    two_more();
    uint64_t cur = ta;
    int done = 0, err = 0;
    for (int i = 0; i < kReplaces && !wrong; i++) {
        rof_prog_replace r = replace_req(t, cur, i % 2 ? a : b);
        err = dev.ioc(ROF_IOC_PROG_REPLACE, &r);
        if (err)
            break;
        cur = r.load.tag;
        done++;
        two_more();
    }
    stop = true;
    invoker.join();
    check(done == kReplaces, std::to_string(kReplaces) + " replaces under a stream of INVOKEs",
          kprog::errno_name(err));
    check(wrong == 0 && by_a > 0 && by_b > 0,
          "every INVOKE by the original tag answered by one image, both served",
          std::to_string(by_a) + " by 1, " + std::to_string(by_b) + " by 2, " +
              std::to_string(wrong) + " failed" + (first_wrong.empty() ? "" : ": " + first_wrong));
    size_t progs = 0;
    for (const rof_prog_info& p : dev.kmod().list_progs())
        progs += p.tenant == t;
    check(progs == 1 && aliases(dev, t, cur) == 1,
          "one program left, with one alias (the other image's tag)");
    printf("%d unexpected results\n", failed);
    return failed ? 1 : 0;
}

// @n rounds of a load, 20 replaces (aliases dropped past the cap) and an
// unload; then the same left loaded and the tenant destroyed (the script
// compares slabs).
int cmd_replace_cycles(int n) {
    kprog::Dev dev;
    std::string name = "kprog-rcyc-" + std::to_string(getpid());
    uint32_t t = dev.tenant_create(name);
    std::vector<std::vector<uint8_t>> img;
    for (uint64_t k = 1; k <= ROF_PROG_ALIASES_MAX + 4; k++)
        img.push_back(const_image(k));
    auto round = [&] {
        uint64_t cur = load_const(dev, t, img[0]);
        for (size_t k = 1; k < img.size(); k++)
            cur = replace(dev, t, cur, img[k]);
        return cur;
    };
    for (int i = 0; i < n; i++)
        dev.kmod().prog_unload(t, round());
    round();
    dev.tenant_destroy(t);
    check(!dev.kmod().get_tenant(t), "forced destroy removed the tenant with aliases");
    printf("%d rounds of %zu replaces done\n", n, img.size() - 1);
    return failed ? 1 : 0;
}

// ---- leave, drain: programs outlive their loader, block unload ------------

// Loads a program for a new tenant and exits without cleaning up.
int cmd_leave(const std::string& name) {
    kprog::Dev dev;
    uint32_t t = dev.tenant_create(name);
    uint32_t rw = dev.region_create(t, name + "-rw", 4096, ROF_ACCESS_READ | ROF_ACCESS_WRITE);
    rof::prog::Program small = assemble(kprog::kReadWordProgram, "small.rofs");
    load(dev, t, small, {{rw, 0}}, 100, "left");
    printf("%u %016llx\n", t, static_cast<unsigned long long>(small.tag()));
    return 0;
}

// Prints how many programs are loaded (all tenants).
int cmd_count() {
    kprog::Dev dev;
    printf("%zu\n", dev.kmod().list_progs().size());
    return 0;
}

int cmd_drain() {
    kprog::Dev dev;
    rof_drain d{};
    d.flags = ROF_DESTROY_FORCE;
    dev.must(ROF_IOC_TENANT_DRAIN, &d, "drain");
    printf("%u tenants destroyed\n", d.tenants);
    return 0;
}

// ---- cycles --------------------------------------------------------------

int cmd_cycles(int n) {
    kprog::Dev dev;
    std::string tag = "kprog-cyc-" + std::to_string(getpid());
    uint32_t t = dev.tenant_create(tag);
    uint32_t rw = dev.region_create(t, tag + "-rw", 4096, ROF_ACCESS_READ | ROF_ACCESS_WRITE);
    uint32_t heap = dev.region_create(t, tag + "-heap", 8192, ROF_ACCESS_ALL);
    uint32_t fl = dev.freelist_create(heap, 64, 0, 16);
    std::vector<uint8_t> small = assemble(kprog::kReadWordProgram, "small.rofs").encode();
    std::vector<uint8_t> fimg = assemble(kFreelist, "fl.rofs").encode();
    for (int i = 0; i < n; i++) {
        rof_prog_load a = kprog::load_req(t, small, {{rw, 0}}, 100, 4096, "small");
        rof_prog_load b = kprog::load_req(t, fimg, {{heap, fl}}, 100, 4096, "fl");
        const uint64_t ta = dev.kmod().prog_load(a, small);
        const uint64_t tb = dev.kmod().prog_load(b, fimg);
        dev.kmod().prog_unload(t, ta);
        dev.kmod().prog_unload(t, tb);
    }
    // The last round stays loaded: the tenant's destroy must clean up.
    rof_prog_load a = kprog::load_req(t, small, {{rw, 0}}, 100, 4096, "small");
    rof_prog_load b = kprog::load_req(t, fimg, {{heap, fl}}, 100, 4096, "fl");
    dev.kmod().prog_load(a, small);
    dev.kmod().prog_load(b, fimg);
    dev.tenant_destroy(t);
    check(!dev.kmod().get_tenant(t), "forced destroy removed the tenant");
    check(!tenant_has_programs(dev, t), "... and its programs");
    printf("%d load/unload cycles done\n", n);
    return failed ? 1 : 0;
}

// About 960k instructions a run: the largest budget a program may have.
const char* kHog = R"(
.args 0, 0
        mov64 r3, 0
outer:  mov64 r2, 0
inner:  loop  r2, inner, 1000
        loop  r3, outer, 960
        exit  0
)";

uint64_t percentile(std::vector<uint64_t> v, double p) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0 : v[static_cast<size_t>(p * static_cast<double>(v.size() - 1))];
}

// Round trips of @n ECHOs on one session of tenant @t, in microseconds.
std::vector<uint64_t> echo_times(kprog::Dev& dev, uint32_t t, int n) {
    kprog::Client c(kprog::server_addr(), dev.prepare(t));
    std::vector<uint8_t> payload(32, 0x5a);
    std::vector<uint64_t> us;
    for (int i = 0; i < n; i++) {
        auto t0 = std::chrono::steady_clock::now();
        kprog::Response r = c.request(ROF_OP_ECHO, payload);
        auto t1 = std::chrono::steady_clock::now();
        if (r.status != ROF_ST_OK || r.payload != payload)
            throw kprog::Error("ECHO " + std::to_string(i) + ": status " +
                               std::to_string(r.status));
        us.push_back(static_cast<uint64_t>(
            std::chrono::duration_cast<std::chrono::microseconds>(t1 - t0).count()));
    }
    return us;
}

int cmd_fair() {
    constexpr int kHogs = 4, kEchoes = 200;
    kprog::Dev dev;
    std::string tag = "kprog-fair-" + std::to_string(getpid());
    uint32_t ta = dev.tenant_create(tag + "-a");
    uint32_t tb = dev.tenant_create(tag + "-b");
    DestroyTenants cleanup{dev, {ta, tb}};
    uint64_t thog = load(dev, ta, assemble(kHog, "hog.rofs"), {}, 1000000, "hog");
    dev.set_random_key();

    std::vector<uint64_t> alone = echo_times(dev, tb, kEchoes);

    std::atomic<bool> stop{false};
    std::atomic<uint64_t> runs{0};
    std::atomic<int> hog_errors{0}, hogs_up{0};
    std::vector<std::thread> hogs;
    for (int i = 0; i < kHogs; i++) {
        hogs.emplace_back([&] {
            try {
                kprog::Client c(kprog::server_addr(), dev.prepare(ta));
                hogs_up++;
                while (!stop) {
                    kprog::InvokeResult r = kprog::decode_invoke(c.invoke(thog, {}));
                    if (r.status != ROF_ST_OK)
                        hog_errors++;
                    runs++;
                }
            } catch (const std::exception& e) {
                fprintf(stderr, "hog: %s\n", e.what());
                hog_errors++;
                hogs_up++;
            }
        });
    }
    // The flood is on once every hog session ran a program.
    while ((hogs_up < kHogs || runs < static_cast<uint64_t>(kHogs)) && hog_errors == 0)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    std::vector<uint64_t> flooded;
    try {
        flooded = echo_times(dev, tb, kEchoes);
    } catch (const std::exception& e) {
        check(false, "tenant B served during the flood", e.what());
    }
    stop = true;
    for (auto& h : hogs)
        h.join();
    check(hog_errors == 0, "tenant A's INVOKEs all ran", std::to_string(hog_errors) + " errors");
    check(flooded.size() == kEchoes,
          "tenant B's " + std::to_string(kEchoes) + " ECHOs answered during the flood",
          std::to_string(flooded.size()));
    uint64_t p99a = percentile(alone, 0.99), p99f = percentile(flooded, 0.99);
    printf(
        "info B alone: p50 %llu us p99 %llu us; during %d-session flood (%llu hog runs): "
        "p50 %llu us p99 %llu us; p99 ratio %.1f\n",
        static_cast<unsigned long long>(percentile(alone, 0.5)),
        static_cast<unsigned long long>(p99a), kHogs, static_cast<unsigned long long>(runs.load()),
        static_cast<unsigned long long>(percentile(flooded, 0.5)),
        static_cast<unsigned long long>(p99f),
        p99a ? static_cast<double>(p99f) / static_cast<double>(p99a) : 0.0);
    return failed ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
    std::string cmd = argc > 1 ? argv[1] : "";
    try {
        if (cmd == "ioctls")
            return cmd_ioctls();
        if (cmd == "invoke")
            return cmd_invoke();
        if (cmd == "race")
            return cmd_race();
        if (cmd == "replace")
            return cmd_replace();
        if (cmd == "replace-race")
            return cmd_replace_race();
        if (cmd == "replace-cycles" && argc == 3)
            return cmd_replace_cycles(std::stoi(argv[2]));
        if (cmd == "fair")
            return cmd_fair();
        if (cmd == "leave" && argc == 3)
            return cmd_leave(argv[2]);
        if (cmd == "count")
            return cmd_count();
        if (cmd == "drain")
            return cmd_drain();
        if (cmd == "cycles" && argc == 3)
            return cmd_cycles(std::stoi(argv[2]));
    } catch (const std::exception& e) {
        fprintf(stderr, "kprog-check %s: %s\n", cmd.c_str(), e.what());
        return 1;
    }
    fprintf(stderr,
            "usage: kprog-check ioctls | invoke | race | replace | replace-race | "
            "replace-cycles N | fair | cycles N | leave NAME | count | drain\n");
    return 2;
}
