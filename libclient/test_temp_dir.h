// SPDX-License-Identifier: MIT
// The tests' one temporary directory (librof's, rofctl's and rofd's unit
// tests): a fresh directory under $TMPDIR, removed with everything in it.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <stdexcept>
#include <string>

namespace rof::test {

class TempDir {
  public:
    explicit TempDir(const std::string& prefix = "rof-test") {
        std::string tmpl = std::filesystem::temp_directory_path() / (prefix + "-XXXXXX");
        if (::mkdtemp(tmpl.data()) == nullptr) {
            throw std::runtime_error("mkdtemp " + tmpl + " failed");
        }
        path_ = tmpl;
    }
    ~TempDir() {
        std::error_code ignored;
        std::filesystem::remove_all(path_, ignored);
    }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;

    const std::filesystem::path& path() const noexcept { return path_; }
    std::string file(const std::string& name) const { return (path_ / name).string(); }

  private:
    std::filesystem::path path_;
};

}  // namespace rof::test
