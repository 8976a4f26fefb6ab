// SPDX-License-Identifier: MIT
#include "idempotency_key.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <set>
#include <string>

namespace {

using rof::internal::fresh_idempotency_key;

TEST(IdempotencyKey, Is32HexDigits) {
    const std::string k = fresh_idempotency_key();
    ASSERT_EQ(k.size(), 32u);
    EXPECT_EQ(k.find_first_not_of("0123456789abcdef"), std::string::npos) << k;
}

TEST(IdempotencyKey, NeverRepeatsInOneProcess) {
    std::set<std::string> seen;
    for (int i = 0; i < 1000; i++) {
        EXPECT_TRUE(seen.insert(fresh_idempotency_key()).second);
    }
}

// A forked child must not draw the key its parent draws next: it would
// replay the parent's answers (issue 28, item 6).
TEST(IdempotencyKey, ForkedChildDrawsAnotherKey) {
    (void)fresh_idempotency_key();  // whatever per-thread state exists is set up now
    int p[2];
    ASSERT_EQ(::pipe(p), 0);
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        const std::string k = fresh_idempotency_key();
        const bool ok = ::write(p[1], k.data(), k.size()) == static_cast<ssize_t>(k.size());
        ::_exit(ok ? 0 : 1);
    }
    ::close(p[1]);
    const std::string mine = fresh_idempotency_key();
    std::string child(64, '\0');
    const ssize_t n = ::read(p[0], child.data(), child.size());
    ::close(p[0]);
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    ASSERT_EQ(n, 32);
    child.resize(32);
    EXPECT_NE(mine, child);
}

}  // namespace
