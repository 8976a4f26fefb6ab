// SPDX-License-Identifier: MIT
// The keepalive of rof::Session (session_keepalive.h).
#include "session_keepalive.h"

#include <utility>

namespace rof::detail {

void Keepalive::start(std::chrono::milliseconds interval, std::mutex& mu,
                      std::function<void()> tick) {
    mu_ = &mu;
    interval_ = interval;
    thread_ = std::thread([this, tick = std::move(tick)] {
        std::unique_lock lk(*mu_);
        while (!stop_) {
            cv_.wait_for(lk, interval_ / 2);
            if (stop_) {
                break;
            }
            tick();
        }
    });
}

void Keepalive::stop() {
    if (!mu_) {
        return;
    }
    {
        std::lock_guard lk(*mu_);
        stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) {
        thread_.join();
    }
}

}  // namespace rof::detail
