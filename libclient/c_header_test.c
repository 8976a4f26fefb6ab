/* SPDX-License-Identifier: MIT */
/* rof.h is C: this file is compiled as C99 with -pedantic -Werror and run
 * (ctest rof_c_header_test).  It touches every type of the header and calls
 * what needs no rofd. */
#include "rof.h"

#include <stdio.h>
#include <string.h>

static int failures;

static void check(int ok, const char* what) {
    if (!ok) {
        fprintf(stderr, "FAIL: %s\n", what);
        failures++;
    }
}

int main(void) {
    struct rof_error err;
    struct rof_client_options copts = ROF_STRUCT_INIT(rof_client_options);
    struct rof_session_options sopts = ROF_STRUCT_INIT(rof_session_options);
    struct rof_region_request req = {"table", ROF_ACCESS_ALL};
    struct rof_granted_region region = ROF_STRUCT_INIT(rof_granted_region);
    struct rof_daemon_status status = ROF_STRUCT_INIT(rof_daemon_status);
    struct rof_invoke_reply reply;
    struct rof_completion completion;
    enum rof_health health = ROF_HEALTH_UNKNOWN;
    rof_client* client = NULL;
    rof_session* session = NULL;

    memset(&reply, 0, sizeof(reply));
    memset(&completion, 0, sizeof(completion));
    sopts.regions = &req;
    sopts.nregions = 1;

    check(strcmp(rof_code_name(ROF_OK), "OK") == 0, "ROF_OK is OK");
    check(strcmp(rof_code_name(ROF_UNAUTHENTICATED), "UNAUTHENTICATED") == 0,
          "ROF_UNAUTHENTICATED");
    check(strcmp(rof_code_name((enum rof_code)99), "UNKNOWN") == 0, "99 is UNKNOWN");
    check(ROF_ACCESS_ALL == 7, "ROF_ACCESS_ALL is 7");
    check(sizeof(err.message) == ROF_ERROR_MAX, "struct rof_error holds ROF_ERROR_MAX bytes");

    check(copts.sz == sizeof(copts) && sopts.sz == sizeof(sopts) && region.sz == sizeof(region) &&
              status.sz == sizeof(status) && copts.target == NULL && sopts.nregions == 1,
          "ROF_STRUCT_INIT zeroes a struct and sets its sz");
    check(rof_client_open(&copts, NULL, &err) == ROF_INVALID_ARGUMENT &&
              err.code == ROF_INVALID_ARGUMENT && err.message[0] != '\0',
          "rof_client_open without an out pointer: ROF_INVALID_ARGUMENT and a message");
    check(rof_client_status(NULL, &status, NULL) == ROF_INVALID_ARGUMENT,
          "rof_client_status(NULL): ROF_INVALID_ARGUMENT, err may be NULL");
    check(rof_client_health(client, NULL, &health, &err) == ROF_INVALID_ARGUMENT,
          "rof_client_health(NULL)");
    check(strcmp(rof_client_target(NULL), "") == 0, "rof_client_target(NULL) is \"\"");
    rof_client_close(NULL);
    (void)session;
    (void)reply;
    (void)completion;
    (void)region;
    (void)sopts;

    if (failures)
        return 1;
    printf("ok: rof.h compiles as C99 and its C functions run\n");
    return 0;
}
