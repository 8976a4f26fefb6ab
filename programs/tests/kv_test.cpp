// The kvstore's programs (programs/kv-get.rofs, kv-put.rofs, kv-del.rofs) on the userspace
// executor: the layout their headers state, the statuses, and races of sessions over one table.
#include <atomic>
#include <cstring>
#include <set>
#include <thread>

#include "runner.h"

namespace rof::programs::test {
namespace {

constexpr unsigned kSmallBlock = 256;

// args of kv-get/kv-del: u32 klen, u32 voff, the padded key.
std::vector<uint8_t> args(const std::string& key, uint32_t voff = 0) {
    const size_t padded = (key.size() + 7) & ~size_t{7};
    std::vector<uint8_t> a(8 + padded);
    const uint32_t klen = static_cast<uint32_t>(key.size());
    std::memcpy(a.data(), &klen, 4);
    std::memcpy(a.data() + 4, &voff, 4);
    std::memcpy(a.data() + 8, key.data(), key.size());
    return a;
}

// args of kv-put: u32 klen, u32 flags, u32 vlen, u32 voff, the padded key, a chunk.
std::vector<uint8_t> put_args(const std::string& key, uint32_t flags, uint32_t vlen, uint32_t voff,
                              const std::string& chunk) {
    const size_t padded = (key.size() + 7) & ~size_t{7};
    std::vector<uint8_t> a(16 + padded + chunk.size());
    const uint32_t klen = static_cast<uint32_t>(key.size());
    std::memcpy(a.data(), &klen, 4);
    std::memcpy(a.data() + 4, &flags, 4);
    std::memcpy(a.data() + 8, &vlen, 4);
    std::memcpy(a.data() + 12, &voff, 4);
    std::memcpy(a.data() + 16, key.data(), key.size());
    std::memcpy(a.data() + 16 + padded, chunk.data(), chunk.size());
    return a;
}

struct Got {
    int status;
    uint32_t prog_status;
    uint32_t flags = 0;
    std::string value;
};

// The table of the programs' default geometry, with @small and @large blocks in its lists.
class Kv {
  public:
    Kv(uint64_t small = 1024, uint64_t large = 64)
        : c(consts_of("kv-get")),
          get_(load("kv-get")),
          put_(load("kv-put")),
          del_(load("kv-del")),
          small_(small),
          large_(large) {
        // kv-get names every size; kv-put and kv-del the ones they use, the same.
        EXPECT_EQ(consts_disagree(c, "kv-put"), "");
        EXPECT_EQ(consts_disagree(c, "kv-del"), "");
        EXPECT_EQ(c.at("RESP"), 16 + c.at("CHUNK"));
        const uint64_t large_block = 16 + 256 + c.at("MAXVAL");
        EXPECT_EQ(large_block, 4368u);
        mem.add_region("kv_index", c.at("INDEX_LEN"));
        mem.add_region("kv_heap", c.at("HEAP_LEN"));
        EXPECT_EQ(mem.add_freelist("kv_heap", 0, kSmallBlock, small), 0u);
        EXPECT_EQ(mem.add_freelist("kv_heap", c.at("LARGE_AT"), large_block, large), 1u);
    }

