/* SPDX-License-Identifier: MIT */
/*
 * rof.h: librof's C API, for C programs (C99 and later; also valid C++).
 *
 * The same library as the C++ API (rof/client.h, rof/session.h), seen
 * through opaque handles: a rof_client talks to rofd's control plane, a
 * rof_session is one RDMA data-path session with rof.ko.  librof(3) is the
 * overview; rof_client_open(3), rof_session_open(3), rof_read(3),
 * rof_post_read(3) and rof_code_name(3) document the groups below.
 *
 * Errors.  Every function that can fail returns an enum rof_code: ROF_OK
 * (0) or the reason, the same codes as gRPC's and rof::Code's.  Its last
 * argument is a struct rof_error *, which may be NULL; when it is not, the
 * call fills it in: code and a one-line message naming the object and the
 * reason, fit to be shown to a user as it is (the message is "" on
 * success).  Nothing is kept behind the caller's back: no global or
 * thread-local "last error", so any thread may use any struct rof_error of
 * its own.  A NULL handle or a NULL required pointer is ROF_INVALID_ARGUMENT.
 * No C++ exception ever leaves a function of this header; an allocation
 * failure is ROF_RESOURCE_EXHAUSTED.
 *
 * Threads.  A rof_client may be used by several threads at once.  A
 * rof_session is used by one thread at a time (its keepalive runs inside
 * the library).  Strings returned by a handle stay valid until the handle
 * is closed, unless said otherwise.
 *
 * Extensible structs.  The structs of the control calls, which a caller
 * fills (struct rof_client_options, struct rof_session_options) or has
 * filled (struct rof_daemon_status, struct rof_granted_region), begin with
 * sz: the caller sets it to the struct's size as this header declares it,
 * and ROF_STRUCT_INIT(type) gives such a struct zeroed with sz set.  A
 * later librof reads and writes only the first sz bytes, so a program
 * keeps working with the librof it was built for and every later one.
 * librof refuses (ROF_INVALID_ARGUMENT) an sz smaller than the struct's
 * first version, and a larger struct than it knows whose bytes past its
 * end are not all zero (the program set fields of a newer rof.h than the
 * installed librof).  The data path's structs (struct rof_invoke_reply,
 * struct rof_completion, struct rof_region_request) and struct rof_error
 * are fixed: they are passed per operation and in arrays, and as with
 * ibverbs' struct ibv_wc, what they may gain comes with a new call.
 *
 * The C API covers what a C data-path program needs: status, health, a
 * program's tag, loading a program from source, sessions and every verb.
 * For the other control calls (tenants, policy, regions, audit, metrics)
 * use the C++ API or rofctl(8).
 */
#ifndef ROF_H
#define ROF_H

#include <stddef.h>
#include <stdint.h>

#ifndef ROF_EXPORT
#define ROF_EXPORT __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* --- errors: rof_code_name(3) ------------------------------------------ */

/* gRPC's status codes, same names and values as rof::Code (rof/error.h). */
enum rof_code {
    ROF_OK = 0,
    ROF_CANCELLED = 1,
    ROF_UNKNOWN = 2,
    ROF_INVALID_ARGUMENT = 3,
    ROF_DEADLINE_EXCEEDED = 4,
    ROF_NOT_FOUND = 5,
    ROF_ALREADY_EXISTS = 6,
    ROF_PERMISSION_DENIED = 7,
    ROF_RESOURCE_EXHAUSTED = 8,
    ROF_FAILED_PRECONDITION = 9,
    ROF_ABORTED = 10,
    ROF_OUT_OF_RANGE = 11,
    ROF_UNIMPLEMENTED = 12,
    ROF_INTERNAL = 13,
    ROF_UNAVAILABLE = 14,
    ROF_DATA_LOSS = 15,
    ROF_UNAUTHENTICATED = 16
};

/* A struct of the kind above, zeroed, its sz set:
 *     struct rof_client_options o = ROF_STRUCT_INIT(rof_client_options);
 * (In C++, a function, so that -Wmissing-field-initializers stays quiet.) */
#ifdef __cplusplus
#define ROF_STRUCT_INIT(type) rof_struct_init<struct type>()
#else
#define ROF_STRUCT_INIT(type) \
    { .sz = sizeof(struct type) }
#endif

/* Longest message kept, terminating NUL included; longer ones are cut. */
#define ROF_ERROR_MAX 512

struct rof_error {
    enum rof_code code;
    char message[ROF_ERROR_MAX]; /* "" on success */
};

/* "OK", "NOT_FOUND", ... as gRPC spells them; "UNKNOWN" for a value
 * outside the enum.  Static strings; never NULL. */
ROF_EXPORT const char* rof_code_name(enum rof_code code);

/* --- the control client: rof_client_open(3) ----------------------------- */

