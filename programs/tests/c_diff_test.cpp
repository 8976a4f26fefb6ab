// The library in both forms: each programs/NAME.c (compiled with clang at test time and
// translated, libclient/prog/bpf.cpp) against programs/NAME.rofs on the userspace executor,
// over a generated corpus (seeded, deterministic) of arguments and region states: the same
// executor status, program status, response bytes and region contents after every run.
// Single-threaded: the races are the .rofs tests' business; this is about the translation.
#include <cinttypes>
#include <cstdio>
#include <random>

#include "rof/prog/bpf.h"
#include "runner.h"

namespace c_diff_test {
namespace {

using namespace rof::programs::test;
using Bytes = std::vector<uint8_t>;

// The same header: args and resp bounds, slots (names, access, flags, windows).
void expect_same_shape(const Loaded& a, const Loaded& c, const std::string& name) {
    EXPECT_EQ(a.prog.args_min, c.prog.args_min) << name;
    EXPECT_EQ(a.prog.args_max, c.prog.args_max) << name;
    EXPECT_EQ(a.prog.resp_max, c.prog.resp_max) << name;
    ASSERT_EQ(a.prog.slots.size(), c.prog.slots.size()) << name;
    for (size_t i = 0; i < a.prog.slots.size(); i++) {
        EXPECT_EQ(a.prog.slots[i].name, c.prog.slots[i].name) << name << " slot " << i;
        EXPECT_EQ(a.prog.slots[i].access, c.prog.slots[i].access) << name << " slot " << i;
        EXPECT_EQ(a.prog.slots[i].flags, c.prog.slots[i].flags) << name << " slot " << i;
        EXPECT_EQ(a.prog.slots[i].len, c.prog.slots[i].len) << name << " slot " << i;
    }
}

std::string hex(const Bytes& b) {
    std::string s;
    char buf[4];
    for (uint8_t x : b) {
        std::snprintf(buf, sizeof(buf), "%02x", x);
        s += buf;
    }
    return s;
}

// The same answer; on a fault only the status (the pc is the translation's).
bool same(const Result& a, const Result& c, const std::string& what) {
    if (a.status != c.status) {
        ADD_FAILURE() << what << ": executor status " << rof_exec_status_name(a.status)
                      << " (.rofs) vs " << rof_exec_status_name(c.status) << " (.c, pc "
                      << c.fault_pc << ")";
        return false;
    }
    if (a.status != ROF_ISA_OK)
        return true;
    if (a.prog_status != c.prog_status) {
        ADD_FAILURE() << what << ": program status " << a.prog_status << " (.rofs) vs "
                      << c.prog_status << " (.c)";
        return false;
    }
    if (a.resp != c.resp) {
        ADD_FAILURE() << what << ": response\n  .rofs " << hex(a.resp) << "\n  .c    "
                      << hex(c.resp);
        return false;
    }
    return true;
}

// Two Memories kept in lockstep: one the .rofs programs run on, one the .c.
struct Twin {
    Memory a, c;
    std::vector<std::string> names;