    // One session: its own invokers over the shared memory.
    struct Session {
        Invoker get, put, del;
        explicit Session(Kv& kv)
            : get(kv.get_, kv.mem),
              put(kv.put_, kv.mem, {{"", 0}, {"", 0}, {"kv_heap", 1}}),
              del(kv.del_, kv.mem, {{"", 0}, {"", 0}, {"kv_heap", 1}}) {}
        // The whole value, chunk by chunk, as KvClient does: again if the entry changed.
        Got g(const std::string& key) {
            for (int attempt = 0; attempt < 8; attempt++) {
                Got out{ROF_ISA_OK, 0, 0, {}};
                uint64_t entry = 0;
                uint32_t vlen = 0;
                bool changed = false;
                do {
                    Result r = get.run(args(key, static_cast<uint32_t>(out.value.size())));
                    out.status = r.status;
                    out.prog_status = r.prog_status;
                    if (r.status != ROF_ISA_OK || r.prog_status != 0) {
                        changed = r.prog_status == 1 && !out.value.empty();
                        if (!changed)
                            return out;
                        break;
                    }
                    EXPECT_GE(r.resp.size(), 16u);
                    uint64_t e;
                    std::memcpy(&e, r.resp.data() + 8, 8);
                    if (!out.value.empty() && e != entry) {
                        changed = true;
                        break;
                    }
                    entry = e;
                    std::memcpy(&out.flags, r.resp.data(), 4);
                    std::memcpy(&vlen, r.resp.data() + 4, 4);
                    EXPECT_EQ(r.resp.size(), 16u + std::min<size_t>(vlen - out.value.size(), 4096));
                    out.value.append(r.resp.begin() + 16, r.resp.end());
                } while (out.value.size() < vlen);
                if (!changed)
                    return out;
            }
            return {ROF_ISA_OK, 3, 0, {}};
        }
        // In chunks of what 1000 bytes of args hold, as KvClient does.
        uint32_t p(const std::string& key, const std::string& v, uint32_t flags = 0) {
            const size_t room = 1000 - 16 - ((key.size() + 7) & ~size_t{7});
            size_t off = 0;
            do {
                const std::string chunk = v.substr(off, room);
                Result r = put.run(put_args(key, flags, static_cast<uint32_t>(v.size()),
                                            static_cast<uint32_t>(off), chunk));
                EXPECT_EQ(r.status, ROF_ISA_OK) << "fault at " << r.fault_pc;
                if (r.prog_status != 0)
                    return r.prog_status;
                off += chunk.size();
            } while (off < v.size());
            return 0;
        }
        uint32_t d(const std::string& key) {
            Result r = del.run(args(key));
            EXPECT_EQ(r.status, ROF_ISA_OK) << "fault at " << r.fault_pc;
            return r.prog_status;
        }
    };

    size_t free_small() { return mem.free_blocks("kv_heap", 0).size(); }
    size_t free_large() { return mem.free_blocks("kv_heap", 1).size(); }
    // Live entries of the index (ways with a block).
    std::vector<uint64_t> entries() {
        std::vector<uint64_t> out;
        const uint64_t n = c.at("MASK") + 1;
        for (uint64_t w = 0; w < n * 8; w++) {
            const uint64_t e = mem.u64("kv_index", 64 + 8 * w);
            if (e & 0xffffffff)
                out.push_back(e);
        }
        return out;
    }
    // Every block is either free or live, once.
    void check_blocks() {
        std::set<uint64_t> seen;
        for (uint64_t b : mem.free_blocks("kv_heap", 0))
            EXPECT_TRUE(seen.insert(b).second);
        for (uint64_t b : mem.free_blocks("kv_heap", 1))
            EXPECT_TRUE(seen.insert(b).second);
        for (uint64_t e : entries())
            EXPECT_TRUE(seen.insert(e & 0xffffffff).second) << "block of a live entry is free";
        EXPECT_EQ(seen.size(), small_ + large_);
    }

    std::map<std::string, uint64_t> c;
    Memory mem;