/* ROF_ACCESS_* as kmod/include/uapi/rof.h spells them (the same tokens, so
 * both headers may be included). */
#ifndef ROF_ACCESS_READ
#define ROF_ACCESS_READ (1U << 0)
#define ROF_ACCESS_WRITE (1U << 1)
#define ROF_ACCESS_ATOMIC (1U << 2)
#define ROF_ACCESS_ALL (ROF_ACCESS_READ | ROF_ACCESS_WRITE | ROF_ACCESS_ATOMIC)
#endif

typedef struct rof_client rof_client;

/* ROF_STRUCT_INIT, then set what differs from the defaults. */
struct rof_client_options {
    size_t sz; /* sizeof(struct rof_client_options) */
    /* A unix socket path (absolute, or "unix:PATH"), or "HOST:PORT" /
     * "[V6ADDR]:PORT" for rofd's TLS listener.  NULL or "": $ROF_SOCKET,
     * else /run/rof/rofd.sock. */
    const char* target;
    /* TCP only: PEM files of rofd's CA, of this client's certificate and
     * key; the name rofd's certificate must carry (NULL: the host). */
    const char* tls_ca;
    const char* tls_cert;
    const char* tls_key;
    const char* tls_server_name;
    /* Every call's deadline, waiting for rofd included; 0: 10000. */
    uint32_t deadline_ms;
    /* 0: a call that finds rofd unreachable waits for it until the
     * deadline (a restart costs milliseconds); non-zero: it fails at once
     * with ROF_UNAVAILABLE, as an interactive tool wants. */
    int fail_fast;
};

/* @options may be NULL (all defaults).  Does not connect: rofd is first
 * reached by the first call, so a missing rofd shows there
 * (ROF_UNAVAILABLE, naming the socket).  On failure *@client is NULL. */
ROF_EXPORT enum rof_code rof_client_open(const struct rof_client_options* options,
                                         rof_client** client, struct rof_error* err);
/* NULL is allowed. */
ROF_EXPORT void rof_client_close(rof_client* client);
/* The target as resolved: "unix:/run/rof/rofd.sock". */
ROF_EXPORT const char* rof_client_target(const rof_client* client);

enum rof_health {
    ROF_HEALTH_UNKNOWN = 0,
    ROF_HEALTH_SERVING = 1,
    ROF_HEALTH_NOT_SERVING = 2,
    ROF_HEALTH_SERVICE_UNKNOWN = 3
};

/* grpc.health.v1 Check of @service (NULL or "": rofd as a whole). */
ROF_EXPORT enum rof_code rof_client_health(rof_client* client, const char* service,
                                           enum rof_health* health, struct rof_error* err);

#define ROF_STATUS_STR 64

/* Control.GetStatus, the parts a C program needs; strings are cut to fit. */
struct rof_daemon_status {
    size_t sz;                           /* set by the caller: sizeof(struct rof_daemon_status) */
    char module_version[ROF_STATUS_STR]; /* rof.ko's release */
    uint32_t abi_major;
    uint32_t abi_minor;
    char daemon_version[ROF_STATUS_STR]; /* rofd's release */
    uint64_t uptime_s;
    uint64_t policy_generation;
    uint32_t devices;            /* RDMA devices the module tracks */
    char caller[ROF_STATUS_STR]; /* who rofd took the caller for: "tenant kv" */
};

ROF_EXPORT enum rof_code rof_client_status(rof_client* client, struct rof_daemon_status* status,
                                           struct rof_error* err);

/* Programs.LoadProgram from .rofs source text.  @tenant NULL or "": the
 * caller's own; @file: the name errors point at (NULL: "<name>.rofs").
 * The loaded program's tag in *@tag (may be NULL).  A program the
 * assembler or verifier rejects is ROF_INVALID_ARGUMENT with
 * "file:line:col: reason" in the message. */
ROF_EXPORT enum rof_code rof_program_load(rof_client* client, const char* tenant, const char* name,
                                          const char* source, const char* file, uint64_t* tag,
                                          struct rof_error* err);
/* Programs.ReplaceProgram: the program called @name of @tenant replaced by
 * the one in @source, in one step (no invoke of its tag fails meanwhile;
 * they run the new program from then on).  The new tag in *@tag (may be
 * NULL); @file as rof_program_load's.  ROF_NOT_FOUND: no program @name. */
ROF_EXPORT enum rof_code rof_program_replace(rof_client* client, const char* tenant,
                                             const char* name, const char* source, const char* file,
                                             uint64_t* tag, struct rof_error* err);
/* Programs.UnloadProgram by name. */
ROF_EXPORT enum rof_code rof_program_unload(rof_client* client, const char* tenant,
                                            const char* name, struct rof_error* err);
/* Programs.GetProgram by name: the tag an invoke names. */
ROF_EXPORT enum rof_code rof_program_tag(rof_client* client, const char* tenant, const char* name,
                                         uint64_t* tag, struct rof_error* err);

