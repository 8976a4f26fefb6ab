// SPDX-License-Identifier: MIT
// main.cpp's loop sources: accepting pauses when accept4() runs out of
// descriptors (rather than spin on a listener that stays readable) and
// resumes once one is free; the removal timer fires at its period.
#include "event_sources.h"

#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <system_error>
#include <vector>

#include "listener.h"
#include "test_util.h"
#include "unix_addr.h"

namespace {

using rofd::AcceptSource;
using rofd::PeriodicTimer;
using rofd::UniqueFd;
using rofd::UnixListener;

struct EventDeleter {
    void operator()(sd_event* e) const { sd_event_unref(e); }
};
using EventPtr = std::unique_ptr<sd_event, EventDeleter>;

EventPtr new_event() {
    sd_event* e = nullptr;
    EXPECT_GE(sd_event_new(&e), 0);
    return EventPtr(e);
}

std::uint64_t monotonic_usec() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000 +
           static_cast<std::uint64_t>(ts.tv_nsec) / 1000;
}

// While it lives, the process has no descriptor left: RLIMIT_NOFILE is
// lowered to just above the highest open one and every free number below
// it is taken.  release() frees some by raising the limit again, which
// does not depend on how many free numbers there were to take (few or
// none when the process inherited no high descriptor, as under CI).
class NoDescriptors {
  public:
    NoDescriptors() {
        EXPECT_EQ(::getrlimit(RLIMIT_NOFILE, &old_), 0);
        int highest = 0;
        if (DIR* d = ::opendir("/proc/self/fd")) {
            while (const dirent* ent = ::readdir(d)) {
                highest = std::max(highest, std::atoi(ent->d_name));
            }
            ::closedir(d);
        }
        low_ = old_;
        low_.rlim_cur = static_cast<rlim_t>(highest) + 1;
        EXPECT_EQ(::setrlimit(RLIMIT_NOFILE, &low_), 0) << std::strerror(errno);
        for (;;) {
            const int fd = ::dup(STDERR_FILENO);
            if (fd < 0) {
                EXPECT_EQ(errno, EMFILE);
                break;
            }
            taken_.emplace_back(fd);
        }
    }
    ~NoDescriptors() {
        taken_.clear();
        ::setrlimit(RLIMIT_NOFILE, &old_);
    }
    NoDescriptors(const NoDescriptors&) = delete;
    NoDescriptors& operator=(const NoDescriptors&) = delete;

    void release(std::size_t n) {
        low_.rlim_cur += n;
        ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &low_), 0) << std::strerror(errno);
    }

  private:
    rlimit old_{};
    rlimit low_{};
    std::vector<UniqueFd> taken_;
};

// A listener with one connection waiting and an AcceptSource on it that
// records when (sd_event_now) each accept() was tried.
struct Accepting {
    explicit Accepting(std::uint64_t retry_usec)
        : listener(UnixListener::bind(dir.file("rofd.sock"))),
          event(new_event()),
          source(
              event.get(), listener.fd(),
              [this] {
                  std::uint64_t now = 0;
                  sd_event_now(event.get(), CLOCK_MONOTONIC, &now);
                  attempts.push_back(now);
                  auto conn = listener.accept();
                  if (!conn) {
                      return false;
                  }
                  accepted.push_back(std::move(conn->fd));
                  return true;
              },
              retry_usec) {
        connect();
    }
    void connect() {
        UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
        ASSERT_TRUE(fd);
        ASSERT_EQ(rof::internal::UnixAddr(dir.file("rofd.sock")).connect(fd.get()), 0)
            << std::strerror(errno);
        clients.push_back(std::move(fd));
    }
    // Runs the loop, each time until something happens, while @more.
    template <typename F>
    void run_while(F more) {
        for (int i = 0; more() && i < 1000; i++) {
            ASSERT_GE(sd_event_run(event.get(), UINT64_MAX), 0);
        }
        EXPECT_FALSE(more()) << "the loop stopped making progress";
    }

    rofd::test::TempDir dir;
    const UnixListener listener;
    const EventPtr event;
    std::vector<std::uint64_t> attempts;  // sd_event_now of each accept()
    std::vector<UniqueFd> accepted;
    std::vector<UniqueFd> clients;
    AcceptSource source;
};

