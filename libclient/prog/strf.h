// printf-style formatting into std::string: libstdc++ 12 (Debian 12) has
// no <format>, and this library wants no extra dependency for messages.
#pragma once

#include <cstdarg>
#include <cstdio>
#include <string>

namespace rof::prog {

__attribute__((format(printf, 1, 2))) inline std::string strf(const char* fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    va_list ap2;
    va_copy(ap2, ap);
    int n = std::vsnprintf(nullptr, 0, fmt, ap);
    va_end(ap);
    std::string s(n > 0 ? static_cast<size_t>(n) : 0, '\0');
    if (n > 0)
        std::vsnprintf(s.data(), s.size() + 1, fmt, ap2);
    va_end(ap2);
    return s;
}

}  // namespace rof::prog
