/* SPDX-License-Identifier: MIT */
/*
 * verbs.c: every data-path verb of librof's C API, checked.
 *
 * Written only against <rof.h> (see librof(3)).  It connects to rofd,
 * loads a small program into the caller's tenant, opens a session on one
 * region and then, on a block of that region at OFFSET:
 *
 *   synchronous   rof_write, rof_read, rof_cas (a hit and a miss),
 *                 rof_faa, rof_invoke (the program adds its argument to a
 *                 value of the region and answers the sum), rof_nop;
 *   asynchronous  rof_post_write/_faa/_cas/_invoke/_read in one batch,
 *                 rof_flush, rof_poll until all five completed;
 *   event loop    rof_poll() until it returns 0 (which arms the fd),
 *                 rof_post_faa, poll(2) on rof_completion_fd(), then
 *                 rof_poll() until the completion is in;
 *   errors        a read of a region the session does not have fails
 *                 with a code and a message, and the session still works.
 *
 * Each check prints "ok - ..." or "FAIL - ..."; the exit status is 0 when
 * every check passed, 1 when one failed, 2 for bad usage.  The program is
 * unloaded again at the end.  The block used is OFFSET .. OFFSET+96: pick
 * an OFFSET nothing else uses (the default, 128 KiB, suits the rof tests'
 * 1 MiB region "table").
 *
 * Build: cc verbs.c $(pkg-config --cflags --libs rof)
 * Run:   rof-example-c-verbs [-s SOCKET|HOST:PORT] [-t TENANT] [-r REGION]
 *                          [-o OFFSET] [-p PROGRAM_NAME]
 */
#define _POSIX_C_SOURCE 200809L

#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rof.h"

static int failures;

static void check(int ok, const char* what, const struct rof_error* err) {
    if (ok) {
        printf("ok - %s\n", what);
        return;
    }
    failures++;
    if (err != NULL && err->code != ROF_OK) {
        printf("FAIL - %s: %s: %s\n", what, rof_code_name(err->code), err->message);
    } else {
        printf("FAIL - %s\n", what);
    }
}

/* A fatal failure: nothing after it can work. */
static int die(const char* what, const struct rof_error* err) {
    fprintf(stderr, "rof-example-c-verbs: %s: %s: %s\n", what, rof_code_name(err->code),
            err->message);
    return 1;
}

static uint64_t get64(const unsigned char* p) {
    uint64_t v;
    memcpy(&v, p, sizeof(v));
    return v;
}

static void put64(unsigned char* p, uint64_t v) {
    memcpy(p, &v, sizeof(v));
}

/* The program: args are { u64 offset, u64 add }; it answers the u64 at
 * REGION[offset] plus add, 8 bytes, with program status 7. */
static const char program_fmt[] =
    "; verbs.c: answers REGION[args.offset] + args.add, status 7\n"
    ".args 16, 16\n"
    ".resp 8\n"
    ".region %s, r, %" PRIu64
    "\n"
    "        ld64  r2, args[0]\n"
    "        ld64  r3, %s[r2]\n"
    "        ld64  r4, args[8]\n"
    "        add64 r3, r4\n"
    "        st64  resp[0], r3\n"
    "        exit  7\n";

static void usage(void) {
    fprintf(stderr,
            "usage: rof-example-c-verbs [-s SOCKET|HOST:PORT] [-t TENANT] [-r REGION] "
            "[-o OFFSET] [-p PROGRAM_NAME]\n");
}