  private:
    Loaded get_, put_, del_;
    uint64_t small_, large_;
};

TEST(Kv, PutGetDel) {
    Kv kv;
    Kv::Session s(kv);
    EXPECT_EQ(s.g("hello").prog_status, 1u);
    EXPECT_EQ(s.p("hello", "world", 7), 0u);
    Got g = s.g("hello");
    EXPECT_EQ(g.status, ROF_ISA_OK);
    EXPECT_EQ(g.prog_status, 0u);
    EXPECT_EQ(g.flags, 7u);
    EXPECT_EQ(g.value, "world");
    EXPECT_EQ(s.g("hellp").prog_status, 1u);
    EXPECT_EQ(s.g("hell").prog_status, 1u);
    EXPECT_EQ(s.d("hello"), 0u);
    EXPECT_EQ(s.g("hello").prog_status, 1u);
    EXPECT_EQ(s.d("hello"), 1u);
    EXPECT_EQ(kv.free_small(), 1024u);
    kv.check_blocks();
}

TEST(Kv, EntryInTheBucketOfTheHash) {
    Kv kv;
    Kv::Session s(kv);
    const std::string key = "bucket-check";
    ASSERT_EQ(s.p(key, "v"), 0u);
    const uint64_t h = rof_exec_hash64(0, key.data(), key.size());
    const uint64_t b1 = 64 + (h & kv.c.at("MASK")) * 64;
    const uint64_t e = kv.mem.u64("kv_index", b1);  // way 0 of bucket 1: the first empty one
    EXPECT_NE(e & 0xffffffff, 0u);
    EXPECT_EQ((e >> 32) & 0xffff, (h >> 24) & 0xffff);  // the tag
    EXPECT_EQ(e >> 48, 1u);                             // version 1: one CAS
    EXPECT_EQ(kv.mem.u64("kv_index", kv.c.at("LOCKS") + (h & kv.c.at("MASK")) * 8), 0u);
    ASSERT_EQ(s.p(key, "w"), 0u);
    EXPECT_EQ(kv.mem.u64("kv_index", b1) >> 48, 2u);
    ASSERT_EQ(s.d(key), 0u);
    EXPECT_EQ(kv.mem.u64("kv_index", b1), uint64_t{3} << 48);  // empty, the version kept
}

TEST(Kv, UpdateInPlace) {
    Kv kv;
    Kv::Session s(kv);
    ASSERT_EQ(s.p("k", "one"), 0u);
    ASSERT_EQ(s.p("k", "two", 2), 0u);
    Got g = s.g("k");
    EXPECT_EQ(g.value, "two");
    EXPECT_EQ(g.flags, 2u);
    EXPECT_EQ(kv.entries().size(), 1u);
    EXPECT_EQ(kv.free_small(), 1023u);                // the old block went back
    ASSERT_EQ(s.p("k", std::string(4096, 'x')), 0u);  // moves to a large block
    EXPECT_EQ(kv.free_small(), 1024u);
    EXPECT_EQ(kv.free_large(), 63u);
    EXPECT_EQ(s.g("k").value, std::string(4096, 'x'));
    kv.check_blocks();
}

TEST(Kv, KeyAndValueSizes) {
    Kv kv;
    Kv::Session s(kv);
    std::string bin;
    for (int i = 0; i < 4096; i++)
        bin += static_cast<char>(i * 7 + 3);
    for (const std::string& key : {std::string("a"), std::string(250, 'K'), std::string(9, 'k')}) {
        for (size_t len : {0u, 32u, 4096u}) {
            const std::string v = bin.substr(0, len);
            ASSERT_EQ(s.p(key, v, static_cast<uint32_t>(len)), 0u) << key.size() << " " << len;
            Got g = s.g(key);
            ASSERT_EQ(g.prog_status, 0u);
            EXPECT_EQ(g.value, v);
            EXPECT_EQ(g.flags, len);
        }
    }
    EXPECT_EQ(kv.entries().size(), 3u);
    kv.check_blocks();
}

TEST(Kv, BadArguments) {
    Kv kv;
    Kv::Session s(kv);
    std::vector<uint8_t> a = args("key");
    const uint32_t zero = 0, big = 251, long_key = 16;
    std::memcpy(a.data(), &zero, 4);
    EXPECT_EQ(s.get.run(a).prog_status, 4u);
    std::memcpy(a.data(), &big, 4);
    EXPECT_EQ(s.get.run(a).prog_status, 4u);
    EXPECT_EQ(s.del.run(a).prog_status, 4u);
    std::memcpy(a.data(), &long_key, 4);  // the key runs past the args
    EXPECT_EQ(s.get.run(a).prog_status, 4u);
    EXPECT_EQ(s.get.run(std::vector<uint8_t>(8)).status, ROF_ISA_EARGS);
    EXPECT_EQ(s.put.run(put_args("key", 0, 4097, 0, "")).prog_status, 4u);   // vlen > 4096
    EXPECT_EQ(s.put.run(put_args("key", 0, 3, 0, "four")).prog_status, 4u);  // past vlen
    EXPECT_EQ(s.put.run(put_args("key", 0, 8, 4, "more")).prog_status, 4u);  // no first chunk
    EXPECT_EQ(s.put.run(std::vector<uint8_t>(1001)).status, ROF_ISA_EARGS);
    ASSERT_EQ(s.p("key", "value"), 0u);
    EXPECT_EQ(s.get.run(args("key", 6)).prog_status, 4u);  // voff past the value
    EXPECT_EQ(s.get.run(args("key", 5)).prog_status, 0u);  // at its end: no bytes
    EXPECT_EQ(kv.free_small(), 1023u);
    EXPECT_EQ(kv.free_large(), 64u);
}

TEST(Kv, AnUnfinishedPutGivesItsBlockBack) {
    Kv kv;
    Kv::Session s(kv);
    ASSERT_EQ(s.put.run(put_args("k", 0, 2000, 0, std::string(900, 'a'))).prog_status, 0u);
    EXPECT_EQ(kv.free_large(), 63u);  // taken, not published
    EXPECT_EQ(s.g("k").prog_status, 1u);
    ASSERT_EQ(s.p("k", "small"), 0u);  // a new first chunk frees the pending block
    EXPECT_EQ(kv.free_large(), 64u);
    EXPECT_EQ(s.g("k").value, "small");
    kv.check_blocks();
}

TEST(Kv, FullHeap) {
    Kv kv(4, 16);
    Kv::Session s(kv);
    for (int i = 0; i < 4; i++)
        ASSERT_EQ(s.p("k" + std::to_string(i), "v"), 0u);
    EXPECT_EQ(s.p("k4", "v"), 2u);
    EXPECT_EQ(s.p("k0", "w"), 2u);  // an update needs a block too
    EXPECT_EQ(s.g("k0").value, "v");
    EXPECT_EQ(s.d("k1"), 0u);
    EXPECT_EQ(s.p("k4", "v"), 0u);
    kv.check_blocks();
}

TEST(Kv, AllWaysTaken) {
    Kv kv;
    Kv::Session s(kv);
    ASSERT_EQ(s.p("other", "x"), 0u);
    const uint64_t other = kv.entries().at(0);
    const std::string key = "no-room";
    const uint64_t h = rof_exec_hash64(0, key.data(), key.size());
    const uint64_t mask = kv.c.at("MASK");
    for (uint64_t b : {h & mask, (h >> 40) & mask})
        for (uint64_t w = 0; w < 8; w++)
            if (kv.mem.u64("kv_index", 64 + b * 64 + w * 8) == 0)
                kv.mem.set_u64("kv_index", 64 + b * 64 + w * 8, (other & 0xffffffff));
    EXPECT_EQ(s.p(key, "v"), 2u);
    EXPECT_EQ(s.g(key).prog_status, 1u);
    EXPECT_EQ(kv.free_small(), 1023u);  // its block went back
    EXPECT_EQ(kv.mem.u64("kv_index", kv.c.at("LOCKS") + (h & mask) * 8), 0u);  // unlocked
}

// A value that says which write it is: "t<thread>r<round>:" then bytes derived from both.
std::string value_of(unsigned t, unsigned r) {
    std::string v = "t" + std::to_string(t) + "r" + std::to_string(r) + ":";
    const size_t len = v.size() + (t * 977 + r * 131) % 700;  // both classes
    while (v.size() < len)
        v += static_cast<char>('a' + (t * 31 + r * 7 + v.size()) % 26);
    return v;
}

bool is_a_write(const std::string& v, unsigned threads, unsigned rounds) {
    unsigned t, r;
    if (std::sscanf(v.c_str(), "t%ur%u:", &t, &r) != 2 || t >= threads || r >= rounds)
        return false;
    return v == value_of(t, r);
}

TEST(KvRace, ConcurrentPutsOfOneKey) {
    constexpr unsigned kThreads = 4, kRounds = 300;
    Kv kv;
    std::atomic<unsigned> busy{0};
    std::vector<std::thread> ts;
    for (unsigned t = 0; t < kThreads; t++)
        ts.emplace_back([&, t] {
            Kv::Session s(kv);
            for (unsigned r = 0; r < kRounds; r++) {
                uint32_t st;
                while ((st = s.p("hot", value_of(t, r))) == 3)
                    busy++;
                EXPECT_EQ(st, 0u);
            }
        });
    for (auto& t : ts)
        t.join();
    Kv::Session s(kv);
    const Got g = s.g("hot");
    ASSERT_EQ(g.prog_status, 0u);
    EXPECT_TRUE(is_a_write(g.value, kThreads, kRounds)) << g.value;
    EXPECT_EQ(kv.entries().size(), 1u);
    EXPECT_EQ(kv.free_small() + kv.free_large(), 1024u + 64u - 1u);
    kv.check_blocks();
}

TEST(KvRace, GetsSeeOnlyCompleteValues) {
    constexpr unsigned kWriters = 2, kRounds = 400;
    Kv kv;
    std::atomic<bool> done{false}, reading{false};
    std::atomic<unsigned> reads{0};
    const std::vector<std::string> keys = {"a", "b", "c"};
    std::vector<std::thread> ts;
    for (unsigned t = 0; t < kWriters; t++)
        ts.emplace_back([&, t] {
            Kv::Session s(kv);
            while (!reading) {  // start with the reader, for the race to happen
            }
            for (unsigned r = 0; r < kRounds; r++)
                while (s.p(keys[r % keys.size()], value_of(t, r)) == 3) {
                }
        });
    std::thread reader([&] {
        Kv::Session s(kv);
        reading = true;
        while (!done || reads == 0) {
            for (const auto& k : keys) {
                const Got g = s.g(k);
                ASSERT_EQ(g.status, ROF_ISA_OK);
                if (g.prog_status == 0) {
                    EXPECT_TRUE(is_a_write(g.value, kWriters, kRounds)) << g.value;
                    reads++;
                } else {
                    EXPECT_TRUE(g.prog_status == 1 || g.prog_status == 3) << g.prog_status;
                }
            }
        }
    });
    for (auto& t : ts)
        t.join();
    done = true;
    reader.join();
    EXPECT_GT(reads.load(), 0u);
    EXPECT_EQ(kv.entries().size(), keys.size());
    kv.check_blocks();
}

TEST(KvRace, PutsAndDeletes) {
    constexpr unsigned kThreads = 4, kRounds = 300;
    Kv kv;
    std::vector<std::thread> ts;
    for (unsigned t = 0; t < kThreads; t++)
        ts.emplace_back([&, t] {
            Kv::Session s(kv);
            for (unsigned r = 0; r < kRounds; r++) {
                const std::string key = "k" + std::to_string(r % 3);
                if ((r + t) % 2) {
                    const uint32_t st = s.d(key);
                    EXPECT_TRUE(st == 0 || st == 1 || st == 3) << st;
                } else {
                    const uint32_t st = s.p(key, value_of(t, r));
                    EXPECT_TRUE(st == 0 || st == 3) << st;
                }
            }
        });
    for (auto& t : ts)
        t.join();
    // Each key at most once, every block free or live once.
    Kv::Session s(kv);
    size_t live = 0;
    for (int k = 0; k < 3; k++) {
        const Got g = s.g("k" + std::to_string(k));
        if (g.prog_status == 0) {
            live++;
            EXPECT_TRUE(is_a_write(g.value, kThreads, kRounds));
        }
    }
    EXPECT_EQ(kv.entries().size(), live);
    kv.check_blocks();
}

}  // namespace
}  // namespace rof::programs::test
