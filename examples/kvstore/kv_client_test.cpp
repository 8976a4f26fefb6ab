// SPDX-License-Identifier: MIT
// rofkv::get_chunked, KvClient::get's read, without a device: first against a scripted kv-get
// that answers chunks of 976 bytes, as kv-get did on 1 KiB messages (every way a value can change
// between two chunks, the bound on restarts, the answers that cannot be), then against the real
// kv-get and kv-put on the userspace executor (programs/tests/runner.h): the largest value in
// one INVOKE, an offset past a value set shorter (issue 24: kv-get answers status 4), and
// sessions racing shrinking and growing SETs.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "kv_client.h"
#include "kv_layout.h"
#include "kv_program_c.h"
#include "kvload.h"
#include "rof/error.h"
#include "rof/prog/asm.h"
#include "rof/prog/program.h"
#include "rof/prog/verifier.h"
#include "runner.h"

namespace {

using rofkv::GetReply;
using rofkv::Status;

// ---- a scripted kv-get ----------------------------------------------------------------------

// The scripted kv-get's chunk: what one response of a 1 KiB message held (992 - 16).
constexpr std::size_t kChunk = 976;

// What kv-get answers for one key: the value there now, under its entry word.
struct FakeKey {
    bool present = true;
    std::uint64_t entry = 0x0001000000000100;  // version 1, block 0x100
    std::uint32_t flags = 0;
    std::string value;
    std::vector<std::byte> resp;

    // A SET: a new block, the version bumped.
    void set(std::string v, std::uint32_t fl = 0) {
        value = std::move(v);
        flags = fl;
        entry += (std::uint64_t{1} << 48) + 0x1000;
        present = true;
    }

