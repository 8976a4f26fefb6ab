// SPDX-License-Identifier: MIT
// The name rule (rof.h's rof_name_fault(), docs/architecture.md "Names and
// bounds") applied alike by everything that checks a name: the policy
// loader, rofd's calls, rofctl and the FakeModule (rof.ko's is the Module
// contract's names_follow_the_rule, run in the VM), over the rule's edges.
#include <gtest/gtest.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

#include "call.h"
#include "fake_module.h"
#include "policy.h"
#include "rofctl.h"
#include "test_temp_dir.h"

namespace {

namespace fs = std::filesystem;

struct Case {
    std::string name;
    bool valid;
    bool utf8 = true;  // a TOML file can hold it (others are refused as the file's encoding)
};

const std::vector<Case>& cases() {
    static const std::vector<Case> c{
        {"", false},
        {"a", true},
        {"Az09._:-", true},
        {"..", true},
        {std::string(ROF_NAME_MAX - 1, 'x'), true},  // the longest
        {std::string(ROF_NAME_MAX, 'x'), false},     // one more
        {std::string(4 * ROF_NAME_MAX, 'x'), false},
        {"a b", false},
        {"a/b", false},
        {"tab\t", false},
        {"new\nline", false},
        {std::string("nul\0in", 6), false},
        {"caf\xc3\xa9", false},       // UTF-8: ASCII only
        {"\xe9t\xe9", false, false},  // Latin-1 letters, which isalnum() may take
        {"a\"b", false},
        {"x\x7f", false},
    };
    return c;
}

std::string shown(const std::string& name) {
    std::string s;
    for (const char c : name) {
        const auto u = static_cast<unsigned char>(c);
        if (u < 0x20 || u > 0x7e) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\x%02x", u);
            s += buf;
        } else {
            s += c;
        }
    }
    return s.size() > 80 ? s.substr(0, 80) + "..." : s;
}

// @name as a TOML basic string.
std::string toml_string(const std::string& name) {
    std::string s = "\"";
    for (const char c : name) {
        const auto u = static_cast<unsigned char>(c);
        if (c == '"' || c == '\\') {
            s += '\\';
            s += c;
        } else if (u < 0x20 || u == 0x7f) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", u);
            s += buf;
        } else {
            s += c;
        }
    }
    return s + "\"";
}

// What rof::policy::name_error() says of every invalid case, which every
// checker quotes: the rule itself.
TEST(Names, EveryErrorSaysTheRule) {
    const std::string rule = "a name is 1 .. 63 characters of [A-Za-z0-9._:-]";
    for (const Case& c : cases()) {
        const auto why = rof::policy::name_error(c.name);
        EXPECT_EQ(!why, c.valid) << shown(c.name);
        EXPECT_EQ(rof::policy::valid_name(c.name), c.valid) << shown(c.name);
        if (why) {
            EXPECT_NE(why->find(rule), std::string::npos) << *why;
        }
    }
    EXPECT_EQ(rof::policy::name_error(""), "empty; " + rule);
    EXPECT_EQ(rof::policy::name_error(std::string(64, 'x')), "64 characters; " + rule);
    EXPECT_EQ(rof::policy::name_error("a/b"), "\"a/b\" has '/'; " + rule);
    EXPECT_EQ(rof::policy::name_error("caf\xc3\xa9"), "\"caf\\xc3\\xa9\" has '\\xc3'; " + rule);
}

// A region named in a tenant file.
TEST(Names, ThePolicyLoaderAppliesTheRule) {
    for (const Case& c : cases()) {
        if (!c.utf8) {
            continue;
        }
        const std::string kv =
            "name = \"kv\"\n[identity]\nuids = [1001]\n[[regions]]\nname = " + toml_string(c.name) +
            "\nsize = \"4KiB\"\naccess = [\"read\"]\n";
        const auto r = rof::policy::parse("", "rofd.toml", {{"tenants.d/kv.toml", kv}});
        if (c.valid) {
            EXPECT_TRUE(r.errors.empty()) << shown(c.name) << ": " << r.error_text();
        } else {
            ASSERT_EQ(r.errors.size(), 1U) << shown(c.name) << ": " << r.error_text();
            EXPECT_EQ(r.errors[0].message, "regions[0].name: " + *rof::policy::name_error(c.name));
        }
    }
}

// The check every call of rofd makes of a name it is given.
TEST(Names, RofdsCallsApplyTheRule) {
    for (const Case& c : cases()) {
        std::optional<std::string> refused;
        try {
            rofd::check_name("name", c.name);
        } catch (const rofd::CallError& e) {
            EXPECT_EQ(e.code, grpc::StatusCode::INVALID_ARGUMENT);
            refused = e.what();
        }
        if (c.valid) {
            EXPECT_FALSE(refused) << shown(c.name) << ": " << *refused;
        } else {
            EXPECT_EQ(refused, "name: " + *rof::policy::name_error(c.name)) << shown(c.name);
        }
    }
}

// rofctl tenant create NAME --no-reload: a valid name gets its file.
TEST(Names, RofctlAppliesTheRule) {
    const rof::test::TempDir tmp("names");
    fs::create_directories(tmp.path() / "tenants.d");
    const std::string cd = tmp.path().string();
    std::uint32_t uid = 2000;
    for (const Case& c : cases()) {
        std::ostringstream out, err;
        const int rc =
            rofctl::run_command({"tenant", "create", c.name, "--uid", std::to_string(uid++),
                                 "--config-dir", cd, "--no-reload"},
                                out, err);
        if (c.valid) {
            EXPECT_EQ(rc, rofctl::exit_ok) << shown(c.name) << ": " << err.str();
            EXPECT_TRUE(fs::exists(tmp.path() / "tenants.d" / (c.name + ".toml"))) << shown(c.name);
        } else {
            EXPECT_EQ(rc, rofctl::exit_usage) << shown(c.name) << ": " << err.str();
            EXPECT_NE(err.str().find("tenant name: " + *rof::policy::name_error(c.name)),
                      std::string::npos)
                << err.str();
        }
    }
}

// What the module checks (rof.ko's, in the VM, is the Module contract's).
TEST(Names, TheFakeModuleAppliesTheRule) {
    rofd::FakeModule m;
    for (const Case& c : cases()) {
        int error = 0;
        try {
            m.tenant_create(c.name, 0);
        } catch (const std::system_error& e) {
            error = e.code().value();
        }
        EXPECT_EQ(error, c.valid ? 0 : EINVAL) << shown(c.name);
    }
}

}  // namespace
