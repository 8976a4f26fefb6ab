// SPDX-License-Identifier: MIT
// rofd's optional TCP listener ([listen.tcp]): TLS with client
// certificates only, the certificate subject mapped by policy to a tenant
// (identity.subjects) or the admin role (admin.subjects).  The
// certificates are made with the openssl CLI in a TempDir; rofd listens on
// 127.0.0.1 port 0 and the test asks the Server which port it got.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

#include "service_harness.h"

namespace {

using rofd::test::rpc;
using rofd::test::ServiceHarness;
using rofd::test::TempDir;
namespace v1 = rof::v1;

// The subjects as the certificates are made (openssl -subj) and as gRPC
// 1.51 renders them in the "x509_subject" auth property, which rofd
// compares with the policy: RFC 2253, most specific RDN first.
const char* const kv_subj = "/O=rof/OU=tenants/CN=kv";
const char* const kv_subject = "CN=kv,OU=tenants,O=rof";
const char* const admin_subj = "/O=rof/CN=rof-admin";
const char* const admin_subject = "CN=rof-admin,O=rof";
const char* const stranger_subj = "/O=rof/CN=stranger";
const char* const stranger_subject = "CN=stranger,O=rof";

std::string slurp(const std::string& path) {
    std::ifstream in(path);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

// Certificates and keys (PEM files in a TempDir): a CA, rofd's server
// certificate for 127.0.0.1 and localhost, client certificates of that CA
// for kv, the admin and a stranger (in no policy), and a client
// certificate claiming kv's subject from another CA.
class Certs {
  public:
    Certs() {
        ca("ca");
        ca("other-ca");
        leaf("ca", "server", "/CN=localhost",
             "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n");
        const char* const client = "extendedKeyUsage=clientAuth\n";
        leaf("ca", "kv", kv_subj, client);
        leaf("ca", "admin", admin_subj, client);
        leaf("ca", "stranger", stranger_subj, client);
        leaf("other-ca", "rogue-kv", kv_subj, client);
    }

    std::string pem(const std::string& name) const { return dir_.file(name + ".pem"); }
    std::string key(const std::string& name) const { return dir_.file(name + ".key"); }

  private:
    // Runs @cmd with its output to a log; throws with the log on failure.
    void run(const std::string& cmd) const {
        const std::string log = dir_.file("openssl.log");
        const int rc = std::system((cmd + " >'" + log + "' 2>&1").c_str());
        if (rc != 0) {
            throw std::runtime_error(cmd + ": exit status " + std::to_string(rc) + "\n" +
                                     slurp(log));
        }
    }
    std::string q(const std::string& s) const { return "'" + s + "'"; }

    void ca(const std::string& name) const {
        run("openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2"
            " -subj " +
            q("/O=rof/CN=" + name) + " -keyout " + q(key(name)) + " -out " + q(pem(name)));
    }

    void leaf(const std::string& ca, const std::string& name, const std::string& subj,
              const std::string& ext) {
        const std::string csr = dir_.file(name + ".csr");
        const std::string extfile = dir_.file(name + ".ext");
        std::ofstream(extfile) << ext;
        run("openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj " +
            q(subj) + " -keyout " + q(key(name)) + " -out " + q(csr));
        run("openssl x509 -req -days 2 -set_serial " + std::to_string(++serial_) + " -in " +
            q(csr) + " -CA " + q(pem(ca)) + " -CAkey " + q(key(ca)) + " -extfile " + q(extfile) +
            " -out " + q(pem(name)));
    }

    TempDir dir_;
    int serial_ = 1;
};

std::string daemon_toml(const Certs& c, const std::string& more = "") {
    return std::string("[admin]\nsubjects = [\"") + admin_subject +
           "\"]\n\n"
           "[listen.tcp]\nenabled = true\naddress = \"127.0.0.1:0\"\n"
           "cert = \"" +
           c.pem("server") + "\"\nkey = \"" + c.key("server") + "\"\nclient_ca = \"" + c.pem("ca") +
           "\"\n\n[sessions]\naddress = \"10.0.0.1\"\n" + more;
}

ServiceHarness::Files tenants() {
    return {{"kv", std::string("name = \"kv\"\ncontrol_rate = 0\n\n[identity]\nsubjects = [\"") +
                       kv_subject +
                       "\"]\n\n[[regions]]\nname = \"table\"\nsize = \"1MiB\"\n"
                       "access = [\"read\", \"write\"]\n"},
            {"analytics",
             "name = \"analytics\"\ncontrol_rate = 0\n\n[identity]\nuids = [1002]\n\n"
             "[[regions]]\nname = \"scratch\"\nsize = \"1MiB\"\naccess = [\"read\"]\n"}};
}

std::string describe(const grpc::Status& st) {
    return std::to_string(static_cast<int>(st.error_code())) + " " + st.error_message();
}

class Tls : public ::testing::Test {
  protected:
    explicit Tls(const std::string& more = "") : h_(daemon_toml(certs_, more), tenants()) {}

    // A client over TLS to rofd's TCP port that trusts @ca for the server
    // and presents @client's certificate (none when empty).
    rofd::test::Client client(const std::string& client, const std::string& ca = "ca") {
        grpc::SslCredentialsOptions o;
        o.pem_root_certs = slurp(certs_.pem(ca));
        if (!client.empty()) {
            o.pem_private_key = slurp(certs_.key(client));
            o.pem_cert_chain = slurp(certs_.pem(client));
        }
        const std::string target = "127.0.0.1:" + std::to_string(h_.server().tcp_port());
        return rofd::test::Client(grpc::CreateChannel(target, grpc::SslCredentials(o)));
    }

    static grpc::Status status(rofd::test::Client& c, v1::GetStatusResponse* resp) {
        return rpc(*c.control, &v1::Control::Stub::GetStatus, {}, resp);
    }

    static std::vector<std::string> regions(rofd::test::Client& c) {
        v1::ListRegionsResponse resp;
        const auto st = rpc(*c.regions, &v1::Regions::Stub::ListRegions, {}, &resp);
        EXPECT_TRUE(st.ok()) << describe(st);
        std::vector<std::string> out;
        for (const auto& r : resp.regions()) {
            out.push_back(r.tenant() + "/" + r.name());
        }
        std::sort(out.begin(), out.end());
        return out;
    }

    Certs certs_;  // before h_: the policy names its files
    ServiceHarness h_;
};

TEST_F(Tls, ListensOnThePortPicked) {
    EXPECT_GT(h_.server().tcp_port(), 0);
}

TEST_F(Tls, TenantCertificateActsAsTheTenant) {
    auto c = client("kv");
    v1::GetStatusResponse resp;
    const auto st = status(c, &resp);
    ASSERT_TRUE(st.ok()) << describe(st);
    EXPECT_EQ(resp.caller(), "tenant kv");
    EXPECT_EQ(regions(c), std::vector<std::string>{"kv/table"});
}

TEST_F(Tls, AdminCertificateIsAdmin) {
    auto c = client("admin");
    v1::GetStatusResponse resp;
    const auto st = status(c, &resp);
    ASSERT_TRUE(st.ok()) << describe(st);
    EXPECT_EQ(resp.caller(), "admin");
    EXPECT_EQ(regions(c), (std::vector<std::string>{"analytics/scratch", "kv/table"}));
}

TEST_F(Tls, NoClientCertificateIsRefused) {
    auto c = client("");
    v1::GetStatusResponse resp;
    const auto st = status(c, &resp);
    EXPECT_FALSE(st.ok());
    EXPECT_NE(st.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED) << describe(st);
    EXPECT_EQ(resp.caller(), "");
}

TEST_F(Tls, CertificateOfAnotherCaIsRefused) {
    // The same subject as kv's certificate, signed by a CA rofd does not trust.
    auto c = client("rogue-kv");
    v1::GetStatusResponse resp;
    const auto st = status(c, &resp);
    EXPECT_FALSE(st.ok());
    EXPECT_NE(st.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED) << describe(st);
    EXPECT_EQ(resp.caller(), "");
}

TEST_F(Tls, SubjectInNoPolicyIsPermissionDenied) {
    auto c = client("stranger");
    v1::GetStatusResponse resp;
    const auto st = status(c, &resp);
    EXPECT_EQ(st.error_code(), grpc::StatusCode::PERMISSION_DENIED) << describe(st);
    // rofd names the subject as gRPC rendered it: the form policy uses.
    EXPECT_NE(st.error_message().find(std::string("\"") + stranger_subject + "\""),
              std::string::npos)
        << st.error_message();
}

// [limits] handshake_timeout_ms: a TCP peer that connects and then sends
// nothing (no TLS ClientHello) is closed by rofd.
class TlsHandshake : public Tls {
  protected:
    TlsHandshake() : Tls("\n[limits]\nhandshake_timeout_ms = 1000\n") {}

    // A raw TCP connection to rofd's TLS port.
    rofd::UniqueFd connect_raw() {
        rofd::UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
        if (!fd) {
            throw std::system_error(errno, std::generic_category(), "socket");
        }
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_port = htons(static_cast<std::uint16_t>(h_.server().tcp_port()));
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&a), sizeof(a)) < 0) {
            throw std::system_error(errno, std::generic_category(), "connect");
        }
        return fd;
    }
};

TEST_F(TlsHandshake, SilentPeerIsClosed) {
    const rofd::UniqueFd fd = connect_raw();
    EXPECT_TRUE(rofd::test::wait_closed(fd.get()));
}

TEST_F(TlsHandshake, ClientThatHandshakesIsServed) {
    auto c = client("kv");
    v1::GetStatusResponse resp;
    const auto st = status(c, &resp);
    ASSERT_TRUE(st.ok()) << describe(st);
    EXPECT_EQ(resp.caller(), "tenant kv");
}

}  // namespace