    GetReply answer(std::uint32_t voff) {
        if (!present) {
            return {Status::not_found, {}};
        }
        if (voff > value.size()) {
            return {Status::too_big, {}};  // kv-get's status 4: voff past the value
        }
        const std::size_t n = std::min<std::size_t>(value.size() - voff, kChunk);
        resp.assign(rofkv::kGetHeader + n, std::byte{0});
        const auto vlen = static_cast<std::uint32_t>(value.size());
        std::memcpy(resp.data(), &flags, 4);
        std::memcpy(resp.data() + 4, &vlen, 4);
        std::memcpy(resp.data() + 8, &entry, 8);
        std::memcpy(resp.data() + rofkv::kGetHeader, value.data() + voff, n);
        return {Status::ok, resp};
    }
};

std::string filled(std::size_t n, char c) {
    std::string s(n, c);
    for (std::size_t i = 0; i < n; i++) {
        s[i] = static_cast<char>(c + i % 7);
    }
    return s;
}

// get_chunked over @k; @between(n) runs after the nth fetch (1-based), before the next.
struct Read {
    Status st;
    std::string value;
    std::uint32_t flags = 0;
    std::uint64_t restarts = 0;
    std::vector<std::uint32_t> offsets;  // every voff asked, in order
};

Read read(FakeKey& k, const std::function<void(unsigned)>& between = nullptr,
          std::size_t chunk = kChunk) {
    Read r;
    unsigned n = 0;
    r.st = rofkv::get_chunked(
        [&](std::uint32_t voff) {
            if (n > 0 && between) {
                between(n);
            }
            n++;
            r.offsets.push_back(voff);
            return k.answer(voff);
        },
        r.value, &r.flags, &r.restarts, chunk);
    return r;
}

TEST(GetChunked, OneChunk) {
    FakeKey k;
    k.set("small", 7);
    const Read r = read(k);
    EXPECT_EQ(r.st, Status::ok);
    EXPECT_EQ(r.value, "small");
    EXPECT_EQ(r.flags, 7u);
    EXPECT_EQ(r.offsets, std::vector<std::uint32_t>{0});
}

TEST(GetChunked, EmptyValue) {
    FakeKey k;
    k.set("");
    const Read r = read(k);
    EXPECT_EQ(r.st, Status::ok);
    EXPECT_EQ(r.value, "");
    EXPECT_EQ(r.offsets.size(), 1u);
}

TEST(GetChunked, ExactlyOneChunkThenTwo) {
    FakeKey k;
    k.set(filled(976, 'a'));
    EXPECT_EQ(read(k).offsets, std::vector<std::uint32_t>{0});
    k.set(filled(977, 'a'));
    const Read r = read(k);
    EXPECT_EQ(r.value, k.value);
    EXPECT_EQ(r.offsets, (std::vector<std::uint32_t>{0, 976}));
}

TEST(GetChunked, FiveChunksOfTheLargestValue) {
    FakeKey k;
    k.set(filled(4096, 'a'), 3);
    const Read r = read(k);
    EXPECT_EQ(r.st, Status::ok);
    EXPECT_EQ(r.value, k.value);
    EXPECT_EQ(r.flags, 3u);
    EXPECT_EQ(r.restarts, 0u);
    EXPECT_EQ(r.offsets, (std::vector<std::uint32_t>{0, 976, 1952, 2928, 3904}));
}

// Chunk 0 (KvClient's): the chunk is what the first answer carried, when not the whole value.
TEST(GetChunked, ChunkLearnedFromTheFirstAnswer) {
    FakeKey k;
    k.set(filled(4096, 'a'));
    Read r = read(k, nullptr, 0);
    EXPECT_EQ(r.st, Status::ok);
    EXPECT_EQ(r.value, k.value);
    EXPECT_EQ(r.offsets, (std::vector<std::uint32_t>{0, 976, 1952, 2928, 3904}));
    k.set(filled(500, 'b'));
    r = read(k, nullptr, 0);
    EXPECT_EQ(r.value, k.value);
    EXPECT_EQ(r.offsets, std::vector<std::uint32_t>{0});
    // A first answer of busy shows no chunk: the next start learns it.
    k.set(filled(3000, 'd'));
    unsigned n = 0;
    std::string v;
    EXPECT_EQ(rofkv::get_chunked(
                  [&](std::uint32_t voff) {
                      return n++ == 0 ? GetReply{Status::busy, {}} : k.answer(voff);
                  },
                  v, nullptr, nullptr, 0),
              Status::ok);
    EXPECT_EQ(v, k.value);
    EXPECT_EQ(n, 5u);  // busy, then 0, 976, 1952, 2928
}

// Issue 24: the value set shorter than the offset of the next chunk.  kv-get answers status 4
// (too_big); the GET starts again and answers the new value, not too_big.
TEST(GetChunked, SetShorterThanTheNextOffsetStartsAgain) {
    FakeKey k;
    k.set(filled(4096, 'a'), 1);
    const std::string shorter = filled(100, 'x');
    const Read r = read(k, [&](unsigned n) {
        if (n == 1) {
            k.set(shorter, 2);
        }
    });
    EXPECT_EQ(r.st, Status::ok);
    EXPECT_EQ(r.value, shorter);
    EXPECT_EQ(r.flags, 2u);
    EXPECT_EQ(r.restarts, 1u);
    EXPECT_EQ(r.offsets, (std::vector<std::uint32_t>{0, 976, 0}));
}

// Shorter, but still past the next offset: the entry word differs.
TEST(GetChunked, SetShorterButPastTheOffsetStartsAgain) {
    FakeKey k;
    k.set(filled(4096, 'a'));
    const std::string shorter = filled(1500, 'x');
    const Read r = read(k, [&](unsigned n) {
        if (n == 2) {
            k.set(shorter);
        }
    });
    EXPECT_EQ(r.st, Status::ok);
    EXPECT_EQ(r.value, shorter);
    EXPECT_EQ(r.restarts, 1u);
}

// Same length, other bytes: only the entry word tells; never the first chunks of one and the
// last of the other.
TEST(GetChunked, SameLengthReplacedStartsAgain) {
    FakeKey k;
    const std::string a = filled(4096, 'a'), b = filled(4096, 'A');
    k.set(a);
    const Read r = read(k, [&](unsigned n) {
        if (n == 3) {
            k.set(b);
        }
    });
    EXPECT_EQ(r.st, Status::ok);
    EXPECT_EQ(r.value, b);
    EXPECT_EQ(r.restarts, 1u);
}

TEST(GetChunked, SetLongerStartsAgain) {
    FakeKey k;
    k.set(filled(2000, 'a'));
    const std::string longer = filled(4000, 'x');
    const Read r = read(k, [&](unsigned n) {
        if (n == 1) {
            k.set(longer);
        }
    });
    EXPECT_EQ(r.value, longer);
    EXPECT_EQ(r.restarts, 1u);
}

TEST(GetChunked, DeletedBetweenChunksIsNotFound) {
    FakeKey k;
    k.set(filled(3000, 'a'));
    const Read r = read(k, [&](unsigned n) {
        if (n == 2) {
            k.present = false;
        }
    });
    EXPECT_EQ(r.st, Status::not_found);
    EXPECT_EQ(r.value, "");
    EXPECT_EQ(r.restarts, 1u);
}

// kv-get's own busy (its 8 copies each saw the entry change), first chunk or later: again.
TEST(GetChunked, ProgramBusyStartsAgain) {
    FakeKey k;
    k.set(filled(2000, 'a'));
    for (unsigned busy_at : {0u, 1u}) {
        unsigned n = 0;
        std::string v;
        std::uint64_t restarts = 0;
        const Status st = rofkv::get_chunked(
            [&](std::uint32_t voff) {
                return n++ == busy_at ? GetReply{Status::busy, {}} : k.answer(voff);
            },
            v, nullptr, &restarts, kChunk);
        EXPECT_EQ(st, Status::ok) << busy_at;
        EXPECT_EQ(v, k.value) << busy_at;
        EXPECT_EQ(restarts, 1u) << busy_at;
    }
}

// A value that changes between every two chunks: busy after kGetAttempts starts, no value.
TEST(GetChunked, KeepsChangingIsBusyAfterTheBound) {
    FakeKey k;
    k.set(filled(4096, 'a'));
    unsigned sets = 0;
    // Never one chunk long (977 bytes at least), so every start reads a second chunk.
    const Read r = read(k, [&](unsigned) { k.set(filled(sets++ % 2 ? 4096 : 977, 'a')); });
    EXPECT_EQ(r.st, Status::busy);
    EXPECT_EQ(r.value, "");
    EXPECT_EQ(r.restarts, rofkv::kGetAttempts - 1);
    EXPECT_EQ(static_cast<unsigned>(std::count(r.offsets.begin(), r.offsets.end(), 0u)),
              rofkv::kGetAttempts);
}

// The first chunk's answers other than ok are the GET's: no restart.
TEST(GetChunked, FirstChunkStatusesAreTheAnswer) {
    FakeKey k;
    k.present = false;
    Read r = read(k);
    EXPECT_EQ(r.st, Status::not_found);
    EXPECT_EQ(r.offsets.size(), 1u);
    std::string v = "stale";
    EXPECT_EQ(rofkv::get_chunked(
                  [](std::uint32_t) {
                      return GetReply{Status::too_big, {}};
                  },
                  v, nullptr, nullptr, kChunk),
              Status::too_big);
    EXPECT_EQ(v, "");
}

TEST(GetChunked, AnswersKvGetCannotGiveThrow) {
    FakeKey k;
    k.set(filled(2000, 'a'));
    std::string v;
    k.answer(0);
    // Short: no header.
    EXPECT_THROW(rofkv::get_chunked(
                     [&](std::uint32_t) {
                         return GetReply{Status::ok, std::span(k.resp.data(), std::size_t{8})};
                     },
                     v, nullptr, nullptr, kChunk),
                 rof::Error);
    // vlen changing under one entry word.
    unsigned n = 0;
    EXPECT_THROW(rofkv::get_chunked(
                     [&](std::uint32_t voff) {
                         if (n++ == 1) {
                             k.value.resize(1500);  // the block written while published
                         }
                         return k.answer(voff);
                     },
                     v, nullptr, nullptr, kChunk),
                 rof::Error);
    // A chunk of another length than min(vlen - voff, 976).
    k.set(filled(2000, 'a'));
    EXPECT_THROW(rofkv::get_chunked(
                     [&](std::uint32_t voff) {
                         GetReply r = k.answer(voff);
                         r.resp = r.resp.first(r.resp.size() - 1);
                         return r;
                     },
                     v, nullptr, nullptr, kChunk),
                 rof::Error);
    // With the chunk learned (0): a first answer of no bytes of a value that has some.
    EXPECT_THROW(rofkv::get_chunked(
                     [&](std::uint32_t voff) {
                         GetReply r = k.answer(voff);
                         r.resp = r.resp.first(rofkv::kGetHeader);
                         return r;
                     },
                     v, nullptr, nullptr, 0),
                 rof::Error);
    // kv-get never answers full.
    n = 0;
    EXPECT_THROW(rofkv::get_chunked(
                     [&](std::uint32_t voff) {
                         return n++ == 1 ? GetReply{Status::full, {}} : k.answer(voff);
                     },
                     v, nullptr, nullptr, kChunk),
                 rof::Error);
}

// Random SETs (of random lengths, sometimes the same), DELs and re-SETs between chunks: every
// GET answers ok with a value that was there whole while every chunk was read, or not_found
// (gone at its last start), or busy; never bytes of two values.
TEST(GetChunked, RandomChangesNeverTear) {
    std::mt19937_64 rng(24);
    FakeKey k;
    unsigned version = 0;
    auto value_of = [](unsigned ver, std::size_t len) {
        std::string s(len, '\0');
        for (std::size_t i = 0; i < len; i++) {
            s[i] = static_cast<char>('a' + (ver * 131 + i) % 26);
        }
        return s;
    };
    std::set<std::string> written;
    auto set_random = [&] {
        const std::size_t len = std::uniform_int_distribution<std::size_t>(0, 4096)(rng);
        std::string v = value_of(++version, len);
        written.insert(v);
        k.set(std::move(v));
    };
    set_random();
    unsigned ok = 0, restarted = 0;
    for (int i = 0; i < 2000; i++) {
        const Read r = read(k, [&](unsigned) {
            const int d = std::uniform_int_distribution<int>(0, 9)(rng);
            if (d < 3) {
                set_random();
            } else if (d == 3) {
                k.present = false;
            } else if (d == 4 && !k.present) {
                set_random();
            }
        });
        if (r.st == Status::ok) {
            ok++;
            EXPECT_TRUE(written.count(r.value)) << "a value never written: " << r.value.size();
        } else {
            EXPECT_TRUE(r.st == Status::not_found || r.st == Status::busy) << int(r.st);
            EXPECT_EQ(r.value, "");
        }
        restarted += r.restarts > 0;
        set_random();  // the next GET starts on a fresh value, of a fresh length
    }
    EXPECT_GT(ok, 1000u);
    EXPECT_GT(restarted, 100u);
}

// ---- the real programs on the userspace executor --------------------------------------------

namespace rt = rof::programs::test;

// kv-get and kv-put as rof-kvstore loads them (program_source for a table of @items, or with
// ROF_PROGRAMS_FORM=c in the environment their C builds for it, as --programs c makes them:
// the CTest entry kv_client_on_c_builds), over one table in userspace memory.
class Table {
  public:
    explicit Table(std::uint64_t items = 1024, std::uint64_t max_value = rofkv::kDefaultMaxValue)
        : g_(rofkv::Geometry::for_items(items, max_value)),
          get_(load("kv-get")),
          put_(load("kv-put")) {
        mem.add_region(rofkv::kIndexRegion, g_.index_len);
        mem.add_region(rofkv::kHeapRegion, g_.heap_len);
        mem.add_freelist(rofkv::kHeapRegion, 0, rofkv::kSmallBlock, g_.small_count);
        mem.add_freelist(rofkv::kHeapRegion, g_.large_at, g_.large_block, g_.large_count);
    }
    const rofkv::Geometry& geometry() const { return g_; }