// Out of descriptors, the listener stays readable all along: a loop that
// retried at once would call accept() on every iteration.  With a retry
// period no test outlasts, any number of iterations tries once.
TEST(AcceptSource, OutOfDescriptorsPausesAccepting) {
    constexpr std::uint64_t hour = 3'600'000'000;
    Accepting a(hour);
    NoDescriptors none;
    for (int i = 0; i < 200; i++) {
        ASSERT_GE(sd_event_run(a.event.get(), 0), 0);
    }
    EXPECT_TRUE(a.accepted.empty());
    EXPECT_EQ(a.attempts.size(), 1U);
    EXPECT_EQ(a.source.pauses(), 1U);
    EXPECT_TRUE(a.source.paused());
}

// ... and tries again rofd's retry period later, each time, until a
// descriptor is free; then it takes the waiting connection and goes on.
TEST(AcceptSource, OutOfDescriptorsRetriesAfterThePeriodAndResumesWhenOneFrees) {
    Accepting a(rofd::accept_retry_usec);
    std::uint64_t pauses = 0;
    {
        NoDescriptors none;
        a.run_while([&] { return a.attempts.size() < 3; });
        EXPECT_TRUE(a.accepted.empty());
        // Every attempt failed with EMFILE and paused accepting ...
        EXPECT_EQ(a.source.pauses(), a.attempts.size());
        EXPECT_TRUE(a.source.paused());
        // ... for the retry period at least.
        for (std::size_t i = 1; i < a.attempts.size(); i++) {
            EXPECT_GE(a.attempts[i] - a.attempts[i - 1], rofd::accept_retry_usec)
                << "attempt " << i;
        }
        pauses = a.source.pauses();
        // Descriptors free: the retry timer turns accepting on again and
        // the waiting connection is taken.  Two: one for the connection,
        // one for the accept4() that finds none waiting after it (it
        // takes a descriptor before it looks; with none it would pause
        // again, as it should).
        none.release(2);
        a.run_while([&] { return a.accepted.empty(); });
        EXPECT_EQ(a.accepted.size(), 1U);
        EXPECT_FALSE(a.source.paused());
    }
    // The loop goes on serving.
    a.connect();
    a.run_while([&] { return a.accepted.size() < 2; });
    EXPECT_EQ(a.source.pauses(), pauses) << "accepting paused when descriptors were there";
}

// A listener that is broken (not a socket) ends the loop with its errno.
TEST(AcceptSource, BrokenListenerEndsTheLoop) {
    const EventPtr event = new_event();
    int pipefd[2] = {-1, -1};
    ASSERT_EQ(::pipe2(pipefd, O_CLOEXEC), 0);
    const UniqueFd r(pipefd[0]);
    const UniqueFd w(pipefd[1]);
    ASSERT_EQ(::write(w.get(), "x", 1), 1);
    const AcceptSource source(
        event.get(), r.get(),
        []() -> bool { throw std::system_error(ENOTSOCK, std::generic_category(), "accept"); },
        rofd::accept_retry_usec);
    EXPECT_EQ(sd_event_loop(event.get()), -ENOTSOCK);
}

// The removal timer: first due one period after it is made, then once per
// period (each time from when it was due, so it does not drift).
TEST(PeriodicTimer, FiresOncePerPeriod) {
    const EventPtr event = new_event();
    {
        const std::uint64_t before = monotonic_usec();
        const PeriodicTimer removals(event.get(), rofd::removal_period_usec, [] {});
        const std::uint64_t after = monotonic_usec();
        EXPECT_GE(removals.next_usec(), before + rofd::removal_period_usec);
        EXPECT_LE(removals.next_usec(), after + rofd::removal_period_usec);
        EXPECT_EQ(rofd::removal_period_usec, 1'000'000U);
    }
    // Driven at a 1 ms period by blocking on the loop: no sleep.
    constexpr std::uint64_t period = 1000;
    std::vector<std::uint64_t> due;
    PeriodicTimer* self = nullptr;
    PeriodicTimer t(event.get(), period, [&] { due.push_back(self->next_usec()); });
    self = &t;
    const std::uint64_t first = t.next_usec();
    while (due.size() < 5) {
        ASSERT_GE(sd_event_run(event.get(), UINT64_MAX), 0);
    }
    for (std::size_t i = 0; i < due.size(); i++) {
        EXPECT_EQ(due[i], first + i * period) << "firing " << i;
    }
    EXPECT_EQ(t.next_usec(), first + due.size() * period);
}

}  // namespace
