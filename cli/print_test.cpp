// SPDX-License-Identifier: MIT
// The print layer: the JSON spelling of every message rofctl prints, and
// the text rendered from the same tree.
#include <gtest/gtest.h>

#include <google/protobuf/util/json_util.h>

#include <sstream>

#include "grpc/health/v1/health.pb.h"
#include "print.h"
#include "rof/v1/audit.pb.h"
#include "rof/v1/control.pb.h"
#include "rof/v1/metrics.pb.h"
#include "rof/v1/policy.pb.h"
#include "rof/v1/program.pb.h"
#include "rof/v1/region.pb.h"
#include "rof/v1/session.pb.h"
#include "rof/v1/tenant.pb.h"

namespace {

namespace pb = google::protobuf;
using rofctl::Json;
using rofctl::to_json;

// protobuf's canonical JSON mapping, with the proto field names.
TEST(ToJson, EnumsAreTheirFullNames) {
    rof::v1::Port port;
    port.set_state(rof::v1::PORT_STATE_ACTIVE_DEFER);
    EXPECT_EQ(to_json(port)["state"], "PORT_STATE_ACTIVE_DEFER");
    rof::v1::Region r;
    r.set_origin(rof::v1::ORIGIN_POLICY);
    EXPECT_EQ(to_json(r)["origin"], "ORIGIN_POLICY");
    rof::v1::AuditRecord a;
    a.set_kind(rof::v1::AUDIT_KIND_SESSION_OPEN);
    EXPECT_EQ(to_json(a)["kind"], "AUDIT_KIND_SESSION_OPEN");
    rof::v1::Session s;
    EXPECT_EQ(to_json(s)["state"], "SESSION_STATE_UNSPECIFIED");
    // The text form strips the prefix.
    EXPECT_EQ(rofctl::render_text(to_json(r), r.GetDescriptor()).find("ORIGIN_"),
              std::string::npos);
    // grpc.health's values carry no prefix: as they are.
    grpc::health::v1::HealthCheckResponse h;
    h.set_status(grpc::health::v1::HealthCheckResponse::NOT_SERVING);
    EXPECT_EQ(to_json(h)["status"], "NOT_SERVING");
    // A number the enum does not know prints as the number.
    port.set_state(static_cast<rof::v1::PortState>(42));
    EXPECT_EQ(to_json(port)["state"], 42);
}

TEST(ToJson, WellKnownTypesTagsAndBytes) {
    rof::v1::GetStatusResponse st;
    st.mutable_daemon()->mutable_uptime()->set_seconds(192);
    auto* dev = st.add_devices();
    dev->set_name("rxe0");
    dev->set_node_guid(0x0250b6fffe123456ULL);
    const Json j = to_json(st);
    EXPECT_EQ(j["daemon"]["uptime"], "192s");
    EXPECT_FALSE(j["daemon"].contains("uptime_seconds"));
    EXPECT_EQ(j["devices"][0]["node_guid"], "166834396808229974");
    EXPECT_EQ(j["policy_generation"], "0");  // proto3 defaults are printed
    EXPECT_FALSE(j.contains("module"));      // an unset message is not

    st.mutable_daemon()->mutable_uptime()->set_nanos(500000000);
    EXPECT_EQ(to_json(st)["daemon"]["uptime"], "192.500s");
    // The text form: the GUID in hex, the uptime human.
    const std::string text = rofctl::render_text(to_json(st), st.GetDescriptor());
    EXPECT_NE(text.find("0x0250b6fffe123456"), std::string::npos) << text;
    EXPECT_NE(text.find("daemon: up 3m12s"), std::string::npos) << text;

    rof::v1::Program p;
    p.set_tag(0xdeadbeefULL);
    p.mutable_loaded_at()->set_seconds(1700000000);
    EXPECT_EQ(to_json(p)["tag"], "3735928559");
    EXPECT_EQ(to_json(p)["loaded_at"], "2023-11-14T22:13:20Z");

    rof::v1::CreateRegionTokenResponse m;
    m.set_token(std::string("\x01\xab\x00\xff", 4));
    EXPECT_EQ(to_json(m)["token"], "AasA/w==");

    // 64-bit counters are exact decimal strings.
    rof::v1::TenantCounters c;
    c.set_bytes(~0ULL);
    EXPECT_EQ(to_json(c)["bytes"], "18446744073709551615");
}

// Whatever rofctl prints, protobuf's own parser reads back as the message.
TEST(ToJson, ProtobufParsesItBack) {
    rof::v1::GetStatusResponse st;
    st.mutable_daemon()->mutable_uptime()->set_seconds(7);
    st.mutable_daemon()->mutable_uptime()->set_nanos(250000000);
    auto* dev = st.add_devices();
    dev->set_node_guid(~0ULL);
    dev->add_ports()->set_state(rof::v1::PORT_STATE_ACTIVE);
    st.set_policy_generation(42);
    rof::v1::GetStatusResponse back;
    ASSERT_TRUE(pb::util::JsonStringToMessage(to_json(st).dump(), &back).ok());
    EXPECT_EQ(back.SerializeAsString(), st.SerializeAsString());

    rof::v1::CreateRegionTokenResponse m;
    m.set_token(std::string("\x00\x01\x02\xfe\xff", 5));
    rof::v1::CreateRegionTokenResponse mback;
    ASSERT_TRUE(pb::util::JsonStringToMessage(to_json(m).dump(), &mback).ok());
    EXPECT_EQ(mback.token(), m.token());
}

TEST(ToJson, Base64BothWays) {
    for (const std::string s : {"", "f", "fo", "foo", "foob", "fooba", "foobar"}) {
        EXPECT_EQ(rofctl::unbase64(rofctl::base64(s)), s);
    }
    EXPECT_EQ(rofctl::base64("foobar"), "Zm9vYmFy");
    EXPECT_EQ(rofctl::base64("fo"), "Zm8=");
    EXPECT_EQ(rofctl::unbase64("-_8="), std::string("\xfb\xff", 2));
    EXPECT_FALSE(rofctl::unbase64("not base64!").has_value());
}

TEST(ToJson, UnsetOptionalAndOneofAreLeftOut) {
    rof::v1::Bind b;
    b.set_region("table");
    EXPECT_FALSE(to_json(b).contains("freelist"));
    b.set_freelist(0);
    EXPECT_EQ(to_json(b)["freelist"], 0);

    rof::v1::ProgramSource src;
    src.set_text("exit 0\n");
    const Json j = to_json(src);
    EXPECT_EQ(j["text"], "exit 0\n");
    EXPECT_FALSE(j.contains("image"));
}

// Sets every field of @m, one element per repeated field, recursing into
// messages (the well-known types too) to @depth.
void fill(pb::Message& m, int depth) {
    const pb::Descriptor& d = *m.GetDescriptor();
    const pb::Reflection& r = *m.GetReflection();
    using FD = pb::FieldDescriptor;
    for (int i = 0; i < d.field_count(); i++) {
        const FD* f = d.field(i);
        if (f->containing_oneof() != nullptr && f->index_in_oneof() > 0) {
            continue;  // the first member of a oneof only
        }
        const bool rep = f->is_repeated();
        switch (f->cpp_type()) {
            case FD::CPPTYPE_INT32:
                rep ? r.AddInt32(&m, f, 1) : r.SetInt32(&m, f, 1);
                break;
            case FD::CPPTYPE_INT64:
                rep ? r.AddInt64(&m, f, 1) : r.SetInt64(&m, f, 1);
                break;
            case FD::CPPTYPE_UINT32:
                rep ? r.AddUInt32(&m, f, 1) : r.SetUInt32(&m, f, 1);
                break;
            case FD::CPPTYPE_UINT64:
                rep ? r.AddUInt64(&m, f, 1) : r.SetUInt64(&m, f, 1);
                break;
            case FD::CPPTYPE_DOUBLE:
                rep ? r.AddDouble(&m, f, 1) : r.SetDouble(&m, f, 1);
                break;
            case FD::CPPTYPE_FLOAT:
                rep ? r.AddFloat(&m, f, 1) : r.SetFloat(&m, f, 1);
                break;
            case FD::CPPTYPE_BOOL:
                rep ? r.AddBool(&m, f, true) : r.SetBool(&m, f, true);
                break;
            case FD::CPPTYPE_ENUM:
                rep ? r.AddEnumValue(&m, f, 1) : r.SetEnumValue(&m, f, 1);
                break;
            case FD::CPPTYPE_STRING:
                rep ? r.AddString(&m, f, "x") : r.SetString(&m, f, "x");
                break;
            case FD::CPPTYPE_MESSAGE:
                if (depth > 0) {
                    fill(rep ? *r.AddMessage(&m, f) : *r.MutableMessage(&m, f), depth - 1);
                }
                break;
        }
    }
}

// Every key of @j is a field of @d, and every field set in @m is a key.
void expect_keys(const Json& j, const pb::Message& m, const std::string& path) {
    const pb::Descriptor& d = *m.GetDescriptor();
    const std::string& full = d.full_name();
    if (full == "google.protobuf.Timestamp") {
        EXPECT_TRUE(j.is_string()) << path;
        return;
    }
    if (full == "google.protobuf.Duration") {
        EXPECT_TRUE(j.is_string()) << path;
        return;
    }
    ASSERT_TRUE(j.is_object()) << path;
    const pb::Reflection& r = *m.GetReflection();
    for (const auto& [key, value] : j.items()) {
        const pb::FieldDescriptor* f = d.FindFieldByName(key);
        ASSERT_NE(f, nullptr) << path << "." << key << " is not a field of " << full;
        if (f->cpp_type() != pb::FieldDescriptor::CPPTYPE_MESSAGE) {
            continue;
        }
        if (f->is_repeated()) {
            ASSERT_TRUE(value.is_array()) << path << "." << key;
            for (int i = 0; i < r.FieldSize(m, f); i++) {
                expect_keys(value[static_cast<std::size_t>(i)], r.GetRepeatedMessage(m, f, i),
                            path + "." + key + "[]");
            }
        } else {
            expect_keys(value, r.GetMessage(m, f), path + "." + key);
        }
    }
    for (int i = 0; i < d.field_count(); i++) {
        const pb::FieldDescriptor* f = d.field(i);
        if (f->is_repeated() || r.HasField(m, f) || !f->has_presence()) {
            EXPECT_TRUE(j.contains(f->name())) << path << ": " << f->name() << " missing";
        }
    }
}

// Every message of every rof.v1 file and grpc.health.v1: whatever rofctl
// prints is one of these or made of them.
std::vector<const pb::Descriptor*> all_messages() {
    // Name one message of each file so that the linker keeps them.
    const pb::FileDescriptor* files[] = {
        rof::v1::AuditRecord::descriptor()->file(),
        rof::v1::GetStatusResponse::descriptor()->file(),
        rof::v1::GetMetricsResponse::descriptor()->file(),
        rof::v1::GetPolicyResponse::descriptor()->file(),
        rof::v1::Program::descriptor()->file(),
        rof::v1::Region::descriptor()->file(),
        rof::v1::Session::descriptor()->file(),
        rof::v1::Tenant::descriptor()->file(),
        rof::v1::Rate::descriptor()->file(),
        grpc::health::v1::HealthCheckResponse::descriptor()->file(),
    };
    std::vector<const pb::Descriptor*> out;
    for (const pb::FileDescriptor* f : files) {
        for (int i = 0; i < f->message_type_count(); i++) {
            out.push_back(f->message_type(i));
        }
    }
    return out;
}

TEST(ToJson, EveryKeyIsAFieldName) {
    const auto messages = all_messages();
    EXPECT_GE(messages.size(), 50U);
    for (const pb::Descriptor* d : messages) {
        // Through the generated class, as rofctl has it.
        const pb::Message* proto = pb::MessageFactory::generated_factory()->GetPrototype(d);
        ASSERT_NE(proto, nullptr) << d->full_name();
        std::unique_ptr<pb::Message> m(proto->New());
        expect_keys(to_json(*m), *m, d->full_name() + "(empty)");
        fill(*m, 3);
        expect_keys(to_json(*m), *m, d->full_name());
    }
}

// The text form's own rules; cli/testdata/ has every command's whole output.
TEST(RenderText, ListsAreTablesOfTheColumnsThatMatter) {
    rof::v1::ListTenantsResponse resp;
    auto* t = resp.add_tenants();
    t->set_name("kv");
    t->set_id(1);
    t->mutable_quota()->set_sessions(16);
    t->mutable_usage()->set_sessions(3);
    t->add_granted_regions("a/b");
    t->add_granted_regions("c/d");
    resp.add_tenants()->set_name("analytics");
    const Json j = to_json(resp);
    const std::string text = rofctl::render_text(j, resp.GetDescriptor());
    std::istringstream lines(text);
    std::string header, row1, row2;
    std::getline(lines, header);
    std::getline(lines, row1);
    std::getline(lines, row2);
    EXPECT_TRUE(header.starts_with("NAME       ID  STATE        MEMORY   REGIONS  SESSIONS"))
        << text;
    EXPECT_TRUE(row1.starts_with("kv         1   UNSPECIFIED  0 B/0 B  0/0      3/16")) << text;
    EXPECT_TRUE(row2.starts_with("analytics  0   UNSPECIFIED")) << text;
    EXPECT_EQ(text.find("a/b"), std::string::npos) << text;  // -o wide only
    for (const std::string& line : {header, row1, row2}) {
        EXPECT_LE(line.size(), 100U) << line;
    }
    // -o wide: every column; one empty in every row (REMOVAL_DEADLINE) is
    // left out, an empty cell of one kept is "-".
    const std::string wide = rofctl::render_text(j, resp.GetDescriptor(), true);
    EXPECT_NE(wide.find("GRANTED_REGIONS"), std::string::npos) << wide;
    EXPECT_NE(wide.find("a/b, c/d"), std::string::npos) << wide;
    EXPECT_EQ(wide.find("REMOVAL_DEADLINE"), std::string::npos) << wide;
    EXPECT_NE(wide.find("unlimited"), std::string::npos) << wide;  // the rates

    EXPECT_EQ(rofctl::render_text(to_json(rof::v1::ListRegionsResponse{}),
                                  rof::v1::ListRegionsResponse::descriptor()),
              "no regions\n");
    // A tree without a message: every key a column, values as they are.
    const Json samples = {{"samples", {{{"name", "up"}, {"labels", ""}, {"value", "1"}}}}};
    EXPECT_EQ(rofctl::render_text(samples), "NAME  VALUE\nup    1\n");
}

TEST(RenderText, SingleObjectsAreKeyValueBlocks) {
    rof::v1::GetStatusResponse st;
    st.mutable_module()->set_version("0.1.0");
    st.mutable_module()->set_abi_minor(3);
    st.mutable_daemon()->mutable_uptime()->set_seconds(192);
    auto* dev = st.add_devices();
    dev->set_name("rxe0");
    auto* port = dev->add_ports();
    port->set_port_num(1);
    port->set_state(rof::v1::PORT_STATE_ACTIVE);
    port->set_active_mtu(1024);
    st.add_drift("tenant \"kv\": region \"table\" recreated");
    const std::string text = rofctl::render_text(to_json(st), st.GetDescriptor());
    EXPECT_TRUE(text.starts_with("module: 0.1.0 (ABI 0.3)\ndaemon: up 3m12s\n")) << text;
    EXPECT_NE(text.find("devices:\n  NAME  INDEX"), std::string::npos) << text;
    EXPECT_NE(text.find("rxe0"), std::string::npos) << text;
    EXPECT_NE(text.find("port 1 ACTIVE mtu 1024"), std::string::npos) << text;
    EXPECT_NE(text.find("drift:\n  tenant \"kv\": region \"table\" recreated\n"), std::string::npos)
        << text;

    rof::v1::Program p;
    p.set_source("a\nb\n");
    const std::string ptext = rofctl::render_text(to_json(p), p.GetDescriptor());
    EXPECT_NE(ptext.find("source:\n  a\n  b\n"), std::string::npos) << ptext;
    // Empty strings and unset timestamps are left out.
    EXPECT_EQ(ptext.find("disassembly"), std::string::npos) << ptext;
    EXPECT_EQ(ptext.find("loaded_at"), std::string::npos) << ptext;
    EXPECT_TRUE(ptext.starts_with("tag: 0x0000000000000000\n")) << ptext;

    rof::v1::Tenant t;
    t.mutable_quota()->set_region_bytes(96ULL << 20);
    t.mutable_quota()->set_regions(8);
    t.mutable_quota()->set_sessions(32);
    t.mutable_quota()->set_programs(16);
    t.mutable_quota()->set_credits(64);
    EXPECT_NE(rofctl::render_text(to_json(t), t.GetDescriptor())
                  .find("\nquota: memory 96 MiB, regions 8, sessions 32, programs 16, "
                        "credits 64\n"),
              std::string::npos);
}

TEST(RenderText, HumanUnits) {
    EXPECT_EQ(rofctl::human_size(0), "0 B");
    EXPECT_EQ(rofctl::human_size(1023), "1023 B");
    EXPECT_EQ(rofctl::human_size(1024), "1 KiB");
    EXPECT_EQ(rofctl::human_size(1536), "1.5 KiB");
    EXPECT_EQ(rofctl::human_size(64ULL << 20), "64 MiB");
    EXPECT_EQ(rofctl::human_size(21037056), "20.1 MiB");
    EXPECT_EQ(rofctl::human_size(5ULL << 30), "5 GiB");
    EXPECT_EQ(rofctl::human_size(~0ULL), "16.0 EiB");
    EXPECT_EQ(rofctl::human_duration_ns(0), "0ns");
    EXPECT_EQ(rofctl::human_duration_ns(850), "850ns");
    EXPECT_EQ(rofctl::human_duration_ns(944820), "944.8us");
    EXPECT_EQ(rofctl::human_duration_ns(1e6), "1ms");
    EXPECT_EQ(rofctl::human_duration_ns(1.5e9), "1.5s");
    EXPECT_EQ(rofctl::human_duration_ns(300e9), "5m");
    EXPECT_EQ(rofctl::human_duration_ns(192.5e9), "3m12s");
    EXPECT_EQ(rofctl::human_duration_ns(93784e9), "1d2h3m4s");

    rof::v1::Region r;
    r.set_size(16ULL << 20);
    r.set_access(rof::v1::ACCESS_READ | rof::v1::ACCESS_ATOMIC);
    const std::string text = rofctl::render_text(to_json(r), r.GetDescriptor());
    EXPECT_NE(text.find("size: 16 MiB\naccess: ra\n"), std::string::npos) << text;
    rof::v1::TenantQuota q;
    q.set_region_bytes(~0ULL);
    q.set_regions(~0U);
    const std::string qtext = rofctl::render_text(to_json(q), q.GetDescriptor());
    EXPECT_TRUE(qtext.starts_with("region_bytes: unlimited\nregions: unlimited\n")) << qtext;
}

// Every message, column and field the text form's tables name exists.
TEST(RenderText, TheTablesNameRealFields) {
    all_messages();  // the generated pool has every file
    EXPECT_EQ(rofctl::text_spec_errors(), std::vector<std::string>{});
}

TEST(Printer, JsonCompactPrettyAndErrors) {
    std::ostringstream out, err;
    rof::v1::ReloadPolicyResponse r;
    r.set_generation(3);
    r.add_notes("n");
    rofctl::Printer(out, err, true, false).print(r);
    EXPECT_EQ(out.str(), "{\"generation\":\"3\",\"notes\":[\"n\"]}\n");

    out.str("");
    rofctl::Printer(out, err, false, true).print(r);
    EXPECT_EQ(out.str(), "{\n  \"generation\": \"3\",\n  \"notes\": [\n    \"n\"\n  ]\n}\n");

    out.str("");
    rofctl::Printer(out, err, false, false).print(r);
    EXPECT_EQ(out.str(), "generation: 3\nnotes:\n  n\n");

    out.str("");
    rofctl::Printer(out, err, true, false).error("region \"x\": not found", "NOT_FOUND");
    EXPECT_EQ(out.str(), "{\"error\":\"region \\\"x\\\": not found\",\"code\":\"NOT_FOUND\"}\n");
    EXPECT_EQ(err.str(), "");
    rofctl::Printer(out, err, false, false).error("no rofd", "UNAVAILABLE");
    EXPECT_EQ(err.str(), "rofctl: no rofd\n");
}

TEST(Printer, RecordsAreOneLineEachEvenPretty) {
    std::ostringstream out, err;
    rofctl::Printer p(out, err, true, true);
    rof::v1::AuditRecord a;
    a.set_seq(1);
    p.record(to_json(a));
    a.set_seq(2);
    p.record(to_json(a));
    std::istringstream lines(out.str());
    std::string line;
    int n = 0;
    while (std::getline(lines, line)) {
        const Json j = Json::parse(line);
        EXPECT_EQ(j["seq"], std::to_string(++n));
    }
    EXPECT_EQ(n, 2);
}

// A name that is not UTF-8 (the kernel's): printed, not thrown, and the
// output still JSON.  protobuf's printer drops (3.21) or replaces the
// stray byte.
TEST(Printer, InvalidUtf8IsPrintedNotThrown) {
    std::ostringstream out, err;
    rof::v1::Device d;
    d.set_name("bad\xff");
    ASSERT_NO_THROW(rofctl::Printer(out, err, true, false).print(d));
    const Json j = Json::parse(out.str());
    EXPECT_TRUE(j["name"].get<std::string>().starts_with("bad")) << out.str();
}

}  // namespace
