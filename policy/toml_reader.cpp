// SPDX-License-Identifier: MIT
#include "toml_reader.h"

#include <cinttypes>
#include <cstdio>

namespace rof::policy::detail {
namespace {

std::string_view type_name(toml::node_type t) {
    switch (t) {
        case toml::node_type::table:
            return "a table";
        case toml::node_type::array:
            return "an array";
        case toml::node_type::string:
            return "a string";
        case toml::node_type::integer:
            return "an integer";
        case toml::node_type::floating_point:
            return "a float";
        case toml::node_type::boolean:
            return "a boolean";
        case toml::node_type::date:
            return "a date";
        case toml::node_type::time:
            return "a time";
        case toml::node_type::date_time:
            return "a date-time";
        case toml::node_type::none:
            break;
    }
    return "nothing";
}

std::string allowed_list(std::initializer_list<std::string_view> allowed) {
    std::string s;
    for (auto a : allowed) {
        if (!s.empty()) {
            s += ", ";
        }
        s += a;
    }
    return s;
}

std::string range_text(std::uint64_t min, std::uint64_t max) {
    return "(" + std::to_string(min) + " .. " + std::to_string(max) + ")";
}

}  // namespace

Pos pos_of(const toml::node& n) {
    return {n.source().begin.line, n.source().begin.column};
}

Pos pos_of(const toml::key& k) {
    return {k.source().begin.line, k.source().begin.column};
}

std::string join(std::string_view prefix, std::string_view key) {
    if (prefix.empty()) {
        return std::string(key);
    }
    std::string s(prefix);
    s += '.';
    s += key;
    return s;
}

std::string index(std::string_view prefix, std::size_t i) {
    return std::string(prefix) + "[" + std::to_string(i) + "]";
}

std::string fmt_bytes(std::uint64_t v) {
    constexpr std::uint64_t KiB = 1024;
    static const std::pair<std::uint64_t, const char*> units[] = {
        {KiB * KiB * KiB * KiB, "TiB"}, {KiB * KiB * KiB, "GiB"}, {KiB * KiB, "MiB"}, {KiB, "KiB"}};
    for (const auto& [unit, name] : units) {
        if (v >= unit && v % unit == 0) {
            return std::to_string(v / unit) + " " + name;
        }
    }
    return std::to_string(v) + (v == 1 ? " byte" : " bytes");
}

std::string quote(std::string_view s) {
    std::string q = "\"";
    for (char c : s) {
        auto u = static_cast<unsigned char>(c);
        if (c == '"' || c == '\\') {
            q += '\\';
            q += c;
        } else if (u < 0x20 || u == 0x7f) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\x%02x", u);
            q += buf;
        } else {
            q += c;
        }
    }
    q += '"';
    return q;
}

void Reader::error(Pos p, std::string message) {
    out_.push_back(Diagnostic{file_, p.line, p.col, std::move(message)});
}

void Reader::check_keys(const toml::table& t, std::string_view path,
                        std::initializer_list<std::string_view> allowed) {
    for (auto&& [k, v] : t) {
        bool known = false;
        for (auto a : allowed) {
            known = known || a == k.str();
        }
        if (!known) {
            error(pos_of(k), join(path, k.str()) +
                                 ": unknown key (known keys: " + allowed_list(allowed) + ")");
        }
    }
}

bool Reader::require(const toml::table& t, Pos where, std::string_view path, std::string_view key) {
    if (t.contains(key)) {
        return true;
    }
    error(where,
          (path.empty() ? std::string() : std::string(path) + ": ") + "missing key " + quote(key));
    return false;
}

void Reader::wrong_type(const toml::node& n, std::string_view path, std::string_view expected) {
    std::string msg = std::string(path) + ": expected " + std::string(expected) + ", not " +
                      std::string(type_name(n.type()));
    if (auto s = n.as_string()) {
        msg += " (" + quote(s->get()) + ")";
    }
    error(pos_of(n), std::move(msg));
}

const toml::table* Reader::table_node(const toml::node& n, std::string_view path) {
    if (auto t = n.as_table()) {
        return t;
    }
    wrong_type(n, path, "a table");
    return nullptr;
}

