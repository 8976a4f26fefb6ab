/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR MIT) */
/*
 * B9's reference: kv-get, list-find and crc-read (programs/, NAME.rofs) written
 * in plain C over the same memory layout, compiled with -O2.  Each answers
 * what the program answers (its status and response bytes), so the
 * benchmark checks the executor against it on every distinct input.
 * Unlike the programs they trust nothing more than a C server would: each
 * stays inside the region it is given, and answers -1 where the program
 * would fault.
 */
#ifndef ROF_BENCH_EXEC_REF_H
#define ROF_BENCH_EXEC_REF_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct ref_mem {
    const uint8_t* base;
    uint64_t len;
};

/* kv-get.rofs: @mask is its MASK; the status (0, 1, 3, 4) or -1. */
int ref_kv_get(struct ref_mem index, struct ref_mem heap, uint64_t mask, const uint8_t* args,
               uint32_t args_len, uint8_t* resp, uint32_t* resp_len);

/* list-find.rofs: the status (0..3) or -1. */
int ref_list_find(struct ref_mem list, const uint8_t* args, uint8_t* resp, uint32_t* resp_len);

/* crc-read.rofs: the status (0..2) or -1. */
int ref_crc_read(struct ref_mem records, const uint8_t* args, uint8_t* resp, uint32_t* resp_len);

#ifdef __cplusplus
}
#endif

#endif /* ROF_BENCH_EXEC_REF_H */
