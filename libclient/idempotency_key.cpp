// SPDX-License-Identifier: MIT
#include "idempotency_key.h"

#include <sys/random.h>

#include <array>
#include <cerrno>
#include <cstddef>
#include <system_error>

#include "rof/error.h"

namespace rof::internal {

// From the kernel on every call, not from a per-thread generator: a forked
// child would inherit the generator's state and replay its parent's keys,
// and so its parent's answers (OpenSession's ticket among them).
std::string fresh_idempotency_key() {
    std::array<unsigned char, 16> bits{};
    std::size_t got = 0;
    while (got < bits.size()) {
        const ssize_t n = ::getrandom(bits.data() + got, bits.size() - got, 0);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            throw Error(Code::internal,
                        "idempotency key: getrandom: " + std::generic_category().message(errno));
        }
        got += static_cast<std::size_t>(n);
    }
    static constexpr char hex[] = "0123456789abcdef";
    std::string key;
    key.reserve(2 * bits.size());
    for (const unsigned char b : bits) {
        key.push_back(hex[b >> 4]);
        key.push_back(hex[b & 0xf]);
    }
    return key;
}

}  // namespace rof::internal
