// SPDX-License-Identifier: MIT
// The loop of one LIST command (struct rof_list, docs/kmod.md section 1),
// apart from the device so that a unit test can drive it with a fake
// module: Kmod::list() is this over its ioctl.
#pragma once

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <string>
#include <vector>

#include "uapi/rof.h"

namespace rofd {

// The module's ABI minor from which every LIST takes ROF_LIST_FROM.
inline constexpr std::uint32_t abi_minor_list_from = 3;

// Objects come and go (rdma link add/delete, other controllers) between the
// sizing call and the filling call of an unpaged LIST; a list that keeps
// changing this often is a bug.
inline constexpr int list_attempts = 8;

// Every element of one LIST command.  @call(struct rof_list&) makes the
// ioctl and returns 0 or the errno; @fail(err, detail) throws.
//
// @paged (a module of ABI 0.3 or later): pages of at most @page_max from id
// 0 with ROF_LIST_FROM, each from one past the last id of the one before,
// until a page holds every object left; an object that exists throughout
// is listed once, however many there are.  Ids only grow from page to page,
// so the loop ends.  Otherwise the old way: a sizing
// call, then the whole list in one array of at most @page_max, retried
// while objects appear in between (E2BIG past @page_max: such a module
// cannot list more).  @page_max is ROF_LIST_MAX but for tests.
template <typename T, typename Call, typename Fail>
std::vector<T> list_objects(Call&& call, Fail&& fail, bool paged,
                            std::uint32_t page_max = ROF_LIST_MAX) {
    std::vector<T> elems;

    if (!paged) {
        for (int attempt = 0;; attempt++) {
            rof_list req{};

            req.elems = reinterpret_cast<std::uintptr_t>(elems.data());
            req.capacity = static_cast<std::uint32_t>(elems.size());
            req.elem_size = sizeof(T);
            if (const int err = call(req)) {
                fail(err, "");
            }
            if (req.count > req.capacity) {
                fail(EPROTO, "count " + std::to_string(req.count) + " exceeds capacity " +
                                 std::to_string(req.capacity));
            }
            if (req.total <= req.capacity) {
                elems.resize(req.count);
                return elems;
            }
            if (attempt + 1 == list_attempts) {
                fail(EAGAIN, "the list kept changing");
            }
            if (req.total > page_max) {
                fail(E2BIG, std::to_string(req.total) + " objects");
            }
            elems.assign(req.total, T{});
        }
    }

    std::vector<T> page;
    std::uint32_t start = 0;
    std::uint32_t capacity = 0;  // the first call sizes the first page
    for (;;) {
        rof_list req{};

        page.assign(capacity, T{});
        req.elems = reinterpret_cast<std::uintptr_t>(page.data());
        req.capacity = capacity;
        req.elem_size = sizeof(T);
        req.flags = ROF_LIST_FROM;
        req.start = start;
        if (const int err = call(req)) {
            fail(err, "");
        }
        if (req.count > req.capacity || req.count > req.total) {
            fail(EPROTO, "count " + std::to_string(req.count) + " exceeds capacity " +
                             std::to_string(req.capacity) + " or total " +
                             std::to_string(req.total));
        }
        elems.insert(elems.end(), page.begin(), page.begin() + req.count);
        if (req.count == req.total) {
            return elems;
        }
        if (req.count == 0 && capacity != 0) {
            fail(EPROTO, "an empty page with " + std::to_string(req.total) + " objects left");
        }
        if (req.count != 0) {
            if (req.start <= start) {
                fail(EPROTO, "page from id " + std::to_string(start) + " ends at id " +
                                 std::to_string(req.start));
            }
            start = req.start;
        }
        // Room for twice what is left: objects created while it pages
        // are caught up with, unless more than page_max/2 come per call.
        capacity = static_cast<std::uint32_t>(
            std::min<std::uint64_t>(2ULL * (req.total - req.count), page_max));
    }
}

}  // namespace rofd
