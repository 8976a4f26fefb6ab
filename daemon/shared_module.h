// SPDX-License-Identifier: MIT
// For rofd's unit tests: a Module that forwards to a FakeModule the test
// keeps.  A Manager owns its Module; a test that restarts rofd keeps the
// module across Managers (as a rofd restart keeps rof.ko), so each Manager
// gets one of these.  crash_after() makes rofd "die" right after a module
// call returned: the call's effect is in the module, and rofd's own
// bookkeeping after it never runs.  fail_on() makes a call fail as the
// module would refuse it (a LIST that cannot be served, one tenant that
// cannot be created).
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "fake_module.h"

namespace rofd::test {

// What a "crashed" call throws: no handler catches it as a module error, so
// the call ends as a crash would leave it (rows in "intent").
class SimulatedCrash : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

class SharedModule final : public Module {
  public:
    explicit SharedModule(std::shared_ptr<FakeModule> m) : m_(std::move(m)) {}

    // The next successful call of @method (its name: "region_create",
    // "prog_load", ...) throws SimulatedCrash once it has returned.
    void crash_after(std::string method) {
        std::lock_guard lk(mu_);
        crash_after_ = std::move(method);
    }

    // Every call of @method ("list_regions", "tenant_create"; for one
    // tenant's creation "tenant_create:NAME", for one tenant's destruction
    // "tenant_destroy:ID") throws KmodError(@err) before it reaches the
    // module, until fail_on(@method, 0).  Lists, tenant creation and
    // destruction and quotas only.
    void fail_on(const std::string& method, int err) {
        std::lock_guard lk(mu_);
        if (err == 0) {
            fail_on_.erase(method);
        } else {
            fail_on_[method] = err;
        }
    }

    // How many times @method was called ("list_regions"; lists, tenant
    // creation and quotas only).
    std::size_t calls(const std::string& method) {
        std::lock_guard lk(mu_);
        const auto it = calls_.find(method);
        return it != calls_.end() ? it->second : 0;
    }

    ModuleVersion version() override { return m_->version(); }
    std::uint32_t abi_minor() override { return m_->abi_minor(); }
    std::vector<DeviceInfo> list_devices() override { return m_->list_devices(); }
    std::uint32_t tenant_create(const std::string& name, std::uint32_t id) override {
        refuse("tenant_create");
        refuse("tenant_create:" + name);
        return done("tenant_create", m_->tenant_create(name, id));
    }
    void tenant_destroy(std::uint32_t id, bool force) override {
        refuse("tenant_destroy:" + std::to_string(id));
        m_->tenant_destroy(id, force);
        done("tenant_destroy");
    }
    void tenant_set_quota(std::uint32_t id, const rof_tenant_quota& q) override {
        refuse("tenant_set_quota");
        m_->tenant_set_quota(id, q);
    }
    void tenant_set_rate(std::uint32_t id, const rof_rate& r) override {
        m_->tenant_set_rate(id, r);
    }
    std::vector<rof_tenant_info> list_tenants() override {
        refuse("list_tenants");
        return m_->list_tenants();
    }
    std::optional<rof_tenant_info> get_tenant(std::uint32_t id) override {
        refuse("get_tenant");
        return m_->get_tenant(id);
    }
    std::uint32_t region_create(std::uint32_t tenant, const std::string& name, std::uint64_t size,
                                std::uint32_t access,
                                std::span<rof_freelist_spec> freelists = {}) override {
        return done("region_create", m_->region_create(tenant, name, size, access, freelists));
    }
    void region_destroy(std::uint32_t id, bool force) override {
        m_->region_destroy(id, force);
        done("region_destroy");
    }
    std::vector<rof_region_info> list_regions() override {
        refuse("list_regions");
        return m_->list_regions();
    }
    std::optional<rof_region_info> get_region(std::uint32_t id) override {
        return m_->get_region(id);
    }
    std::optional<rof_region_info> find_region(std::uint32_t tenant,
                                               const std::string& name) override {
        return m_->find_region(tenant, name);
    }
    RegionToken region_token(std::uint32_t region, std::uint32_t access,
                             std::uint32_t ttl_ms) override {
        return m_->region_token(region, access, ttl_ms);
    }
    std::uint32_t freelist_create(std::uint32_t region, std::uint32_t block_size,
                                  std::uint64_t offset, std::uint32_t count) override {
        return done("freelist_create", m_->freelist_create(region, block_size, offset, count));
    }
    void freelist_destroy(std::uint32_t id, bool force) override {
        m_->freelist_destroy(id, force);
        done("freelist_destroy");
    }
    std::vector<rof_freelist_info> list_freelists() override {
        refuse("list_freelists");
        return m_->list_freelists();
    }
    std::uint64_t prog_load(rof_prog_load& req, std::span<const std::uint8_t> image) override {
        return done("prog_load", m_->prog_load(req, image));
    }
    std::uint64_t prog_replace(rof_prog_load& req, std::span<const std::uint8_t> image,
                               std::uint64_t old_tag) override {
        return done("prog_replace", m_->prog_replace(req, image, old_tag));
    }
    void prog_unload(std::uint32_t tenant, std::uint64_t tag) override {
        m_->prog_unload(tenant, tag);
        done("prog_unload");
    }
    std::vector<rof_prog_info> list_progs() override {
        refuse("list_progs");
        return m_->list_progs();
    }
    std::optional<rof_prog_info> get_prog(std::uint32_t tenant, std::uint64_t tag) override {
        return m_->get_prog(tenant, tag);
    }
    void set_ticket_key(const TicketKey& key) override { m_->set_ticket_key(key); }
    void session_prepare(rof_session_prepare& req) override {
        m_->session_prepare(req);
        done("session_prepare");
    }
    std::vector<rof_session_info> list_sessions() override {
        refuse("list_sessions");
        return m_->list_sessions();
    }
    std::optional<rof_session_info> get_session(std::uint32_t id) override {
        return m_->get_session(id);
    }
    void session_close(std::uint32_t id) override {
        m_->session_close(id);
        done("session_close");
    }
    UniqueFd audit_open(bool nonblock) override { return m_->audit_open(nonblock); }
    rof_audit_stats audit_stats() override { return m_->audit_stats(); }

  private:
    void refuse(const std::string& method) {
        int err = 0;
        {
            std::lock_guard lk(mu_);
            calls_[method]++;
            if (const auto it = fail_on_.find(method); it != fail_on_.end()) {
                err = it->second;
            }
        }
        if (err != 0) {
            throw KmodError(err, "/dev/rof: " + method);
        }
    }
    void done(const char* method) {
        std::lock_guard lk(mu_);
        if (crash_after_ == method) {
            crash_after_.clear();
            throw SimulatedCrash(std::string("rofd crashed after ") + method);
        }
    }
    template <typename T>
    T done(const char* method, T result) {
        done(method);
        return result;
    }

    std::shared_ptr<FakeModule> m_;
    std::mutex mu_;
    std::string crash_after_;
    std::map<std::string, int> fail_on_;
    std::map<std::string, std::size_t> calls_;
};

}  // namespace rofd::test