    // One session's invokers; use one per thread.
    struct Session {
        rt::Invoker get, put;
        explicit Session(Table& t)
            : get(t.get_, t.mem), put(t.put_, t.mem, {{"", 0}, {"", 0}, {"kv_heap", 1}}) {}

        // One kv-get INVOKE, as KvClient::get's fetch does it.
        GetReply fetch(const std::string& key, std::uint32_t voff) {
            const std::size_t padded = (key.size() + 7) & ~std::size_t{7};
            std::vector<std::uint8_t> a(8 + padded);
            const auto klen = static_cast<std::uint32_t>(key.size());
            std::memcpy(a.data(), &klen, 4);
            std::memcpy(a.data() + 4, &voff, 4);
            std::memcpy(a.data() + 8, key.data(), key.size());
            last = get.run(a);
            if (last.status != ROF_ISA_OK) {
                throw std::runtime_error("kv-get faulted at " + std::to_string(last.fault_pc));
            }
            return {static_cast<Status>(last.prog_status),
                    std::as_bytes(std::span(last.resp.data(), last.resp.size()))};
        }
        // A SET in chunks of what 1000 bytes of args hold, as KvClient::set does it.
        Status set(const std::string& key, const std::string& v) {
            const std::size_t padded = (key.size() + 7) & ~std::size_t{7};
            const std::size_t room = 1000 - 16 - padded;
            std::size_t off = 0;
            do {
                const std::string chunk = v.substr(off, room);
                std::vector<std::uint8_t> a(16 + padded + chunk.size());
                const std::uint32_t hdr[4] = {static_cast<std::uint32_t>(key.size()), 0,
                                              static_cast<std::uint32_t>(v.size()),
                                              static_cast<std::uint32_t>(off)};
                std::memcpy(a.data(), hdr, 16);
                std::memcpy(a.data() + 16, key.data(), key.size());
                std::memcpy(a.data() + 16 + padded, chunk.data(), chunk.size());
                const rt::Result r = put.run(a);
                if (r.status != ROF_ISA_OK) {
                    throw std::runtime_error("kv-put faulted at " + std::to_string(r.fault_pc));
                }
                if (r.prog_status != 0) {
                    return static_cast<Status>(r.prog_status);
                }
                off += chunk.size();
            } while (off < v.size());
            return Status::ok;
        }
        rt::Result last;
    };

