// Shared helpers of the program tests that run against rof.ko (kprog-check,
// rof-difftest): /dev/rof ioctls, region mappings and a minimal session
// client over librdmacm.  Everything is RAII; failures throw with a message
// that names the object.
#pragma once

#include <rdma/rdma_cma.h>

#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "kmod.h"
#include "uapi/rof.h"

namespace kprog {

struct Error : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// An open /dev/rof: rofd's Kmod (daemon/kmod.h) for what rofd asks too, its
// errors rofd::KmodError; and raw ioctls for what the tests send on purpose
// (ioc() returns 0 or the errno; must() throws).
class Dev {
  public:
    Dev();
    rofd::Kmod& kmod() { return kmod_; }
    int fd() const { return kmod_.fd(); }
    int ioc(unsigned long cmd, void* arg) const;
    void must(unsigned long cmd, void* arg, const std::string& what) const;

    uint32_t tenant_create(const std::string& name) { return kmod_.tenant_create(name, 0); }
    void tenant_destroy(uint32_t id) noexcept;  // forced; a cleanup: errors ignored
    uint32_t region_create(uint32_t tenant, const std::string& name, uint64_t size,
                           uint32_t access) {
        return kmod_.region_create(tenant, name, size, access);
    }
    uint32_t freelist_create(uint32_t region, uint32_t block_size, uint64_t offset,
                             uint32_t count) {
        return kmod_.freelist_create(region, block_size, offset, count);
    }
    void set_random_key();
    rof_ticket prepare(uint32_t tenant);  // a session without grants, 10 min

  private:
    rofd::Kmod kmod_;
};

// A region mapped read/write through a one-time token (REGION_TOKEN, then
// REGION_MAP on a fresh fd, then mmap).
class Mapping {
  public:
    Mapping(Dev& dev, uint32_t region);
    ~Mapping();
    Mapping(const Mapping&) = delete;
    Mapping& operator=(const Mapping&) = delete;
    uint8_t* data() const { return static_cast<uint8_t*>(addr_); }
    uint64_t size() const { return size_; }

  private:
    int fd_ = -1;
    void* addr_ = nullptr;
    uint64_t size_ = 0;
};

// Fills a rof_prog_load; binds are (region, freelist) per slot.
rof_prog_load load_req(uint32_t tenant, std::span<const uint8_t> image,
                       const std::vector<rof_prog_bind>& binds, uint64_t budget,
                       uint64_t byte_budget, const std::string& name);

struct Response {
    uint32_t status = 0;
    std::vector<uint8_t> payload;
};

// One session: connect with a ticket, wait for the welcome message, then
// one request at a time.
class Client {
  public:
    Client(const std::string& addr, const rof_ticket& ticket);
    ~Client();
    Client(const Client&) = delete;
    Client& operator=(const Client&) = delete;
    Response request(uint16_t opcode, std::span<const uint8_t> payload);
    Response invoke(uint64_t tag, std::span<const uint8_t> args);

  private:
    static constexpr int kRx = 8;
    void post_rx(int slot);
    void teardown();
    ibv_wc wait_wc(bool after_send);
    rdma_cm_event* cm_wait(rdma_cm_event_type want);

    rdma_event_channel* ec_ = nullptr;
    rdma_cm_id* id_ = nullptr;
    ibv_pd* pd_ = nullptr;
    ibv_cq* cq_ = nullptr;
    ibv_mr* mr_ = nullptr;
    std::vector<uint8_t> buf_;  // kRx receive slots, then one send slot
    bool qp_ = false;
    bool connected_ = false;
    uint64_t next_id_ = 1;
};

// Decoded INVOKE response payload (struct rof_invoke_result + bytes).
struct InvokeResult {
    uint32_t status = 0;  // enum rof_status
    uint32_t prog_status = 0, exec_status = 0, fault_pc = 0, insns = 0;
    std::vector<uint8_t> resp;
};
InvokeResult decode_invoke(const Response& r);

std::string errno_name(int e);
std::string server_addr();

}  // namespace kprog
