// SPDX-License-Identifier: MIT
// The keepalive of rof::Session: a thread that wakes every half interval,
// with the session's lock held, and asks the session to send a NOP when
// no request went out for an interval (a third of the idle timeout).  It
// keeps when the last request went out and whether its NOP is in flight;
// the session decides whether one can go (credits, slots, send queue).
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

namespace rof::detail {

class Keepalive {
  public:
    using Clock = std::chrono::steady_clock;

    Keepalive() = default;
    Keepalive(const Keepalive&) = delete;
    Keepalive& operator=(const Keepalive&) = delete;
    ~Keepalive() { stop(); }

    // Starts the thread: every @interval / 2 it calls @tick with @mu held.
    void start(std::chrono::milliseconds interval, std::mutex& mu, std::function<void()> tick);
    // Stops and joins the thread; takes @mu (the caller must not hold it).
    void stop();

    // A request went out (the caller holds the session's lock).
    void touch(Clock::time_point now) noexcept { last_req_ = now; }
    // No request went out for an interval and no NOP is in flight.
    bool due(Clock::time_point now) const noexcept {
        return !in_flight_ && now - last_req_ >= interval_;
    }
    // The NOP was posted / answered (or failed).
    void sent(Clock::time_point now) noexcept {
        in_flight_ = true;
        last_req_ = now;
    }
    void done() noexcept { in_flight_ = false; }
    bool in_flight() const noexcept { return in_flight_; }

  private:
    std::mutex* mu_ = nullptr;
    std::condition_variable cv_;
    std::thread thread_;
    bool stop_ = false;
    bool in_flight_ = false;
    std::chrono::milliseconds interval_{0};
    Clock::time_point last_req_;
};

}  // namespace rof::detail