    void add_region(const std::string& name, uint64_t len) {
        a.add_region(name, len);
        c.add_region(name, len);
        names.push_back(name);
    }
    void add_freelist(const std::string& name, uint64_t at, uint64_t bs, uint64_t count) {
        a.add_freelist(name, at, bs, count);
        c.add_freelist(name, at, bs, count);
    }
    // Writes @b at @off of region @name in both.
    void write(const std::string& name, uint64_t off, const void* b, size_t n) {
        std::memcpy(a.bytes(name).data() + off, b, n);
        std::memcpy(c.bytes(name).data() + off, b, n);
    }
    void set_u64(const std::string& name, uint64_t off, uint64_t v) { write(name, off, &v, 8); }
    // Every region, byte for byte: after every run, or every @every-th
    // run (the kvstore's 18 MB), and at the end of a test.
    unsigned every = 1, runs = 0;
    bool regions_same(const std::string& what, bool now = false) {
        if (!now && ++runs % every != 0)
            return true;
        for (const auto& n : names) {
            auto x = a.bytes(n), y = c.bytes(n);
            if (!std::equal(x.begin(), x.end(), y.begin())) {
                size_t at = 0;
                while (x[at] == y[at])
                    at++;
                ADD_FAILURE() << what << ": region " << n << " differs from byte " << at;
                return false;
            }
        }
        return true;
    }
};

// One session of a pair: its .rofs and .c invokers, each with its own scratch.
struct Pair {
    Invoker a, c;
    Pair(const Loaded& la, const Loaded& lc, Twin& t, std::vector<Invoker::Bind> binds = {})
        : a(la, t.a, binds), c(lc, t.c, binds) {}
    // Runs @args on both; false (and a failure) when they differ.
    bool run(Twin& t, const Bytes& args, const std::string& what) {
        const Result ra = a.run(args), rc = c.run(args);
        return same(ra, rc, what + " args " + hex(args)) && t.regions_same(what);
    }
};

// Both forms of a program, loaded once per test binary.
struct Progs {
    const Loaded &a, &c;
    explicit Progs(const std::string& name) : a(cached(name, false)), c(cached(name, true)) {
        expect_same_shape(a, c, name);
    }
    static const Loaded& cached(const std::string& name, bool c) {
        static std::map<std::pair<std::string, bool>, Loaded> loaded;
        auto it = loaded.find({name, c});
        if (it == loaded.end())
            it = loaded.emplace(std::pair{name, c}, c ? load_c(name) : load_rofs(name)).first;
        return it->second;
    }
};

// A deterministic generator (mt19937_64 is specified bit for bit; no distributions).
struct Rng {
    std::mt19937_64 g;
    explicit Rng(uint64_t seed) : g(seed) {}
    uint64_t operator()() { return g(); }
    uint64_t below(uint64_t n) { return g() % n; }
    bool one_in(uint64_t n) { return below(n) == 0; }
};

void put64(Bytes& b, size_t off, uint64_t v) {
    std::memcpy(b.data() + off, &v, 8);
}
void put32(Bytes& b, size_t off, uint32_t v) {
    std::memcpy(b.data() + off, &v, 4);
}
Bytes words(std::initializer_list<uint64_t> w) {
    Bytes b(w.size() * 8);
    size_t i = 0;
    for (uint64_t x : w)
        put64(b, 8 * i++, x);
    return b;
}

// Arguments of a wrong length for a program of [lo, hi] bytes.
std::vector<Bytes> bad_lengths(size_t lo, size_t hi) {
    std::vector<Bytes> out;
    if (lo > 0)
        out.emplace_back(lo - 1, 0x5a);
    out.emplace_back(hi + 1, 0x5a);
    out.emplace_back(0);
    return out;
}

TEST(CDiff, CrcRead) {
    Progs p("crc-read");
    Twin t;
    t.add_region("records", 65536);
    Pair s(p.a, p.c, t);
    Rng rng(1);
    // Records whole, torn (a payload byte changed after its CRC), zero, or CRC-only.
    for (uint64_t i = 0; i < 1024; i++) {
        const uint64_t kind = rng.below(4);
        if (kind == 2)
            continue;
        uint8_t rec[64];
        for (auto& b : rec)
            b = static_cast<uint8_t>(rng());
        const uint64_t crc = rof_exec_crc64(0, rec, 56);
        std::memcpy(rec + 56, &crc, 8);
        if (kind == 1)
            rec[rng.below(56)] ^= static_cast<uint8_t>(1 + rng.below(255));
        if (kind == 3)
            std::memset(rec, 0, 56);
        t.write("records", i * 64, rec, 64);
    }
    for (int n = 0; n < 400; n++) {
        uint64_t idx = rng.below(1024);
        if (n % 50 == 0)
            idx = (n / 50) % 2 ? 1023 : 0;
        if (rng.one_in(10))
            idx = 1024 + rng.below(3) + (rng.one_in(2) ? rng() : 0);
        ASSERT_TRUE(s.run(t, words({idx}), "crc-read #" + std::to_string(n)));
    }
    for (const auto& b : bad_lengths(8, 8))
        ASSERT_TRUE(s.run(t, b, "crc-read bad length"));
}

TEST(CDiff, ListFind) {
    Progs p("list-find");
    Rng rng(2);
    // Node i (1..900) at 72 * i plus 0..7: unaligned, never overlapping.
    constexpr uint64_t kNodes = 900;
    auto node_at = [](uint64_t i, uint64_t jitter) { return 72 * i + jitter; };
    for (int state = 0; state < 4; state++) {
        Twin t;
        t.add_region("list", 65536);
        Pair s(p.a, p.c, t);
        std::vector<uint64_t> at(kNodes + 1);
        for (uint64_t i = 1; i <= kNodes; i++)
            at[i] = node_at(i, rng.below(8));
        for (uint64_t i = 1; i <= kNodes; i++) {
            uint8_t node[64];
            for (auto& b : node)
                b = static_cast<uint8_t>(rng());
            uint64_t key = (rng.below(16)) | (rng.one_in(2) ? rng() << 8 : 0);
            uint64_t next;
            switch (state) {
                case 0:  // a random graph: cycles (TOO_LONG), ends, wild pointers
                    next = rng.one_in(20) ? 0 : at[1 + rng.below(kNodes)];
                    if (rng.one_in(100))
                        next = 65536 - rng.below(64);  // a node running off the region
                    break;
                case 1:  // one chain of 900 nodes, 1 -> 2 -> ... -> 900
                    next = i < kNodes ? at[i + 1] : 0;
                    break;
                case 2:  // a cycle through every node
                    next = at[i % kNodes + 1];
                    break;
                default:  // short chains
                    next = i % 5 ? at[i + 1] : 0;
                    break;
            }
            std::memcpy(node, &key, 8);
            std::memcpy(node + 8, &next, 8);
            t.write("list", at[i], node, 64);
        }
        for (int n = 0; n < 150; n++) {
            uint64_t head = at[1 + rng.below(kNodes)];
            if (rng.one_in(10))
                head = 0;
            if (n == 0)
                head = at[1];
            static const uint64_t masks[] = {~0ull, 0xff, 0xf, 0, 0xffffff00ull};
            const uint64_t mask = n == 0 ? ~0ull : masks[rng.below(5)];
            uint64_t key = rng.below(16) | (rng.one_in(3) ? rng() << 8 : 0);
            if (n == 0)
                key = ~0ull;  // nothing matches: the whole list, or TOO_LONG
            uint64_t cmp = rng.below(4);
            if (rng.one_in(12))
                cmp = 4 + rng.below(3);
            ASSERT_TRUE(
                s.run(t, words({head, key, mask, n == 0 ? 0 : cmp}),
                      "list-find state " + std::to_string(state) + " #" + std::to_string(n)));
        }
        for (const auto& b : bad_lengths(32, 32))
            ASSERT_TRUE(s.run(t, b, "list-find bad length"));
    }
}

// The walk's limit exactly: chains of 1023 to 1025 nodes that overlap (16 bytes apart, each
// node's value the next ones' key and next), the last one matching, or ending the list.
TEST(CDiff, ListFindAtItsLimit) {
    Progs p("list-find");
    for (uint64_t len = 1022; len <= 1025; len++) {
        Twin t;
        t.add_region("list", 65536);
        Pair s(p.a, p.c, t);
        for (uint64_t i = 1; i <= len; i++) {
            t.set_u64("list", 16 * i, i == len ? 7 : 1);
            t.set_u64("list", 16 * i + 8, i == len ? 0 : 16 * (i + 1));
        }
        for (uint64_t key : {7ull, 9ull})
            for (uint64_t cmp : {0ull, 3ull})
                ASSERT_TRUE(s.run(t, words({16, key, ~0ull, cmp}),
                                  "list-find chain of " + std::to_string(len)));
    }
}

TEST(CDiff, RsWriteAndRead) {
    Progs w("rs-write"), r("rs-read");
    constexpr uint64_t kRegs = 61440, kBufs = 239;
    Twin t;
    t.add_region("rs", 65536);
    t.add_freelist("rs", 0, 256, kBufs);
    Pair sw(w.a, w.c, t), sr(r.a, r.c, t);
    Rng rng(3);
    auto write_args = [&](uint64_t idx, uint64_t tag, size_t len) {
        Bytes b(16 + len);
        put64(b, 0, idx);
        put64(b, 8, tag);
        for (size_t i = 16; i < b.size(); i++)
            b[i] = static_cast<uint8_t>(rng());
        return b;
    };
    for (int n = 0; n < 1500; n++) {
        const std::string what = "rs #" + std::to_string(n);
        // Mostly a few contended registers; a phase of all 256 to run out of buffers.
        uint64_t idx = n >= 600 && n < 900 ? (n - 600) % 256 : rng.below(6);
        if (rng.one_in(25))
            idx = 256 + rng.below(2) + (rng.one_in(2) ? rng() : 0);
        const uint64_t op = rng.below(10);
        if (op < 5) {
            uint64_t tag = (static_cast<uint64_t>(n / 3) << 8) | rng.below(4);
            if (rng.one_in(5))
                tag = rng.below(8) << 8;  // old, or 0
            size_t len = rng.below(233);
            if (rng.one_in(8))
                len = rng.one_in(2) ? 0 : 232;
            ASSERT_TRUE(sw.run(t, write_args(idx, tag, len), what));
        } else if (op < 9) {
            ASSERT_TRUE(sr.run(t, words({idx}), what));
        } else {
            // A state no writer makes: a register pointing at another buffer, a buffer with
            // another tag or an impossible length (rs-read retries to BUSY), or a pointer out.
            const uint64_t reg = kRegs + rng.below(6) * 16;
            const uint64_t buf = 64 + rng.below(kBufs) * 256;
            switch (rng.below(4)) {
                case 0:
                    t.set_u64("rs", reg + 8, buf);
                    break;
                case 1:
                    t.set_u64("rs", buf + 8, rng.below(1000));
                    break;
                case 2:
                    t.set_u64("rs", buf + 16, 233 + rng.below(100));
                    break;
                default:
                    if (rng.one_in(4))
                        t.set_u64("rs", reg + 8, 65536 - rng.below(300));
                    break;
            }
            ASSERT_TRUE(sr.run(t, words({(reg - kRegs) / 16}), what + " (state changed)"));
            // Back to a state rs-write can run on: registers at tag 0 with no buffer.
            if (rng.one_in(2)) {
                t.set_u64("rs", reg, 0);
                t.set_u64("rs", reg + 8, 0);
            }
        }
    }
    for (const auto& b : bad_lengths(16, 248))
        ASSERT_TRUE(sw.run(t, b, "rs-write bad length"));
    for (const auto& b : bad_lengths(8, 8))
        ASSERT_TRUE(sr.run(t, b, "rs-read bad length"));
}

TEST(CDiff, TxPrepare) {
    Progs p("tx-prepare");
    Twin t;
    t.add_region("tx", 32768);
    Pair s(p.a, p.c, t);
    Rng rng(4);
    // Small timestamps so that every comparison goes both ways.
    for (uint64_t i = 0; i < 16; i++)
        for (uint64_t f = 0; f < 4; f++)
            t.set_u64("tx", i * 32 + f * 8, rng.below(12));
    for (int n = 0; n < 2000; n++) {
        uint64_t idx = rng.below(16);
        if (rng.one_in(20))
            idx = rng.one_in(2) ? 1023 : 1024 + rng.below(4) + (rng.one_in(2) ? rng() : 0);
        uint64_t op = rng.below(3);
        if (rng.one_in(15))
            op = 3 + (rng.one_in(2) ? rng() : rng.below(3));
        uint64_t ts = rng.below(14), rc = rng.below(14);
        if (rng.one_in(30))
            ts = ~0ull - rng.below(2);
        ASSERT_TRUE(s.run(t, words({idx, op, ts, rc}), "tx-prepare #" + std::to_string(n)));
    }
    for (const auto& b : bad_lengths(32, 32))
        ASSERT_TRUE(s.run(t, b, "tx-prepare bad length"));
}

// kv-get, kv-put and kv-del over one table of the default geometry, two sessions each, with
// small free lists so that they run out.
TEST(CDiff, Kv) {
    Progs get("kv-get"), put("kv-put"), del("kv-del");
    const auto c = consts_of("kv-get");
    const uint64_t mask = c.at("MASK"), locks = c.at("LOCKS"), large_at = c.at("LARGE_AT");
    Twin t;
    t.add_region("kv_index", c.at("INDEX_LEN"));
    t.add_region("kv_heap", c.at("HEAP_LEN"));
    t.add_freelist("kv_heap", 0, 256, 40);
    t.add_freelist("kv_heap", large_at, 4368, 6);
    t.every = 16;
    const std::vector<Invoker::Bind> lists = {{"", 0}, {"", 0}, {"kv_heap", 1}};
    struct Session {
        Pair get, put, del;
    };
    std::vector<Session> ss;
    for (int i = 0; i < 2; i++)
        ss.push_back(
            {Pair(get.a, get.c, t), Pair(put.a, put.c, t, lists), Pair(del.a, del.c, t, lists)});
    Rng rng(5);

    std::vector<std::string> keys;
    for (int i = 0; i < 48; i++) {
        size_t len = 1 + rng.below(40);
        if (i < 4)
            len = std::vector<size_t>{1, 8, 249, 250}[i];
        std::string k(len, 'x');
        for (auto& ch : k)
            ch = static_cast<char>('a' + rng.below(26));
        keys.push_back(k);
    }
    auto hash = [](const std::string& k) { return rof_exec_hash64(0, k.data(), k.size()); };
    auto key_args = [](size_t head, const std::string& k, size_t extra) {
        const size_t padded = (k.size() + 7) & ~size_t{7};
        Bytes a(head + padded + extra);
        const uint32_t klen = static_cast<uint32_t>(k.size());
        std::memcpy(a.data(), &klen, 4);
        std::memcpy(a.data() + head, k.data(), k.size());
        return a;
    };
    // A bucket's 8 ways taken by entries of another tag (a block that is never read): a key
    // whose two buckets are full is refused with "full"; its own tag on another key's block
    // takes the compare-and-differ path.
    auto fill_buckets = [&](const std::string& k, bool same_tag_elsewhere) {
        const uint64_t h = hash(k);
        const uint64_t tag = (h >> 24) & 0xffff;
        for (uint64_t b : {h & mask, (h >> 40) & mask})
            for (uint64_t way = 0; way < 8; way++) {
                const uint64_t other = same_tag_elsewhere && way == 3 ? tag : (tag + 1) & 0xffff;
                t.set_u64("kv_index", 64 + b * 64 + way * 8,
                          (uint64_t{7} << 48) | (other << 32) | (64 + 256 * 39));
            }
    };
    for (int n = 0; n < 900; n++) {
        const std::string what = "kv #" + std::to_string(n);
        Session& s = ss[rng.below(2)];
        const std::string& k = keys[rng.below(keys.size())];
        const uint64_t op = rng.below(12);
        if (op < 4) {  // a PUT, in chunks as a client sends it, sometimes abandoned
            uint32_t vlen = static_cast<uint32_t>(rng.below(300));
            if (rng.one_in(4))
                vlen = static_cast<uint32_t>(rng.below(4097));
            if (rng.one_in(20))
                vlen = rng.one_in(2) ? 4096 : 4097;
            const uint32_t flags = static_cast<uint32_t>(rng());
            const size_t padded = (k.size() + 7) & ~size_t{7};
            const size_t room = 1000 - 16 - padded;
            uint32_t voff = 0;
            if (rng.one_in(15))
                voff = static_cast<uint32_t>(1 + rng.below(vlen + 2));  // no first chunk
            bool abandon = rng.one_in(10);
            do {
                size_t chunk = std::min<size_t>(room, vlen > voff ? vlen - voff : 0);
                if (rng.one_in(30))
                    chunk += 1 + rng.below(8);  // past vlen (or past 1000 bytes: EARGS)
                Bytes a = key_args(16, k, chunk);
                put32(a, 4, flags);
                put32(a, 8, vlen);
                put32(a, 12, voff);
                for (size_t i = 16 + padded; i < a.size(); i++)
                    a[i] = static_cast<uint8_t>(rng());
                ASSERT_TRUE(s.put.run(t, a, what + " put"));
                voff += static_cast<uint32_t>(chunk);
                if (abandon && voff < vlen)
                    break;
            } while (voff < vlen);
        } else if (op < 8) {  // a GET, from the start or from an offset
            Bytes a = key_args(8, k, 0);
            uint32_t voff = rng.one_in(3) ? static_cast<uint32_t>(rng.below(5000)) : 0;
            put32(a, 4, voff);
            ASSERT_TRUE(s.get.run(t, a, what + " get"));
        } else if (op < 10) {
            ASSERT_TRUE(s.del.run(t, key_args(8, k, 0), what + " del"));
        } else if (op == 10) {  // bad arguments: key length 0, 251, args shorter than the key
            Bytes a = key_args(8, k, 0);
            const uint32_t klen = std::vector<uint32_t>{0, 251, 300, 249}[rng.below(4)];
            put32(a, 0, klen);
            if (klen == 249 && k.size() < 200)
                a.resize(16);
            ASSERT_TRUE(s.get.run(t, a, what + " get bad"));
            ASSERT_TRUE(s.del.run(t, a, what + " del bad"));
            Bytes pa = key_args(16, k, 0);
            put32(pa, 0, klen);
            ASSERT_TRUE(s.put.run(t, pa, what + " put bad"));
        } else {  // states: full buckets, a held insert lock, a torn block
            switch (rng.below(4)) {
                case 0:
                    fill_buckets(k, rng.one_in(2));
                    break;
                case 1: {
                    const uint64_t lock = locks + (hash(k) & mask) * 8;
                    t.set_u64("kv_index", lock, rng.one_in(2));
                    break;
                }
                default: {  // the value length of a live block beyond 4096
                    const uint64_t h = hash(k);
                    const uint64_t way = 64 + (h & mask) * 64 + rng.below(8) * 8;
                    const uint64_t e = t.a.u64("kv_index", way);
                    const uint64_t blk = e & 0xffffffff;
                    if (blk != 0 && ((e >> 32) & 0xffff) == ((h >> 24) & 0xffff) &&
                        blk + 8 <= c.at("HEAP_LEN")) {
                        uint32_t v = 4097 + static_cast<uint32_t>(rng.below(9000));
                        t.write("kv_heap", blk + 4, &v, 4);
                    }
                    break;
                }
            }
        }
    }
    EXPECT_TRUE(t.regions_same("kv at the end", true));
}

// The sizes of both forms: instruction slots and the verifier's worst case, the table of
// docs/programs.md (`rof_programs_test --gtest_filter=CDiff.Sizes` prints it).  The C build's
// worst case, the budget rof.ko runs it with, stays within 3x the assembly's (1.2x to 2.4x
// with clang 14): more is a regression of the translator, or of the C.
TEST(CDiff, Sizes) {
    std::printf("| program | .rofs insns | .c insns | .rofs worst case | .c worst case |\n");
    std::printf("|---|---:|---:|---:|---:|\n");
    for (const char* name : {"kv-get", "kv-put", "kv-del", "list-find", "crc-read", "rs-read",
                             "rs-write", "tx-prepare"}) {
        const Loaded &a = Progs::cached(name, false), &c = Progs::cached(name, true);
        EXPECT_GT(c.budget, 0u);
        EXPECT_LE(c.budget, 3 * a.budget) << name;
        std::printf("| %s | %zu | %zu | %" PRIu64 " | %" PRIu64 " |\n", name, a.prog.insns.size(),
                    c.prog.insns.size(), a.budget, c.budget);
    }
}

}  // namespace
}  // namespace c_diff_test
