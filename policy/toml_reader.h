// SPDX-License-Identifier: MIT
// Typed access to a parsed TOML document for the policy loader: every
// getter reports what is wrong with a value (type, range, unknown key) as
// a Diagnostic at the value's position and returns std::nullopt, so the
// caller simply keeps its default and goes on to find the next error.
#pragma once

#include <toml++/toml.h>

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "policy.h"

namespace rof::policy::detail {

struct Pos {
    std::uint32_t line = 0;  // 0: the file as a whole
    std::uint32_t col = 0;
};

Pos pos_of(const toml::node& n);
Pos pos_of(const toml::key& k);

// "a.b" from "a" and "b"; "b" when @prefix is empty.
std::string join(std::string_view prefix, std::string_view key);
// "a[3]"
std::string index(std::string_view prefix, std::size_t i);
// "16 GiB", "4 KiB", "5000 bytes": exact, for messages.
std::string fmt_bytes(std::uint64_t v);
std::string quote(std::string_view s);

class Reader {
  public:
    Reader(std::string file, std::vector<Diagnostic>& out) : file_(std::move(file)), out_(out) {}

    const std::string& file() const { return file_; }
    void error(Pos p, std::string message);
    std::size_t errors() const { return out_.size(); }

    // Reports every key of @t not in @allowed; @path is @t's own path.
    void check_keys(const toml::table& t, std::string_view path,
                    std::initializer_list<std::string_view> allowed);
    // Reports "missing key" at @where (the table) when @t lacks @key.
    bool require(const toml::table& t, Pos where, std::string_view path, std::string_view key);

    // Each returns std::nullopt (nullptr) when the key is absent, or
    // after reporting a wrong value.  @path is the table's path.
    const toml::table* table(const toml::table& t, std::string_view path, std::string_view key);
    const toml::array* array(const toml::table& t, std::string_view path, std::string_view key);
    std::optional<std::string> string(const toml::table& t, std::string_view path,
                                      std::string_view key);
    std::optional<bool> boolean(const toml::table& t, std::string_view path, std::string_view key);
    std::optional<std::uint64_t> integer(const toml::table& t, std::string_view path,
                                         std::string_view key, std::uint64_t min,
                                         std::uint64_t max);
    // An integer number of bytes or a string such as "64MiB".
    std::optional<std::uint64_t> size(const toml::table& t, std::string_view path,
                                      std::string_view key, std::uint64_t min, std::uint64_t max);

    // The same for a node already found (array elements); @path is the
    // node's own path.
    std::optional<std::string> string_node(const toml::node& n, std::string_view path);
    std::optional<std::uint64_t> integer_node(const toml::node& n, std::string_view path,
                                              std::uint64_t min, std::uint64_t max);
    std::optional<std::uint64_t> size_node(const toml::node& n, std::string_view path,
                                           std::uint64_t min, std::uint64_t max);
    // A string that is a valid object name (valid_name()).
    std::optional<std::string> name_node(const toml::node& n, std::string_view path);
    const toml::table* table_node(const toml::node& n, std::string_view path);

  private:
    void wrong_type(const toml::node& n, std::string_view path, std::string_view expected);

    std::string file_;
    std::vector<Diagnostic>& out_;
};

}  // namespace rof::policy::detail
