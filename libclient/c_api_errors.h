// SPDX-License-Identifier: MIT
// Internal to librof: how the C API (c_api.cpp) turns rof::Code and C++
// exceptions into enum rof_code and struct rof_error.  Header-only so that
// c_api_test.cpp checks the very code c_api.cpp runs, whatever the
// library's symbol visibility.
#pragma once

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string_view>
#include <system_error>

#include "rof.h"
#include "rof/error.h"

namespace rof::capi {

inline constexpr unsigned max_code = ROF_UNAUTHENTICATED;

// The two enums have the same values (both are gRPC's); a value outside
// them is UNKNOWN, as in code_name().
inline rof_code to_c(Code code) noexcept {
    const auto v = static_cast<unsigned>(code);
    return v <= max_code ? static_cast<rof_code>(v) : ROF_UNKNOWN;
}

inline Code from_c(rof_code code) noexcept {
    const auto v = static_cast<unsigned>(code);
    return v <= max_code ? static_cast<Code>(v) : Code::unknown;
}

inline rof_code set_error(rof_error* err, rof_code code, std::string_view message) noexcept {
    if (err != nullptr) {
        const std::size_t n = std::min(message.size(), std::size_t{ROF_ERROR_MAX - 1});
        err->code = code;
        std::memcpy(err->message, message.data(), n);
        err->message[n] = '\0';
    }
    return code;
}

inline rof_code set_ok(rof_error* err) noexcept {
    if (err != nullptr) {
        err->code = ROF_OK;
        err->message[0] = '\0';
    }
    return ROF_OK;
}

// errno values a system_error may carry, by what they mean to a caller.
inline rof_code from_errno(int e) noexcept {
    switch (e) {
        case EINVAL:
        case EBADF:
            return ROF_INVALID_ARGUMENT;
        case ETIMEDOUT:
            return ROF_DEADLINE_EXCEEDED;
        case ENOENT:
        case ENODEV:
        case ENXIO:
            return ROF_NOT_FOUND;
        case EEXIST:
            return ROF_ALREADY_EXISTS;
        case EPERM:
        case EACCES:
            return ROF_PERMISSION_DENIED;
        case ENOMEM:
        case ENOBUFS:
        case EAGAIN:
        case EMFILE:
        case ENFILE:
        case ENOSPC:
            return ROF_RESOURCE_EXHAUSTED;
        case ECANCELED:
            return ROF_CANCELLED;
        case ERANGE:
        case EMSGSIZE:
            return ROF_OUT_OF_RANGE;
        case ENOSYS:
        case EOPNOTSUPP:
            return ROF_UNIMPLEMENTED;
        case ECONNREFUSED:
        case ECONNRESET:
        case ECONNABORTED:
        case ENOTCONN:
        case EPIPE:
        case ENETUNREACH:
        case EHOSTUNREACH:
        case ENETDOWN:
            return ROF_UNAVAILABLE;
        default:
            return ROF_INTERNAL;
    }
}

// The exception being handled, as a code and message in @err.  Call only
// from a catch block.
inline rof_code from_current_exception(rof_error* err) noexcept {
    try {
        throw;
    } catch (const Error& e) {
        return set_error(err, to_c(e.code()), e.what());
    } catch (const std::bad_alloc&) {
        return set_error(err, ROF_RESOURCE_EXHAUSTED, "librof: out of memory");
    } catch (const std::invalid_argument& e) {
        return set_error(err, ROF_INVALID_ARGUMENT, e.what());
    } catch (const std::out_of_range& e) {
        return set_error(err, ROF_OUT_OF_RANGE, e.what());
    } catch (const std::length_error& e) {
        return set_error(err, ROF_OUT_OF_RANGE, e.what());
    } catch (const std::system_error& e) {
        const bool generic = e.code().category() == std::generic_category() ||
                             e.code().category() == std::system_category();
        return set_error(err, generic ? from_errno(e.code().value()) : ROF_INTERNAL, e.what());
    } catch (const std::exception& e) {
        return set_error(err, ROF_INTERNAL, e.what());
    } catch (...) {
        return set_error(err, ROF_UNKNOWN, "librof: unknown exception");
    }
}

// Runs @f, which reports failure by throwing; never throws itself.
template <typename F>
rof_code guard(rof_error* err, F&& f) noexcept {
    try {
        f();
        return set_ok(err);
    } catch (...) {
        return from_current_exception(err);
    }
}

}  // namespace rof::capi
