// SPDX-License-Identifier: MIT
// The C builds of kv-get, kv-put and kv-del as rof-kvstore --programs c makes them
// (kv_program_c.h): compiled with clang for a geometry, translated and verified; the same
// region slots as the assembly program_source gives for that geometry, the geometry's
// constants in the instructions.  (kv_client_test runs them, ROF_PROGRAMS_FORM=c.)
#include "kv_program_c.h"

#include <gtest/gtest.h>

#include <stdlib.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "kv_layout.h"
#include "rof/prog/asm.h"
#include "rof/prog/bpf.h"
#include "rof/prog/program.h"
#include "rof/prog/verifier.h"

namespace {

const char* const kNames[] = {"kv-get", "kv-put", "kv-del"};

std::string clang() {
    const std::string c = ROF_CLANG;
    if (c.empty()) {
        throw std::runtime_error("CMake found no clang: it is in packaging/build-deps");
    }
    return c;
}

rof::prog::Program decoded(const std::vector<std::uint8_t>& image) {
    auto p = rof::prog::decode_image(image);
    if (!p.ok()) {
        throw std::runtime_error(p.error);
    }
    return *p;
}

rof::prog::Program assembled(const std::string& name, const rofkv::Geometry& g) {
    auto a = rof::prog::assemble(rofkv::program_source(name, g), name + ".rofs");
    if (!a.ok()) {
        throw std::runtime_error(a.error_text());
    }
    return *a.program;
}

// programs/NAME.c from the source tree, compiled with @defines and translated: its tag.
std::uint64_t tree_tag(const std::string& name, const std::vector<std::string>& defines) {
    auto obj = rof::prog::compile_offload(
        clang(), std::string(ROF_PROGRAMS_DIR) + "/" + name + ".c", {ROF_OFFLOAD_INCLUDE}, defines);
    if (!obj.ok()) {
        throw std::runtime_error(obj.error);
    }
    auto r = rof::prog::translate_bpf(*obj);
    if (!r.ok()) {
        throw std::runtime_error(r.error);
    }
    return r.program->tag();
}

// --max-value: a power of two from 4096 to 65536; kv-get's chunk at most 32768, and the message
// size its response needs; a heap past what a 32-bit offset reaches is refused.
TEST(KvLayout, MaxValueSizesTheLargeBlocksAndTheResponse) {
    const auto d = rofkv::Geometry::for_items(1024);
    EXPECT_EQ(d.max_value, 4096u);
    EXPECT_EQ(d.chunk, 4096u);
    EXPECT_EQ(d.msg_size, 8192u);
    EXPECT_EQ(d.large_block, 4368u);
    for (const auto& [max, chunk, msg] :
         std::vector<std::array<std::uint64_t, 3>>{{8192, 8192, 16384},
                                                   {16384, 16384, 32768},
                                                   {32768, 32768, 65536},
                                                   {65536, 32768, 65536}}) {
        const auto g = rofkv::Geometry::for_items(1024, max);
        EXPECT_EQ(g.chunk, chunk) << max;
        EXPECT_EQ(g.msg_size, msg) << max;
        EXPECT_EQ(g.large_block, 16 + 256 + max);
        EXPECT_EQ(g.large_count, d.large_count);
        EXPECT_GE(g.heap_len, g.large_at + 64 + g.large_count * g.large_block);
        // Another value size is another heap: a restart with it finds kv_heap of another size.
        EXPECT_NE(g.heap_len, d.heap_len);
        const std::string src = rofkv::program_source("kv-get", g);
        EXPECT_NE(src.find(".const MAXVAL, " + std::to_string(max) + "\n"), std::string::npos);
        EXPECT_NE(src.find(".const CHUNK, " + std::to_string(chunk) + "\n"), std::string::npos);
        EXPECT_NE(src.find(".const RESP, " + std::to_string(16 + chunk) + "\n"), std::string::npos);
    }
    for (const std::uint64_t bad : {0ul, 2048ul, 5000ul, 131072ul}) {
        EXPECT_THROW(rofkv::Geometry::for_items(1024, bad), std::invalid_argument) << bad;
    }
    EXPECT_THROW(rofkv::Geometry::for_items(rofkv::kMaxItems, 65536), std::invalid_argument);
    EXPECT_NO_THROW(rofkv::Geometry::for_items(rofkv::kMaxItems, 32768));
}

TEST(KvProgramC, DefinesAreTheGeometry) {
    const auto g = rofkv::Geometry::for_items(2000);
    EXPECT_EQ(
        rofkv::c_defines(g),
        (std::vector<std::string>{
            "INDEX_LEN=" + std::to_string(g.index_len), "HEAP_LEN=" + std::to_string(g.heap_len),
            "MASK=" + std::to_string(g.nbuckets - 1), "LOCKS=" + std::to_string(g.locks),
            "LARGE_AT=" + std::to_string(g.large_at), "MAXVAL=4096", "CHUNK=4096", "RESP=4112"}));
}

// The demo's table (selftests/demo.sh, DEMO_ITEMS=2000), the default and largest ones, and
// the bench's of 64 KiB values: each C build verifies, and binds the regions as its assembly
// does (names, access, lengths: the geometry's), with its response size.
TEST(KvProgramC, SameSlotsAsTheAssemblyForEachGeometry) {
    for (const auto& [items, max_value] :
         std::vector<std::pair<std::uint64_t, std::uint64_t>>{{2000, 4096},
                                                              {rofkv::kDefaultItems, 4096},
                                                              {rofkv::kMaxItems, 4096},
                                                              {4096, 65536},
                                                              {rofkv::kMaxItems, 32768}}) {
        const auto g = rofkv::Geometry::for_items(items, max_value);
        for (const char* name : kNames) {
            SCOPED_TRACE(std::string(name) + " for " + std::to_string(items) + " items of " +
                         std::to_string(max_value) + " bytes");
            const rof::prog::Program c = decoded(rofkv::program_image_c(name, g, clang()));
            const rof::prog::Program s = assembled(name, g);
            const auto v = rof::prog::verify(c);
            EXPECT_TRUE(v.ok) << v.error;
            ASSERT_EQ(c.slots.size(), s.slots.size());
            for (std::size_t i = 0; i < c.slots.size(); i++) {
                EXPECT_EQ(c.slots[i].name, s.slots[i].name);
                EXPECT_EQ(c.slots[i].access, s.slots[i].access);
                EXPECT_EQ(c.slots[i].len, s.slots[i].len);
            }
            const auto index = c.find_slot("kv_index");
            ASSERT_TRUE(index.has_value());
            EXPECT_EQ(c.slots[*index].len, g.index_len);
            if (const auto heap = c.find_slot("kv_heap")) {
                EXPECT_EQ(c.slots[*heap].len, g.heap_len);
            }
            EXPECT_EQ(c.args_max, s.args_max);
            EXPECT_EQ(c.resp_max, s.resp_max);
            if (std::string(name) == "kv-get") {
                EXPECT_EQ(c.resp_max, 16 + g.chunk);
                EXPECT_LE(c.resp_max, g.msg_size - 32);
            }
        }
    }
}

// Two geometries, two images (the tag covers the image): the geometry reaches the image.
TEST(KvProgramC, GeometryChangesTheImage) {
    for (const char* name : kNames) {
        const auto a = rofkv::program_image_c(name, rofkv::Geometry::for_items(2000), clang());
        const auto b = rofkv::program_image_c(name, rofkv::Geometry::for_items(4000), clang());
        EXPECT_NE(decoded(a).tag(), decoded(b).tag()) << name;
    }
}

// Each define reaches the instructions, not only the slot lengths: the image rof-kvstore
// builds for 2000 items is programs/NAME.c compiled with c_defines (the compiled-in text is
// the tree's), and with any one define given another geometry's value instead it differs.
// MASK is in every program; LOCKS and LARGE_AT in the writers'; MAXVAL in kv-get's and
// kv-put's, CHUNK and RESP in kv-get's.
TEST(KvProgramC, EachDefineReachesTheImage) {
    const auto g = rofkv::Geometry::for_items(2000);
    const auto defs = rofkv::c_defines(g),
               others = rofkv::c_defines(rofkv::Geometry::for_items(100000, 65536));
    std::vector<unsigned> changed(defs.size());
    for (const char* name : kNames) {
        SCOPED_TRACE(name);
        const std::uint64_t base = tree_tag(name, defs);
        EXPECT_EQ(base, decoded(rofkv::program_image_c(name, g, clang())).tag());
        for (std::size_t i = 0; i < defs.size(); i++) {
            auto d = defs;
            d[i] = others[i];
            if (tree_tag(name, d) != base) {
                changed[i]++;
            }
        }
    }
    EXPECT_EQ(changed[2], 3u) << "MASK";
    for (std::size_t i = 0; i < defs.size(); i++) {
        EXPECT_GT(changed[i], 0u) << defs[i];
    }
}

TEST(KvProgramC, NoClangSaysWhatToDo) {
    try {
        rofkv::program_image_c("kv-get", rofkv::Geometry::for_items(2000),
                               "/nonexistent/rof-no-clang");
        FAIL() << "compiled without clang";
    } catch (const std::runtime_error& e) {
        const std::string m = e.what();
        EXPECT_NE(m.find("kv-get.c: cannot run /nonexistent/rof-no-clang"), std::string::npos) << m;
        EXPECT_NE(m.find("install clang, or use --programs rofs"), std::string::npos) << m;
    }
}

// --image-cache: the first build keeps clang's object, one file a program and geometry; a
// second build of the same input runs no clang (one that cannot run still gives the same
// image); another geometry is another file; a file that does not translate is compiled again
// and replaced.
TEST(KvProgramC, ImageCacheSkipsClangForTheSameInput) {
    namespace fs = std::filesystem;
    std::string tmpl = (fs::temp_directory_path() / "rof-kvcache-XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    const fs::path dir = fs::path(tmpl) / "images";  // made by the first build
    const auto objects = [&] {
        std::vector<fs::path> out;
        for (const auto& e : fs::directory_iterator(dir)) {
            out.push_back(e.path());
        }
        std::sort(out.begin(), out.end());
        return out;
    };
    const auto g = rofkv::Geometry::for_items(2000);
    const auto first = rofkv::program_image_c("kv-put", g, clang(), dir.string());
    ASSERT_EQ(objects().size(), 1u);
    const fs::path kept = objects()[0];
    EXPECT_EQ(kept.filename().string().rfind("kv-put-", 0), 0u) << kept;
    EXPECT_EQ(kept.extension(), ".o");
    EXPECT_EQ(rofkv::program_image_c("kv-put", g, "/nonexistent/rof-no-clang", dir.string()),
              first);
    EXPECT_EQ(first, rofkv::program_image_c("kv-put", g, clang()));  // the cache changes nothing

    rofkv::program_image_c("kv-put", rofkv::Geometry::for_items(4000), clang(), dir.string());
    EXPECT_EQ(objects().size(), 2u);

    std::ofstream(kept, std::ios::binary | std::ios::trunc) << "not an object";
    EXPECT_THROW(rofkv::program_image_c("kv-put", g, "/nonexistent/rof-no-clang", dir.string()),
                 std::runtime_error);
    EXPECT_EQ(rofkv::program_image_c("kv-put", g, clang(), dir.string()), first);
    EXPECT_EQ(rofkv::program_image_c("kv-put", g, "/nonexistent/rof-no-clang", dir.string()),
              first);
    EXPECT_EQ(objects().size(), 2u);  // replaced, and no temporary left
    fs::remove_all(tmpl);
}

TEST(KvProgramC, UnknownProgramThrows) {
    EXPECT_THROW(rofkv::program_image_c("kv-cas", rofkv::Geometry::for_items(2000), clang()),
                 std::invalid_argument);
}

}  // namespace
