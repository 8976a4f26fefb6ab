# shellcheck shell=bash
# selftests/ksess-lib.sh - shared set-up of the ksess-* tests (sessions of
# rof.ko): a ticket key, tenants, regions, prepared sessions, and the
# client, ksess-client (selftests/progs/ksess-client.c).
. "$ROF_SRC/selftests/lib.sh"

KSESS_KEY=${KSESS_KEY:-000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f}
KSESS_ADDR=${KSESS_ADDR:-$ROF_ADDR}
# Unique object names: the tests share one module load.
KSESS_TAG=${KSESS_TAG:-$(basename "$0")-$$}

ksess() { ksess-client "$@"; }

# Tenants a test creates are destroyed (forced) when it exits, so that
# the module can be unloaded after the suite.  Recorded in a file: the
# creating function runs in command substitutions.
KSESS_TENANTS_FILE=$ROF_SCRATCH/ksess-tenants.$$
ksess_tenant() {
	local id
	id=$(ksess tenant "$1") || return 1
	echo "$id" >>"$KSESS_TENANTS_FILE"
	echo "$id"
}
ksess_remember_tenant() { echo "$1" >>"$KSESS_TENANTS_FILE"; }
ksess_cleanup() {
	local id
	[ -f "$KSESS_TENANTS_FILE" ] || return 0
	while read -r id; do
		ksess tenant-destroy "$id" force >/dev/null 2>&1
	done <"$KSESS_TENANTS_FILE"
	rm -f "$KSESS_TENANTS_FILE"
}
trap ksess_cleanup EXIT

# ksess_setup: set the key; create tenant A with a 64 KiB region (rwa).
# Sets TENANT_A REGION_A.
# shellcheck disable=SC2034 # REGION_A is the tests'
ksess_setup() {
	ksess key "$KSESS_KEY" || return 1
	TENANT_A=$(ksess_tenant "$KSESS_TAG-a") || return 1
	REGION_A=$(ksess region "$TENANT_A" "$KSESS_TAG-ra" 65536 rwa) || return 1
}

# ksess_prepare TENANT [prepare options]: sets SESSION and TICKET.
# shellcheck disable=SC2034 # SESSION and TICKET are the tests'
ksess_prepare() {
	local out
	out=$(ksess prepare "$@") || return 1
	SESSION=${out%% *}
	TICKET=${out#* }
}

# ksess_audit_has PATTERN: an audit record line matching PATTERN is pending.
# Records are consumed; keep them in $ROF_SCRATCH/ksess-audit.log.
ksess_audit_has() {
	ksess audit >>"$ROF_SCRATCH/ksess-audit.log" 2>&1
	grep -Eq "$1" "$ROF_SCRATCH/ksess-audit.log"
}
