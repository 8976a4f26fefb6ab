// SPDX-License-Identifier: MIT
#include "kv_program_c.h"

#include <stdlib.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <utility>

#include "rof/prog/bpf.h"

namespace rofkv {

// kv_programs.cpp, generated from programs/kv-*.c, kv.h and rof/offload.h (CMakeLists.txt).
extern const char* const kv_get_c;
extern const char* const kv_put_c;
extern const char* const kv_del_c;
extern const char* const kv_h;
extern const char* const rof_offload_h;

namespace {

namespace fs = std::filesystem;

// A private directory (mkdtemp, 0700) removed with what it holds when it goes.
class TempDir {
  public:
    TempDir() {
        std::string tmpl = (fs::temp_directory_path() / "rof-kvstore-XXXXXX").string();
        if (::mkdtemp(tmpl.data()) == nullptr) {
            throw std::runtime_error("cannot make a temporary directory: " +
                                     std::string(std::strerror(errno)));
        }
        path_ = tmpl;
    }
    ~TempDir() {
        std::error_code ec;
        fs::remove_all(path_, ec);
    }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    const fs::path& path() const { return path_; }

  private:
    fs::path path_;
};

void write_file(const fs::path& p, const char* text) {
    std::ofstream f(p, std::ios::binary | std::ios::trunc);
    f << text;
    f.close();
    if (!f) {
        throw std::runtime_error("cannot write " + p.string());
    }
}

}  // namespace

std::vector<std::string> c_defines(const Geometry& g) {
    const std::pair<const char*, std::uint64_t> defs[] = {
        {"INDEX_LEN", g.index_len}, {"HEAP_LEN", g.heap_len}, {"MASK", g.nbuckets - 1},
        {"LOCKS", g.locks},         {"LARGE_AT", g.large_at},
    };
    std::vector<std::string> out;
    for (const auto& [n, v] : defs) {
        out.push_back(std::string(n) + "=" + std::to_string(v));
    }
    return out;
}

std::vector<std::uint8_t> program_image_c(const std::string& name, const Geometry& g,
                                          const std::string& clang) {
    const char* text = name == "kv-get"   ? kv_get_c
                       : name == "kv-put" ? kv_put_c
                       : name == "kv-del" ? kv_del_c
                                          : nullptr;
    if (!text) {
        throw std::invalid_argument("no program " + name);
    }
    const std::string file = name + ".c";
    // NAME.c with kv.h beside it and rof/offload.h under the include directory.
    TempDir dir;
    fs::create_directory(dir.path() / "rof");
    write_file(dir.path() / "rof" / "offload.h", rof_offload_h);
    write_file(dir.path() / "kv.h", kv_h);
    write_file(dir.path() / file, text);
    auto obj = rof::prog::compile_offload(clang, (dir.path() / file).string(),
                                          {dir.path().string()}, c_defines(g));
    if (!obj.ok()) {
        std::string why = obj.error;
        while (!why.empty() && why.back() == '\n') {
            why.pop_back();
        }
        if (why.rfind("cannot run ", 0) == 0) {
            why += " (install clang, or use --programs rofs)";
        }
        throw std::runtime_error(file + ": " + why);
    }
    rof::prog::BpfOptions o;
    o.object_name = file;
    auto r = rof::prog::translate_bpf(*obj, o);
    if (!r.ok()) {
        throw std::runtime_error(r.error);
    }
    return r.program->encode();
}

}  // namespace rofkv