/* --- sessions: rof_session_open(3) ---------------------------------------- */

typedef struct rof_session rof_session;

struct rof_region_request {
    const char* name;
    uint32_t access; /* ROF_ACCESS_* bits; 0: everything the region allows */
};

/* ROF_STRUCT_INIT; 0 and NULL mean the default. */
struct rof_session_options {
    size_t sz;          /* sizeof(struct rof_session_options) */
    const char* tenant; /* NULL or "": the caller's own */
    const struct rof_region_request* regions;
    size_t nregions;
    /* Where to connect; NULL: the address rofd returned.  An IPv4 or IPv6
     * literal ("fd00::1", "fe80::1%eth0"). */
    const char* address;
    uint32_t idle_timeout_ms;    /* 0: the policy's */
    size_t max_transfer;         /* largest read/write; 0: 4096 */
    uint32_t depth;              /* one-sided operations in flight; 0: 64 */
    uint32_t connect_timeout_ms; /* 0: 10000 */
    uint32_t op_timeout_ms;      /* deadline of a synchronous verb; 0: 10000 */
    uint32_t flags;              /* ROF_SESSION_* */
};

/* rof_session_options.flags: synchronous verbs spin until their answer, and
 * an empty rof_poll() makes no system call (the completion fd is
 * then not armed): rof::SessionOptions::busy_poll. */
#define ROF_SESSION_BUSY_POLL 1u

/* A region granted to the session.  @name stays valid until the session is
 * closed. */
struct rof_granted_region {
    size_t sz; /* set by the caller: sizeof(struct rof_granted_region) */
    const char* name;
    uint32_t id;     /* the module's region id */
    uint32_t access; /* ROF_ACCESS_* as granted */
    uint64_t size;   /* bytes */
};

/* Sessions.OpenSession through @client, then connect with librdmacm.  The
 * client is only used during the call.  On failure *@session is NULL. */
ROF_EXPORT enum rof_code rof_session_open(rof_client* client,
                                          const struct rof_session_options* options,
                                          rof_session** session, struct rof_error* err);
/* Disconnects; the module then closes the session.  NULL is allowed. */
ROF_EXPORT void rof_session_close(rof_session* session);

ROF_EXPORT uint32_t rof_session_id(const rof_session* session);
/* Requests in flight the module allows. */
ROF_EXPORT uint32_t rof_session_credits(const rof_session* session);
/* The session's largest message either way (1024 .. 65536: the tenant
 * policy's [sessions] message_bytes).  rof_invoke's arguments are at most
 * msg_size - 24 bytes (more is ROF_INVALID_ARGUMENT), a program's response
 * at most msg_size - 32; one whose resp_max is larger does not run on the
 * session (ROF_FAILED_PRECONDITION, status ROF_ST_MSG_SIZE).  0 for NULL. */
ROF_EXPORT uint32_t rof_session_msg_size(const rof_session* session);
/* The peer as connected: "192.0.2.1:18515" or "[fd00::1]:18515". */
ROF_EXPORT const char* rof_session_peer(const rof_session* session);
ROF_EXPORT size_t rof_session_region_count(const rof_session* session);
/* Region @index (0 .. count - 1), or ROF_OUT_OF_RANGE. */
ROF_EXPORT enum rof_code rof_session_region(const rof_session* session, size_t index,
                                            struct rof_granted_region* region,
                                            struct rof_error* err);
/* The granted region called @name, or ROF_NOT_FOUND. */
ROF_EXPORT enum rof_code rof_session_region_find(const rof_session* session, const char* name,
                                                 struct rof_granted_region* region,
                                                 struct rof_error* err);
/* The tag of the tenant's program @name, looked up in rofd when first asked
 * for and remembered (or as the last rof_session_learn_programs() listed
 * it), or ROF_NOT_FOUND. */
ROF_EXPORT enum rof_code rof_session_program_tag(const rof_session* session, const char* name,
                                                 uint64_t* tag, struct rof_error* err);
/* Lists the tenant's programs through @client: what the session
 * remembers is replaced (after a replace or reload). */
ROF_EXPORT enum rof_code rof_session_learn_programs(rof_session* session, rof_client* client,
                                                    struct rof_error* err);

/* --- synchronous verbs: rof_read(3) ----------------------------------------- */

/* What a program's invoke returned. */
struct rof_invoke_reply {
    uint32_t prog_status; /* the program's exit/respond status */
    uint32_t insns;       /* instructions executed */
    size_t len;           /* response bytes written to the caller's buffer */
};

/* Offsets are bytes from the region's start; @len at most the session's
 * max_transfer.  Each blocks until done or the op timeout. */
ROF_EXPORT enum rof_code rof_read(rof_session* session, const char* region, uint64_t offset,
                                  void* buf, size_t len, struct rof_error* err);