const toml::table* Reader::table(const toml::table& t, std::string_view path,
                                 std::string_view key) {
    auto n = t.get(key);
    return n ? table_node(*n, join(path, key)) : nullptr;
}

const toml::array* Reader::array(const toml::table& t, std::string_view path,
                                 std::string_view key) {
    auto n = t.get(key);
    if (!n) {
        return nullptr;
    }
    if (auto a = n->as_array()) {
        return a;
    }
    wrong_type(*n, join(path, key), "an array");
    return nullptr;
}

std::optional<std::string> Reader::string_node(const toml::node& n, std::string_view path) {
    if (auto s = n.as_string()) {
        return s->get();
    }
    wrong_type(n, path, "a string");
    return std::nullopt;
}

std::optional<std::string> Reader::string(const toml::table& t, std::string_view path,
                                          std::string_view key) {
    auto n = t.get(key);
    return n ? string_node(*n, join(path, key)) : std::nullopt;
}

std::optional<bool> Reader::boolean(const toml::table& t, std::string_view path,
                                    std::string_view key) {
    auto n = t.get(key);
    if (!n) {
        return std::nullopt;
    }
    if (auto b = n->as_boolean()) {
        return b->get();
    }
    wrong_type(*n, join(path, key), "a boolean (true or false)");
    return std::nullopt;
}

std::optional<std::uint64_t> Reader::integer_node(const toml::node& n, std::string_view path,
                                                  std::uint64_t min, std::uint64_t max) {
    auto i = n.as_integer();
    if (!i) {
        wrong_type(n, path, "an integer");
        return std::nullopt;
    }
    std::int64_t v = i->get();
    if (v < 0 || static_cast<std::uint64_t>(v) < min || static_cast<std::uint64_t>(v) > max) {
        error(pos_of(n), std::string(path) + ": " + std::to_string(v) + " is out of range " +
                             range_text(min, max));
        return std::nullopt;
    }
    return static_cast<std::uint64_t>(v);
}

std::optional<std::uint64_t> Reader::integer(const toml::table& t, std::string_view path,
                                             std::string_view key, std::uint64_t min,
                                             std::uint64_t max) {
    auto n = t.get(key);
    return n ? integer_node(*n, join(path, key), min, max) : std::nullopt;
}

std::optional<std::uint64_t> Reader::size_node(const toml::node& n, std::string_view path,
                                               std::uint64_t min, std::uint64_t max) {
    std::uint64_t v = 0;
    if (auto i = n.as_integer()) {
        if (i->get() < 0) {
            error(pos_of(n), std::string(path) + ": " + std::to_string(i->get()) +
                                 " is negative; a size is a number of bytes");
            return std::nullopt;
        }
        v = static_cast<std::uint64_t>(i->get());
    } else if (auto s = n.as_string()) {
        auto parsed = parse_size(s->get());
        if (!parsed) {
            error(pos_of(n), std::string(path) + ": " + quote(s->get()) +
                                 " is not a size (use B, KiB, MiB, GiB)");
            return std::nullopt;
        }
        v = *parsed;
    } else {
        wrong_type(n, path, "a size (bytes, or a string such as \"64MiB\")");
        return std::nullopt;
    }
    if (v < min || v > max) {
        error(pos_of(n), std::string(path) + ": " + fmt_bytes(v) + " is out of range (" +
                             fmt_bytes(min) + " .. " + fmt_bytes(max) + ")");
        return std::nullopt;
    }
    return v;
}

std::optional<std::uint64_t> Reader::size(const toml::table& t, std::string_view path,
                                          std::string_view key, std::uint64_t min,
                                          std::uint64_t max) {
    auto n = t.get(key);
    return n ? size_node(*n, join(path, key), min, max) : std::nullopt;
}

std::optional<std::string> Reader::name_node(const toml::node& n, std::string_view path) {
    auto s = string_node(n, path);
    if (!s) {
        return std::nullopt;
    }
    if (auto why = name_error(*s)) {
        error(pos_of(n), std::string(path) + ": " + *why);
        return std::nullopt;
    }
    return s;
}

}  // namespace rof::policy::detail
