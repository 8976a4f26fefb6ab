// SPDX-License-Identifier: MIT
// The idempotency keys librof gives mutating calls that carry none.
#pragma once

#include <string>

namespace rof::internal {

// 128 bits from getrandom(2) as 32 hex digits: no other call, thread or
// process (a forked child included) draws the same key.  Throws rof::Error
// (INTERNAL) when the kernel gives no randomness.
std::string fresh_idempotency_key();

}  // namespace rof::internal
