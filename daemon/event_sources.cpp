// SPDX-License-Identifier: MIT
#include "event_sources.h"

#include <cerrno>
#include <system_error>
#include <utility>

#include "log.h"

namespace rofd {
namespace {

void check(int r, const char* what) {
    if (r < 0) {
        throw std::system_error(-r, std::generic_category(), what);
    }
}

}  // namespace

AcceptSource::AcceptSource(sd_event* event, int fd, Accept accept, std::uint64_t retry_usec)
    : event_(event), accept_(std::move(accept)), retry_usec_(retry_usec) {
    check(sd_event_add_io(event, &io_, fd, EPOLLIN, on_io, this), "sd_event_add_io(listener)");
    // Made now, off: arming it later needs no descriptor (the clock's
    // timerfd exists from here on), which matters when there is none.
    const int r = sd_event_add_time(event, &retry_, CLOCK_MONOTONIC, 0, 0, on_retry, this);
    if (r < 0) {
        sd_event_source_disable_unref(io_);
        check(r, "sd_event_add_time(accept retry)");
    }
    sd_event_source_set_enabled(retry_, SD_EVENT_OFF);
}

AcceptSource::~AcceptSource() {
    sd_event_source_disable_unref(retry_);
    sd_event_source_disable_unref(io_);
}

bool AcceptSource::paused() const {
    int enabled = SD_EVENT_ON;
    return sd_event_source_get_enabled(io_, &enabled) >= 0 && enabled == SD_EVENT_OFF;
}

int AcceptSource::on_io(sd_event_source*, int, std::uint32_t, void* data) {
    auto* a = static_cast<AcceptSource*>(data);
    try {
        while (a->accept_()) {
        }
    } catch (const std::system_error& e) {
        const int err = e.code().value();
        if (err == EBADF || err == EINVAL || err == ENOTSOCK || err == EOPNOTSUPP) {
            log::error("{}", e.what());
            return sd_event_exit(a->event_, -err);
        }
        // Out of fds or memory (EMFILE, ENFILE, ENOBUFS, ENOMEM): the
        // pending connection stays queued and the socket readable, so
        // pause accepting rather than spin; the timer resumes it.
        log::warning("{}; accepting again in {} ms", e.what(), a->retry_usec_ / 1000);
        std::uint64_t now = 0;
        if (sd_event_now(a->event_, CLOCK_MONOTONIC, &now) >= 0 &&
            sd_event_source_set_time(a->retry_, now + a->retry_usec_) >= 0 &&
            sd_event_source_set_enabled(a->retry_, SD_EVENT_ONESHOT) >= 0 &&
            sd_event_source_set_enabled(a->io_, SD_EVENT_OFF) >= 0) {
            a->pauses_++;
        }
    }
    return 0;
}

int AcceptSource::on_retry(sd_event_source*, std::uint64_t, void* data) {
    auto* a = static_cast<AcceptSource*>(data);
    sd_event_source_set_enabled(a->io_, SD_EVENT_ON);
    return 0;
}

PeriodicTimer::PeriodicTimer(sd_event* event, std::uint64_t period_usec, std::function<void()> fn)
    : period_usec_(period_usec), fn_(std::move(fn)) {
    std::uint64_t now = 0;
    check(sd_event_now(event, CLOCK_MONOTONIC, &now), "sd_event_now");
    check(sd_event_add_time(event, &source_, CLOCK_MONOTONIC, now + period_usec, 0, on_time, this),
          "sd_event_add_time");
    sd_event_source_set_enabled(source_, SD_EVENT_ON);
}

PeriodicTimer::~PeriodicTimer() {
    sd_event_source_disable_unref(source_);
}

std::uint64_t PeriodicTimer::next_usec() const {
    std::uint64_t usec = 0;
    sd_event_source_get_time(source_, &usec);
    return usec;
}

int PeriodicTimer::on_time(sd_event_source* s, std::uint64_t usec, void* data) {
    auto* t = static_cast<PeriodicTimer*>(data);
    t->fn_();
    sd_event_source_set_time(s, usec + t->period_usec_);
    return 0;
}

}  // namespace rofd