int main(int argc, char** argv) {
    struct rof_client_options copts = ROF_STRUCT_INIT(rof_client_options);
    struct rof_session_options sopts = ROF_STRUCT_INIT(rof_session_options);
    struct rof_region_request want;
    struct rof_granted_region region = ROF_STRUCT_INIT(rof_granted_region);
    struct rof_daemon_status status = ROF_STRUCT_INIT(rof_daemon_status);
    struct rof_invoke_reply reply;
    struct rof_completion done[8];
    struct rof_error err;
    enum rof_health health;
    rof_client* client = NULL;
    rof_session* session = NULL;
    const char* tenant = NULL;
    const char* rname = "table";
    const char* pname = "verbs_c";
    uint64_t off = 128 * 1024;
    uint64_t tag = 0, old = 0, v;
    unsigned char pattern[32], pattern2[16], buf[32], resp[8], resp2[8], args[16];
    char source[1024];
    int opt, i, n = 0, got;

    while ((opt = getopt(argc, argv, "s:t:r:o:p:h")) != -1) {
        switch (opt) {
            case 's':
                copts.target = optarg;
                break;
            case 't':
                tenant = optarg;
                break;
            case 'r':
                rname = optarg;
                break;
            case 'o':
                off = strtoull(optarg, NULL, 0);
                break;
            case 'p':
                pname = optarg;
                break;
            default:
                usage();
                return opt == 'h' ? 0 : 2;
        }
    }
    if (optind != argc || off % 8 != 0) {
        usage();
        return 2;
    }

    /* The control plane: open, health, status, load the program. */
    if (rof_client_open(&copts, &client, &err) != ROF_OK) {
        return die("rof_client_open", &err);
    }
    if (rof_client_health(client, NULL, &health, &err) != ROF_OK) {
        return die(rof_client_target(client), &err);
    }
    check(health == ROF_HEALTH_SERVING, "rofd is SERVING", NULL);
    if (rof_client_status(client, &status, &err) == ROF_OK) {
        printf("# rofd %s, rof.ko %s (ABI %" PRIu32 ".%" PRIu32 "), %" PRIu32
               " device(s), caller %s\n",
               status.daemon_version, status.module_version, status.abi_major, status.abi_minor,
               status.devices, status.caller);
    }
    check(rof_client_status(client, &status, &err) == ROF_OK, "rof_client_status", &err);

    rof_program_unload(client, tenant, pname, NULL); /* a leftover of an earlier run */
    snprintf(source, sizeof(source), program_fmt, rname, off + 96, rname);
    if (rof_program_load(client, tenant, pname, source, "verbs.rofs", &tag, &err) != ROF_OK) {
        return die("rof_program_load", &err);
    }
    printf("# program %s loaded, tag %" PRIu64 "\n", pname, tag);

    /* A session on the region. */
    want.name = rname;
    want.access = ROF_ACCESS_ALL;
    sopts.tenant = tenant;
    sopts.regions = &want;
    sopts.nregions = 1;
    if (rof_session_open(client, &sopts, &session, &err) != ROF_OK) {
        rof_program_unload(client, tenant, pname, NULL);
        return die("rof_session_open", &err);
    }
    printf("# session %" PRIu32 " to %s, %" PRIu32 " credits\n", rof_session_id(session),
           rof_session_peer(session), rof_session_credits(session));
    check(rof_session_region_find(session, rname, &region, &err) == ROF_OK &&
              strcmp(region.name, rname) == 0 && region.size >= off + 96 &&
              region.access == ROF_ACCESS_ALL,
          "the region is granted read, write and atomic, and large enough", &err);
    printf("# region %s: id %" PRIu32 ", %" PRIu64 " bytes, access %" PRIu32 "\n", region.name,
           region.id, region.size, region.access);
    check(rof_session_program_tag(session, pname, &v, &err) == ROF_OK && v == tag,
          "the session knows the program's tag by name", &err);

    /* Synchronous verbs. */
    for (i = 0; i < (int)sizeof(pattern); i++) {
        pattern[i] = (unsigned char)(0xa0 + i);
    }
    check(rof_write(session, rname, off, pattern, sizeof(pattern), &err) == ROF_OK, "rof_write",
          &err);
    memset(buf, 0, sizeof(buf));
    check(rof_read(session, rname, off, buf, sizeof(buf), &err) == ROF_OK &&
              memcmp(buf, pattern, sizeof(buf)) == 0,
          "rof_read returns what rof_write wrote", &err);

    memset(buf, 0, sizeof(buf));
    put64(buf, 5); /* off+32: 5; off+40 and off+48: 0 */
    check(rof_write(session, rname, off + 32, buf, 24, &err) == ROF_OK, "rof_write of three u64",
          &err);
    check(rof_cas(session, rname, off + 32, 5, 9, &old, &err) == ROF_OK && old == 5,
          "rof_cas 5 -> 9 swaps and returns 5", &err);
    check(rof_cas(session, rname, off + 32, 5, 11, &old, &err) == ROF_OK && old == 9,
          "rof_cas 5 -> 11 does not swap and returns 9", &err);
    check(rof_faa(session, rname, off + 32, 3, &old, &err) == ROF_OK && old == 9,
          "rof_faa +3 returns 9", &err);
    check(rof_read(session, rname, off + 32, buf, 8, &err) == ROF_OK && get64(buf) == 12,
          "the value is now 12", &err);

    put64(args, off + 32);
    put64(args + 8, 100);
    memset(resp, 0, sizeof(resp));
    check(
        rof_invoke(session, tag, args, sizeof(args), resp, sizeof(resp), &reply, &err) == ROF_OK &&
            reply.prog_status == 7 && reply.len == 8 && get64(resp) == 112,
        "rof_invoke answers 12 + 100 with status 7", &err);
    printf("# invoke: status %" PRIu32 ", %" PRIu32 " instructions, %zu bytes\n", reply.prog_status,
           reply.insns, reply.len);
    check(rof_nop(session, &err) == ROF_OK, "rof_nop", &err);

    /* Asynchronous verbs: one batch of five, then poll. */
    for (i = 0; i < (int)sizeof(pattern2); i++) {
        pattern2[i] = (unsigned char)(0x5a ^ i);
    }
    put64(args + 8, 1);
    memset(buf, 0, sizeof(buf));
    memset(resp2, 0, sizeof(resp2));
    check(rof_post_write(session, rname, off + 64, pattern2, sizeof(pattern2), 1, &err) == ROF_OK &&
              rof_post_faa(session, rname, off + 40, 5, 2, &err) == ROF_OK &&
              rof_post_cas(session, rname, off + 48, 0, 77, 3, &err) == ROF_OK &&
              rof_post_invoke(session, tag, args, sizeof(args), resp2, sizeof(resp2), 4, &err) ==
                  ROF_OK &&
              rof_post_read(session, rname, off, buf, sizeof(buf), 5, &err) == ROF_OK,
          "five rof_post_* calls", &err);
    check(rof_outstanding(session) == 5, "five operations outstanding", NULL);
    check(rof_flush(session, &err) == ROF_OK, "rof_flush", &err);
    got = 0;
    while (got < 5) {
        n = rof_poll(session, done + got, 5 - got, 10000, &err);
        if (n <= 0) {
            break;
        }
        got += n;
    }
    check(got == 5, "rof_poll returns the five completions", n < 0 ? &err : NULL);
    for (i = 0; i < got; i++) {
        const struct rof_completion* c = &done[i];
        char what[96];

        snprintf(what, sizeof(what), "completion %" PRIu64 " (verb %d) is ROF_OK", c->user,
                 (int)c->verb);
        if (c->code != ROF_OK) {
            printf("# %s: %s\n", rof_code_name(c->code), c->error);
        }
        check(c->code == ROF_OK, what, NULL);
        switch (c->user) {
            case 1:
                check(c->verb == ROF_VERB_WRITE, "completion 1 is the write", NULL);
                break;
            case 2:
                check(c->verb == ROF_VERB_FAA && c->value == 0, "the posted faa returns 0", NULL);
                break;
            case 3:
                check(c->verb == ROF_VERB_CAS && c->value == 0, "the posted cas returns 0", NULL);
                break;
            case 4:
                check(c->verb == ROF_VERB_INVOKE && c->invoke.prog_status == 7 && c->len == 8 &&
                          get64(resp2) == 13,
                      "the posted invoke answers 12 + 1", NULL);
                break;
            case 5:
                check(c->verb == ROF_VERB_READ && c->len == sizeof(buf) &&
                          memcmp(buf, pattern, sizeof(buf)) == 0,
                      "the posted read returns the pattern", NULL);
                break;
            default:
                check(0, "a completion with an unknown user value", NULL);
        }
    }
    check(rof_outstanding(session) == 0, "nothing outstanding after the polls", NULL);
    check(rof_read(session, rname, off + 64, buf, sizeof(pattern2), &err) == ROF_OK &&
              memcmp(buf, pattern2, sizeof(pattern2)) == 0,
          "the posted write landed", &err);
    check(rof_read(session, rname, off + 40, buf, 16, &err) == ROF_OK && get64(buf) == 5 &&
              get64(buf + 8) == 77,
          "the posted faa and cas landed", &err);

    /* An event loop: the completion fd is armed by a rof_poll() that
     * returns 0, so drain first; then post, wait until the fd is readable
     * and drain again. */
    {
        struct pollfd pfd;
        int fd = rof_completion_fd(session), readable = 0;

        check(fd >= 0, "rof_completion_fd", NULL);
        while (rof_poll(session, done, 8, 0, &err) > 0) {
        }
        check(rof_post_faa(session, rname, off + 40, 1, 6, &err) == ROF_OK &&
                  rof_flush(session, &err) == ROF_OK,
              "rof_post_faa and rof_flush", &err);
        got = 0;
        for (i = 0; i < 100 && got == 0; i++) {
            pfd.fd = fd;
            pfd.events = POLLIN;
            pfd.revents = 0;
            if (poll(&pfd, 1, 10000) <= 0) {
                break;
            }
            readable = 1;
            while ((n = rof_poll(session, done + got, 1, 0, &err)) > 0) {
                got += n;
            }
        }
        check(readable, "the completion fd turns readable", NULL);
        check(got == 1 && done[0].user == 6 && done[0].code == ROF_OK && done[0].value == 5,
              "rof_poll then returns the faa's completion, old value 5", NULL);
    }

    /* Errors: a code and a message; the session still works. */
    n = rof_read(session, "no-such-region", 0, buf, 8, &err);
    printf("# read of an unknown region: %s: %s\n", rof_code_name(err.code), err.message);
    check(n != ROF_OK && err.code == (enum rof_code)n && err.message[0] != '\0',
          "reading a region the session lacks fails with a code and a message", NULL);
    check(rof_nop(session, &err) == ROF_OK, "the session still answers", &err);

    rof_session_close(session);
    check(rof_program_unload(client, tenant, pname, &err) == ROF_OK, "rof_program_unload", &err);
    rof_client_close(client);
    printf("%s: %d check(s) failed\n", failures ? "FAIL" : "PASS", failures);
    return failures ? 1 : 0;
}
