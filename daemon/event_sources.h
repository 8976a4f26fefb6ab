// SPDX-License-Identifier: MIT
#pragma once

#include <systemd/sd-event.h>

#include <cstdint>
#include <functional>

namespace rofd {

// Out of descriptors, accept4() fails at once and the listener stays
// readable: accepting pauses this long instead of spinning.
constexpr std::uint64_t accept_retry_usec = 100'000;
// Every removal_period: a tenant removed from policy is destroyed on the
// worker once its last session is gone or its grace is over, so it
// outlives either by a second at most.
constexpr std::uint64_t removal_period_usec = 1'000'000;

// Two of rofd's main-loop sources, apart from main.cpp so that the unit
// tests drive the same wiring on an sd_event of their own.

// The listening socket's source.  Each time it is readable @accept is
// called until it returns false (nothing pending).  When it throws a
// std::system_error for running out of descriptors or memory (EMFILE,
// ENFILE, ENOBUFS, ENOMEM) the pending connection stays queued and the
// socket readable: the source turns itself off and a one-shot timer turns
// it on again @retry_usec later, so rofd does not spin.  Any other error
// (the listener itself is broken) exits the loop with -errno.
class AcceptSource {
  public:
    // Accepts one connection; false when none was pending.
    using Accept = std::function<bool()>;

    AcceptSource(sd_event* event, int fd, Accept accept, std::uint64_t retry_usec);
    ~AcceptSource();
    AcceptSource(const AcceptSource&) = delete;
    AcceptSource& operator=(const AcceptSource&) = delete;

    // How many times accepting was paused for want of descriptors.
    std::uint64_t pauses() const noexcept { return pauses_; }
    // Whether accepting is paused now.
    bool paused() const;

  private:
    static int on_io(sd_event_source*, int, std::uint32_t, void* data);
    static int on_retry(sd_event_source*, std::uint64_t, void* data);

    sd_event* event_;
    Accept accept_;
    std::uint64_t retry_usec_;
    std::uint64_t pauses_ = 0;
    sd_event_source* io_ = nullptr;
    sd_event_source* retry_ = nullptr;
};

// A CLOCK_MONOTONIC timer that calls @fn every @period_usec, the first
// time @period_usec after it is made (main.cpp's removal sweep).
class PeriodicTimer {
  public:
    PeriodicTimer(sd_event* event, std::uint64_t period_usec, std::function<void()> fn);
    ~PeriodicTimer();
    PeriodicTimer(const PeriodicTimer&) = delete;
    PeriodicTimer& operator=(const PeriodicTimer&) = delete;

    // When it fires next (CLOCK_MONOTONIC, µs).
    std::uint64_t next_usec() const;

  private:
    static int on_time(sd_event_source* s, std::uint64_t usec, void* data);

    std::uint64_t period_usec_;
    std::function<void()> fn_;
    sd_event_source* source_ = nullptr;
};

}  // namespace rofd
