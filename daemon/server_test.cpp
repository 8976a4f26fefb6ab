// SPDX-License-Identifier: MIT
// rofd's gRPC server over its own accept loop: health, reflection, peer
// credentials and rof.v1.Control's errors, through real unix sockets.
#include <fcntl.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <future>
#include <sstream>

#include "log.h"
#include "rof/client.h"
#include "test_util.h"

namespace {

using rofd::test::RunningServer;
using rofd::test::TempDir;

std::shared_ptr<grpc::Channel> channel_to(const std::string& socket) {
    return grpc::CreateChannel("unix:" + socket, grpc::InsecureChannelCredentials());
}

grpc::ByteBuffer to_buffer(const std::string& bytes) {
    grpc::Slice slice(bytes);
    return {&slice, 1};
}

std::string from_buffer(const grpc::ByteBuffer& buf) {
    std::vector<grpc::Slice> slices;
    std::string s;
    if (!buf.Dump(&slices).ok()) {
        return s;
    }
    for (const auto& slice : slices) {
        s.append(reinterpret_cast<const char*>(slice.begin()), slice.size());
    }
    return s;
}

// grpc.health.v1.Health/Check, encoded by hand: Debian ships no health.proto.
// Returns the ServingStatus number (1 SERVING, 2 NOT_SERVING).
int health_check(const std::string& socket, const std::string& service) {
    grpc::GenericStub stub(channel_to(socket));
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    std::string req;
    if (!service.empty()) {
        req = std::string("\x0a", 1) + static_cast<char>(service.size()) + service;
    }
    const grpc::ByteBuffer request = to_buffer(req);
    grpc::ByteBuffer response;
    std::promise<grpc::Status> done;

    stub.UnaryCall(&ctx, "/grpc.health.v1.Health/Check", grpc::StubOptions(), &request, &response,
                   [&done](grpc::Status st) { done.set_value(st); });
    const grpc::Status st = done.get_future().get();
    EXPECT_TRUE(st.ok()) << st.error_message();
    const std::string r = from_buffer(response);
    if (r.size() != 2 || r[0] != 0x08) {
        return -1;
    }
    return r[1];
}

// grpc.reflection.v1alpha list_services; returns the raw response bytes,
// which hold the service names as strings.
std::string reflection_list_services(const std::string& socket) {
    grpc::GenericStub stub(channel_to(socket));
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    grpc::CompletionQueue cq;
    auto call = stub.PrepareCall(
        &ctx, "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo", &cq);
    auto step = [&cq](std::intptr_t want) {
        void* tag = nullptr;
        bool ok = false;
        EXPECT_TRUE(cq.Next(&tag, &ok));
        EXPECT_EQ(reinterpret_cast<std::intptr_t>(tag), want);
        return ok;
    };

    call->StartCall(reinterpret_cast<void*>(1));
    EXPECT_TRUE(step(1));
    // ServerReflectionRequest{list_services: ""}: field 7, length 0.
    call->Write(to_buffer(std::string("\x3a\x00", 2)), reinterpret_cast<void*>(2));
    EXPECT_TRUE(step(2));
    call->WritesDone(reinterpret_cast<void*>(3));
    EXPECT_TRUE(step(3));
    grpc::ByteBuffer response;
    call->Read(&response, reinterpret_cast<void*>(4));
    EXPECT_TRUE(step(4));
    grpc::Status st;
    call->Finish(&st, reinterpret_cast<void*>(5));
    step(5);
    EXPECT_TRUE(st.ok()) << st.error_message();
    cq.Shutdown();
    void* tag;
    bool ok;
    while (cq.Next(&tag, &ok)) {
    }
    return from_buffer(response);
}

// Collects what rofd logs to stderr meanwhile.
class StderrCapture {
  public:
    explicit StderrCapture(const std::string& path) : path_(path) {
        std::fflush(stderr);
        saved_ = ::dup(STDERR_FILENO);
        const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        ::dup2(fd, STDERR_FILENO);
        ::close(fd);
    }
    ~StderrCapture() { restore(); }
    std::string text() {
        restore();
        std::ifstream in(path_);
        std::stringstream ss;
        ss << in.rdbuf();
        return ss.str();
    }

  private:
    void restore() {
        if (saved_ < 0) {
            return;
        }
        ::dup2(saved_, STDERR_FILENO);
        ::close(saved_);
        saved_ = -1;
    }

    std::string path_;
    int saved_ = -1;
};

TEST(Server, HealthIsServingOnlyOnceMarkedReady) {
    TempDir dir;
    RunningServer rs(dir, dir.regular_file("rof"));

    EXPECT_EQ(health_check(rs.socket(), ""), 2);
    EXPECT_EQ(health_check(rs.socket(), "rof.v1.Control"), 2);
    rs.server().set_serving(true);
    EXPECT_EQ(health_check(rs.socket(), ""), 1);
    EXPECT_EQ(health_check(rs.socket(), "rof.v1.Control"), 1);
}

TEST(Server, ReflectionListsTheServices) {
    TempDir dir;
    RunningServer rs(dir, dir.regular_file("rof"));

    const std::string services = reflection_list_services(rs.socket());
    EXPECT_NE(services.find("rof.v1.Control"), std::string::npos);
    EXPECT_NE(services.find("grpc.health.v1.Health"), std::string::npos);
}

// What librof (and so rofctl) reports when rofd is up but /dev/rof fails.
TEST(Server, GetStatusCarriesTheIoctlError) {
    TempDir dir;
    const std::string dev = dir.regular_file("rof");
    RunningServer rs(dir, dev);
    rof::Client client(rs.socket());

    try {
        client.status();
        FAIL() << "GetStatus succeeded on a regular file";
    } catch (const rof::Error& e) {
        EXPECT_EQ(e.kind(), rof::ErrorKind::daemon);
        EXPECT_EQ(std::string(e.what()),
                  "GetStatus: " + dev + ": ROF_IOC_VERSION: Inappropriate ioctl for device");
    }
}

TEST(Server, HandlersSeeThePeersCredentials) {
    TempDir dir;
    RunningServer rs(dir, dir.regular_file("rof"));
    rof::Client client(rs.socket());

    StderrCapture cap(dir.file("stderr"));
    rofd::log::set_verbose(true);
    EXPECT_THROW(client.status(), rof::Error);
    rofd::log::set_verbose(false);

    const std::string log = cap.text();
    const std::string who = "pid " + std::to_string(::getpid()) + " uid " +
                            std::to_string(::getuid()) + " gid " + std::to_string(::getgid());
    EXPECT_NE(log.find("GetStatus from " + who), std::string::npos) << log;
}

}  // namespace
