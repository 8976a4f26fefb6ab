// SPDX-License-Identifier: MIT
// The completion path of rof::Session (session_completion.h).
#include "session_completion.h"

#include <endian.h>

#include <algorithm>
#include <cstring>

#include "session_internal.h"
#include "uapi/rof.h"

namespace rof::detail {

bool parse_response(const std::byte* buf, std::uint32_t byte_len, Response* out) noexcept {
    rof_resp_hdr h{};
    if (byte_len < sizeof(h)) {
        return false;
    }
    std::memcpy(&h, buf, sizeof(h));
    out->id = le64toh(h.id);
    out->status = le32toh(h.status);
    std::uint32_t len = std::min<std::uint32_t>(le32toh(h.len), byte_len - sizeof(h));
    out->payload = {buf + sizeof(h), len};
    return true;
}

void RecvChain::reset(std::uint32_t n) {
    wr_.assign(n, ibv_recv_wr{});
    sge_.assign(n, ibv_sge{});
    n_ = 0;
}

void RecvChain::add(std::uint64_t wr_id, const std::byte* buf, std::uint32_t len,
                    std::uint32_t lkey) noexcept {
    ibv_sge& s = sge_[n_];
    s.addr = reinterpret_cast<std::uintptr_t>(buf);
    s.length = len;
    s.lkey = lkey;
    ibv_recv_wr& w = wr_[n_];
    w.wr_id = wr_id;
    w.sg_list = &s;
    w.num_sge = 1;
    w.next = nullptr;
    if (n_) {
        wr_[n_ - 1].next = &w;
    }
    n_++;
}

void CompletionPath::reset(std::uint32_t capacity) {
    ready_.clear();
    ready_.resize(capacity);
    poll_err_.assign(capacity, {});
    for (auto& r : ready_) {
        r.err.reserve(160);
    }
    ready_head_ = ready_n_ = 0;
    outstanding_ = 0;
    sync_done_ = false;
}

void CompletionPath::deliver(const Op& op, Code code, std::string_view err, std::size_t len,
                             std::uint64_t value, const InvokeResult& inv) {
    progress_++;
    switch (op.delivery) {
        case Delivery::keepalive:
            return;
        case Delivery::sync:
            sync_done_ = true;
            sync_c_ = Completion{op.user, op.verb, code, {}, len, value, inv};
            sync_err_.assign(err);
            return;
        case Delivery::polled:
            break;
    }
    std::uint32_t at = ready_head_ + ready_n_;
    if (at >= ready_.size()) {
        at -= static_cast<std::uint32_t>(ready_.size());
    }
    Ready& r = ready_[at];
    ready_n_++;
    r.c = Completion{op.user, op.verb, code, {}, len, value, inv};
    r.err.assign(err);
}

void CompletionPath::answer(const Op& op, const Response& r, std::uint32_t session) {
    InvokeResult inv;
    Code code = Code::ok;
    std::string err;
    std::size_t out_len = 0;
    const std::size_t len = r.payload.size();
    const std::byte* payload = r.payload.data();
    if (op.verb == Verb::invoke && (r.status == ROF_ST_OK || r.status == ROF_ST_PROG_FAULT) &&
        len >= 16) {
        rof_invoke_result res{};
        std::memcpy(&res, payload, sizeof(res));
        inv.prog_status = le32toh(res.prog_status);
        inv.insns = le32toh(res.insns);
        std::uint32_t exec = le32toh(res.exec_status);
        std::uint32_t pc = le32toh(res.fault_pc);
        if (r.status == ROF_ST_OK) {
            std::size_t n = len - sizeof(res);
            out_len = std::min(n, op.out.size());
            if (out_len) {
                std::memcpy(op.out.data(), payload + sizeof(res), out_len);
            }
            inv.len = out_len;
            if (n > op.out.size()) {
                code = Code::out_of_range;
                err = "session " + std::to_string(session) + ": the program's response of " +
                      std::to_string(n) + " bytes does not fit the " +
                      std::to_string(op.out.size()) + "-byte buffer";
            }
        } else {
            code = Code::aborted;
            err = status_message(session, r.status, op.tag, exec, pc);
        }
    } else if (r.status != ROF_ST_OK) {
        code = status_code(r.status);
        err = status_message(session, r.status, op.tag, 0, 0);
    }
    deliver(op, code, err, out_len, 0, inv);
}

void CompletionPath::complete_one_sided(const Op& op, const std::byte* xfer) {
    std::uint64_t value = 0;
    if (op.verb == Verb::read) {
        std::memcpy(op.out.data(), xfer, op.len);
    } else if (op.verb == Verb::cas || op.verb == Verb::faa) {
        std::memcpy(&value, xfer, 8);  // host order, as the HCA wrote it
    }
    deliver(op, Code::ok, {}, op.len, value, {});
}

std::size_t CompletionPath::take(std::span<Completion> out) {
    std::size_t n = 0;
    while (n < out.size() && ready_n_) {
        Ready& r = ready_[ready_head_];
        ready_head_ = ready_head_ + 1 == ready_.size() ? 0 : ready_head_ + 1;
        ready_n_--;
        out[n] = r.c;
        poll_err_[n] = r.err;
        out[n].error = poll_err_[n];
        n++;
        outstanding_--;
    }
    return n;
}

}  // namespace rof::detail