    rt::Memory mem;

  private:
    rt::Loaded load(const std::string& name) {
        rof::prog::Program p;
        if (const char* form = std::getenv("ROF_PROGRAMS_FORM"); form && std::string(form) == "c") {
            const std::string clang = ROF_KV_CLANG;
            if (clang.empty()) {
                throw std::runtime_error("CMake found no clang: it is in packaging/build-deps");
            }
            auto d = rof::prog::decode_image(rofkv::program_image_c(name, g_, clang));
            if (!d.ok()) {
                throw std::runtime_error(name + ".c: " + d.error);
            }
            p = std::move(*d);
        } else {
            auto a = rof::prog::assemble(rofkv::program_source(name, g_), name + ".rofs");
            if (!a.ok()) {
                throw std::runtime_error(a.error_text());
            }
            p = std::move(*a.program);
        }
        auto v = rof::prog::verify(p);
        if (!v.ok) {
            throw std::runtime_error(name + ": " + v.error);
        }
        return {p, v.worst_case};
    }
    rofkv::Geometry g_;
    rt::Loaded get_, put_;
};

// The largest value in one INVOKE: a 4096-byte value is one kv-get response of 4112 bytes,
// what a session of 8 KiB messages answers (KvClient's kMsgSize).
TEST(GetChunkedOnKvGet, LargestValueInOneInvoke) {
    Table t;
    Table::Session reader(t), writer(t);
    const std::string key = "key:one-invoke";
    const std::string big = kvload::encode({1, 1, 0}, 4096);
    ASSERT_EQ(writer.set(key, big), Status::ok);
    unsigned fetches = 0;
    std::string v;
    std::uint64_t restarts = 0;
    const Status st = rofkv::get_chunked(
        [&](std::uint32_t voff) {
            fetches++;
            return reader.fetch(key, voff);
        },
        v, nullptr, &restarts);
    EXPECT_EQ(st, Status::ok);
    EXPECT_EQ(v, big);
    EXPECT_EQ(fetches, 1u);
    EXPECT_EQ(restarts, 0u);
    EXPECT_EQ(reader.last.resp.size(), rofkv::kGetHeader + 4096);
    EXPECT_LE(reader.last.resp.size(), std::size_t{rofkv::kMsgSize - 32});  // ROF_INVOKE_RESP
    EXPECT_EQ(t.geometry().msg_size, rofkv::kMsgSize);
}

// A store of 64 KiB values (rof-kvstore --max-value 65536): kv-get answers 32768 bytes a call,
// what a session of 64 KiB messages answers; a 65536-byte value is two INVOKEs, 32768 one.  A
// value past the store's largest is refused by kv-put (too_big), as one past 4096 is by default.
TEST(GetChunkedOnKvGet, SixtyFourKiBValuesInTwoInvokes) {
    Table t(1024, 65536);
    ASSERT_EQ(t.geometry().chunk, 32768u);
    ASSERT_EQ(t.geometry().msg_size, 65536u);
    Table::Session reader(t), writer(t);
    for (const std::size_t len : {std::size_t{65536}, std::size_t{32768}, std::size_t{40000}}) {
        const std::string key = "key:" + std::to_string(len), value = filled(len, 'k');
        ASSERT_EQ(writer.set(key, value), Status::ok);
        unsigned fetches = 0;
        std::string v;
        const Status st = rofkv::get_chunked(
            [&](std::uint32_t voff) {
                fetches++;
                const GetReply r = reader.fetch(key, voff);
                EXPECT_LE(r.resp.size(), t.geometry().msg_size - 32);  // ROF_INVOKE_RESP
                return r;
            },
            v);
        EXPECT_EQ(st, Status::ok);
        EXPECT_EQ(v, value);
        EXPECT_EQ(fetches, (len + 32767) / 32768) << len;
    }
    EXPECT_EQ(writer.set("key:too-big", filled(65537, 'x')), Status::too_big);
    Table small;
    Table::Session w(small);
    EXPECT_EQ(w.set("key:too-big", filled(4097, 'x')), Status::too_big);
}

// kv-get still answers from an offset, the rest of the value under its entry word, and status 4
// (too_big) for an offset past a value set shorter meanwhile (issue 24): what a reader of
// smaller chunks relies on.
TEST(GetChunkedOnKvGet, AnOffsetPastAValueSetShorter) {
    Table t;
    Table::Session reader(t), writer(t);
    const std::string key = "key:issue-24";
    const std::string big = kvload::encode({1, 1, 0}, 4096), small = kvload::encode({1, 2, 1}, 100);
    ASSERT_EQ(writer.set(key, big), Status::ok);
    GetReply r = reader.fetch(key, 0);
    ASSERT_EQ(r.status, Status::ok);
    std::uint64_t entry = 0;
    std::memcpy(&entry, r.resp.data() + 8, 8);
    r = reader.fetch(key, 976);
    ASSERT_EQ(r.status, Status::ok);
    ASSERT_EQ(r.resp.size(), rofkv::kGetHeader + 4096 - 976);
    std::uint64_t again = 0;
    std::memcpy(&again, r.resp.data() + 8, 8);
    EXPECT_EQ(again, entry);
    EXPECT_EQ(0, std::memcmp(r.resp.data() + rofkv::kGetHeader, big.data() + 976, 4096 - 976));
    ASSERT_EQ(writer.set(key, small), Status::ok);
    EXPECT_EQ(reader.fetch(key, 976).status, Status::too_big);
    std::string v;
    EXPECT_EQ(rofkv::get_chunked([&](std::uint32_t voff) { return reader.fetch(key, voff); }, v),
              Status::ok);
    EXPECT_EQ(v, small);
}

// Sessions in threads: writers SET 4 keys to kvload values of 32..@max_value bytes (so they
// shrink and grow, each SET of over 968 bytes in several kv-put INVOKEs), readers GET them in
// kv-get's own chunks, as KvClient does: a whole value from the 4096-byte store, 32768 bytes a
// call from the 64 KiB one (a long value is two, and a SET between them shortens it).  Every GET
// answers ok (the keys are set before, and nothing deletes) or busy (the value changed under every
// one of its kGetAttempts starts), and every value read is one whole value of its key
// (kvload::check: length and checksum).
void racing_shrinking_sets(std::uint64_t max_value, unsigned rounds) {
    constexpr unsigned kWriters = 2, kReaders = 2, kKeys = 4;
    const std::size_t max = std::min<std::size_t>(max_value, kvload::kMaxValue);
    Table t(1024, max_value);
    auto key = [](std::uint32_t k) { return kvload::key_name(k, 16); };
    {
        Table::Session s(t);
        for (std::uint32_t k = 0; k < kKeys; k++) {
            ASSERT_EQ(s.set(key(k), kvload::encode({k, 0, 0}, max)), Status::ok);
        }
    }
    std::atomic<unsigned> writing{kWriters};
    std::atomic<std::uint64_t> reads{0}, restarts{0}, busy{0}, wrong{0}, other{0};
    std::vector<std::thread> ts;
    for (unsigned w = 0; w < kWriters; w++) {
        ts.emplace_back([&, w] {
            Table::Session s(t);
            std::mt19937_64 rng(w);
            for (std::uint32_t r = 1; r <= rounds; r++) {
                const auto k = static_cast<std::uint32_t>(rng() % kKeys);
                // Alternately long and short, so most SETs change the length a lot.
                const std::size_t len =
                    r % 2 ? max / 2 + rng() % (max / 2 + 1) : 32 + rng() % (max / 4);
                const std::string v = kvload::encode({k, r, static_cast<std::uint16_t>(w)}, len);
                Status st;
                while ((st = s.set(key(k), v)) == Status::busy) {
                }
                EXPECT_EQ(st, Status::ok);
            }
            writing--;
        });
    }
    for (unsigned r = 0; r < kReaders; r++) {
        ts.emplace_back([&, r] {
            Table::Session s(t);
            std::string v;
            // At least 200 GETs each, however early the writers finish (a reader that started
            // at i = r did 199 when a loaded host let the writers end first).
            for (std::uint32_t i = 0; writing > 0 || i < 200; i++) {
                const std::uint32_t k = (i + r) % kKeys;
                std::uint64_t n = 0;
                const Status st = rofkv::get_chunked(
                    [&](std::uint32_t voff) { return s.fetch(key(k), voff); }, v, nullptr, &n);
                restarts += n;
                kvload::Stamp stamp;
                if (st == Status::ok) {
                    reads++;
                    if (kvload::check(v, k, stamp) != kvload::Check::ok) {
                        wrong++;
                    }
                } else if (st == Status::busy) {
                    busy++;
                } else {
                    other++;
                }
            }
        });
    }
    for (auto& th : ts) {
        th.join();
    }
    EXPECT_EQ(wrong.load(), 0u);
    EXPECT_EQ(other.load(), 0u) << "a GET answered not found or too big for a key being set";
    EXPECT_GE(reads.load() + busy.load(), kReaders * 200u);
    std::printf("%llu GETs ok, %llu restarts, %llu busy\n",
                static_cast<unsigned long long>(reads.load()),
                static_cast<unsigned long long>(restarts.load()),
                static_cast<unsigned long long>(busy.load()));
}

TEST(GetChunkedOnKvGet, RacingShrinkingSets) {
    racing_shrinking_sets(rofkv::kDefaultMaxValue, 1500);
}

TEST(GetChunkedOnKvGet, RacingShrinkingSetsOfSixtyFourKiBValues) {
    racing_shrinking_sets(65536, 200);
}

}  // namespace
