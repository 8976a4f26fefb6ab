// SPDX-License-Identifier: MIT
#include "kv_program_c.h"

#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <stdexcept>
#include <string_view>
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

// FNV-1a, 64 bits, of each part and a NUL after it: the name of what clang saw.
std::uint64_t fnv1a(const std::vector<std::string_view>& parts) {
    std::uint64_t h = 14695981039346656037ull;
    for (std::string_view s : parts) {
        for (unsigned char c : s) {
            h = (h ^ c) * 1099511628211ull;
        }
        h *= 1099511628211ull;  // the NUL
    }
    return h;
}

// The file's bytes, or nothing when it cannot be read.
std::optional<std::vector<std::uint8_t>> read_file(const fs::path& p) {
    std::ifstream f(p, std::ios::binary);
    if (!f) {
        return std::nullopt;
    }
    std::vector<std::uint8_t> out((std::istreambuf_iterator<char>(f)),
                                  std::istreambuf_iterator<char>());
    if (f.bad()) {
        return std::nullopt;
    }
    return out;
}

// @bytes as @p, whole or not at all (a temporary beside it, renamed).  False on failure.
bool write_atomically(const fs::path& p, const std::vector<std::uint8_t>& bytes) {
    const fs::path tmp = p.string() + ".tmp." + std::to_string(::getpid());
    {
        std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
        f.write(reinterpret_cast<const char*>(bytes.data()),
                static_cast<std::streamsize>(bytes.size()));
        f.close();
        if (!f) {
            std::error_code ec;
            fs::remove(tmp, ec);
            return false;
        }
    }
    std::error_code ec;
    fs::rename(tmp, p, ec);
    if (ec) {
        fs::remove(tmp, ec);
        return false;
    }
    return true;
}

rof::prog::BpfResult translate(const std::vector<std::uint8_t>& obj, const std::string& file) {
    rof::prog::BpfOptions o;
    o.object_name = file;
    return rof::prog::translate_bpf(obj, o);
}

}  // namespace

std::vector<std::string> c_defines(const Geometry& g) {
    std::vector<std::string> out;
    for (const auto& [n, v] : constants(g)) {
        out.push_back(n + "=" + std::to_string(v));
    }
    return out;
}

std::vector<std::uint8_t> program_image_c(const std::string& name, const Geometry& g,
                                          const std::string& clang, const std::string& cache_dir) {
    const char* text = name == "kv-get"   ? kv_get_c
                       : name == "kv-put" ? kv_put_c
                       : name == "kv-del" ? kv_del_c
                                          : nullptr;
    if (!text) {
        throw std::invalid_argument("no program " + name);
    }
    const std::string file = name + ".c";
    const std::vector<std::string> defines = c_defines(g);
    // The cached object of this very input (the sources and the defines), if any: translated
    // here, so that a translator newer than the cache is the one that runs.  One that does not
    // translate (a torn or foreign file) is compiled again, and replaced.
    fs::path cached;
    if (!cache_dir.empty()) {
        std::vector<std::string_view> key = {name, text, kv_h, rof_offload_h};
        key.insert(key.end(), defines.begin(), defines.end());
        char hex[17];
        std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(fnv1a(key)));
        cached = fs::path(cache_dir) / (name + "-" + hex + ".o");
        if (auto obj = read_file(cached)) {
            if (auto r = translate(*obj, file); r.ok()) {
                return r.program->encode();
            }
        }
    }
    // NAME.c with kv.h beside it and rof/offload.h under the include directory.
    TempDir dir;
    fs::create_directory(dir.path() / "rof");
    write_file(dir.path() / "rof" / "offload.h", rof_offload_h);
    write_file(dir.path() / "kv.h", kv_h);
    write_file(dir.path() / file, text);
    auto obj = rof::prog::compile_offload(clang, (dir.path() / file).string(),
                                          {dir.path().string()}, defines);
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
    auto r = translate(*obj, file);
    if (!r.ok()) {
        throw std::runtime_error(r.error);
    }
    if (!cached.empty()) {
        std::error_code ec;
        fs::create_directories(cached.parent_path(), ec);
        if (ec || !write_atomically(cached, *obj)) {
            std::fprintf(stderr,
                         "rof-kvstore: cannot keep %s's object in %s (compiled each start)\n",
                         file.c_str(), cache_dir.c_str());
        }
    }
    return r.program->encode();
}

}  // namespace rofkv