ROF_EXPORT enum rof_code rof_write(rof_session* session, const char* region, uint64_t offset,
                                   const void* buf, size_t len, struct rof_error* err);
/* Compare-and-swap / fetch-and-add on 8 aligned bytes; the value found
 * before the operation in *@old (may be NULL). */
ROF_EXPORT enum rof_code rof_cas(rof_session* session, const char* region, uint64_t offset,
                                 uint64_t expected, uint64_t desired, uint64_t* old,
                                 struct rof_error* err);
ROF_EXPORT enum rof_code rof_faa(rof_session* session, const char* region, uint64_t offset,
                                 uint64_t add, uint64_t* old, struct rof_error* err);
/* Runs program @tag with @args; up to @resp_cap response bytes to @resp.
 * A program's failure (prog_status != 0) is ROF_OK with the status in
 * *@reply; an executor fault is ROF_ABORTED naming the fault and pc.
 * @reply may be NULL. */
ROF_EXPORT enum rof_code rof_invoke(rof_session* session, uint64_t tag, const void* args,
                                    size_t args_len, void* resp, size_t resp_cap,
                                    struct rof_invoke_reply* reply, struct rof_error* err);
/* A round trip through the module. */
ROF_EXPORT enum rof_code rof_nop(rof_session* session, struct rof_error* err);

/* --- asynchronous verbs: rof_post_read(3) ------------------------------------ */

enum rof_verb {
    ROF_VERB_READ = 0,
    ROF_VERB_WRITE = 1,
    ROF_VERB_CAS = 2,
    ROF_VERB_FAA = 3,
    ROF_VERB_INVOKE = 4,
    ROF_VERB_NOP = 5
};

/* One finished asynchronous operation. */
struct rof_completion {
    uint64_t user; /* as passed to rof_post_*() */
    enum rof_verb verb;
    enum rof_code code;             /* ROF_OK, or why it failed */
    const char* error;              /* "" when ok; valid until the next rof_poll() */
    size_t len;                     /* read: bytes read; invoke: response bytes; cas/faa: 8 */
    uint64_t value;                 /* cas/faa: the old value */
    struct rof_invoke_reply invoke; /* invoke only */
};

/* Queued, sent at the next rof_flush()/rof_poll() or when the batch is
 * full, one doorbell per batch.  @buf and @resp must stay valid until the
 * completion is polled.  No free slot or credit: ROF_RESOURCE_EXHAUSTED
 * (poll first). */
ROF_EXPORT enum rof_code rof_post_read(rof_session* session, const char* region, uint64_t offset,
                                       void* buf, size_t len, uint64_t user, struct rof_error* err);
ROF_EXPORT enum rof_code rof_post_write(rof_session* session, const char* region, uint64_t offset,
                                        const void* buf, size_t len, uint64_t user,
                                        struct rof_error* err);
ROF_EXPORT enum rof_code rof_post_cas(rof_session* session, const char* region, uint64_t offset,
                                      uint64_t expected, uint64_t desired, uint64_t user,
                                      struct rof_error* err);
ROF_EXPORT enum rof_code rof_post_faa(rof_session* session, const char* region, uint64_t offset,
                                      uint64_t add, uint64_t user, struct rof_error* err);
ROF_EXPORT enum rof_code rof_post_invoke(rof_session* session, uint64_t tag, const void* args,
                                         size_t args_len, void* resp, size_t resp_cap,
                                         uint64_t user, struct rof_error* err);
/* Rings the doorbell for everything posted since the last flush. */
ROF_EXPORT enum rof_code rof_flush(rof_session* session, struct rof_error* err);
/* Flushes, then stores up to @n completions in @out and returns how many
 * (0 .. @n).  Waits up to @timeout_ms for the first (0: does not wait;
 * negative: waits as long as it takes).  A failure of the session itself
 * returns the negated code (-ROF_UNAVAILABLE, ...) and fills @err; a failed
 * operation is a completion with its own code. */
ROF_EXPORT int rof_poll(rof_session* session, struct rof_completion* out, size_t n, int timeout_ms,
                        struct rof_error* err);
/* Operations posted and not yet polled. */
ROF_EXPORT size_t rof_outstanding(const rof_session* session);
/* For an event loop (poll(2), epoll): readable when rof_poll() may return
 * completions.  A rof_poll() that returns 0 arms it: before waiting on
 * it, and after it polls readable, call rof_poll() until it returns 0.
 * Owned by the session: do not close it.  -1 for a NULL session. */
ROF_EXPORT int rof_completion_fd(const rof_session* session);

#ifdef __cplusplus
}

/* ROF_STRUCT_INIT in C++. */
template <typename T>
inline T rof_struct_init() {
    T v{};
    v.sz = sizeof(T);
    return v;
}
#endif

#endif /* ROF_H */
