# shellcheck shell=bash
# selftests/lib.sh - helpers for the end-to-end test scripts: TAP output,
# the soft-RoCE set-up, rof.ko and rofd.  Sourced; works in the VM and on
# a real RDMA host (set ROF_NETDEV to use an existing device's netdev).

ROF_SRC=${ROF_SRC:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
ROF_BUILD=${ROF_BUILD:-$ROF_SRC/build}
ROF_SCRATCH=${ROF_SCRATCH:-${TMPDIR:-/tmp}}
ROF_KO=${ROF_KO:-$ROF_BUILD/kmod/rof.ko}
ROF_RXE=${ROF_RXE:-rxe0}
# RFC 2544's benchmarking range: never routed, and the VM has no NIC anyway.
ROF_ADDR=${ROF_ADDR:-198.18.0.1}
ROF_PEER_ADDR=${ROF_PEER_ADDR:-198.18.0.2}
ROF_SOCKET=${ROF_SOCKET:-/run/rof/rofd.sock}
export ROF_SRC ROF_BUILD ROF_SCRATCH ROF_KO ROF_RXE ROF_ADDR ROF_PEER_ADDR ROF_SOCKET

# --- TAP ------------------------------------------------------------------
_tap_n=0
_tap_failed=0

tap_plan() { echo "1..$1"; }
tap_ok() { _tap_n=$((_tap_n + 1)); echo "ok $_tap_n - $*"; }
tap_fail() {
	_tap_n=$((_tap_n + 1))
	_tap_failed=$((_tap_failed + 1))
	echo "not ok $_tap_n - $*"
}
tap_skip() { _tap_n=$((_tap_n + 1)); echo "ok $_tap_n - $1 # SKIP ${2:-}"; }
tap_diag() { sed 's/^/# /'; }

# tap_check DESCRIPTION COMMAND...: ok if COMMAND succeeds; its output is
# shown as diagnostics when it does not.  COMMAND runs in a subshell, so
# it cannot change this shell's variables (use if/tap_ok for rofd_start).
tap_check() {
	local desc=$1 out
	shift
	if out=$("$@" 2>&1); then
		tap_ok "$desc"
	else
		tap_fail "$desc"
		printf '%s\n' "$out" | tap_diag
	fi
}

# tap_done: exit status for the script (non-zero when anything failed).
tap_done() { [ "$_tap_failed" -eq 0 ]; exit $?; }

# nap SECONDS: sleep (SECONDS may have a fraction).  Under bash without a
# process: a read that times out on a FIFO that this shell holds open for
# reading and writing and nothing writes to (made when this file is
# sourced).  A fork and exec costs ~0.15 s of CPU under TCG, where a loop
# of sleep, date and a check ran a vCPU flat out while it waited.
# usecs VAR: VAR = microseconds since the epoch (under bash, no process).
if [ -n "${BASH_VERSION:-}" ]; then
	# (In an eval: bash's syntax, and sh -c sources this file too.)
	eval 'nap() {
		if [ -z "${_nap_fd:-}" ]; then
			local f=$ROF_SCRATCH/.nap.$BASHPID
			rm -f "$f"
			mkfifo -m 0600 "$f" 2>/dev/null && exec {_nap_fd}<>"$f" || { sleep "$1"; return; }
			rm -f "$f"
		fi
		read -r -t "$1" -u "$_nap_fd" _ || :
	}
	usecs() { printf -v "$1" %s "${EPOCHREALTIME/./}"; }'
	# Its FIFO now, so that the subshells (tap_check's) inherit it.
	nap 0
else
	nap() { sleep "$1"; }
	usecs() { eval "$1=\$((\$(date +%s) * 1000000))"; }
fi

# jq: gojq where it is installed.  jq 1.6 compiles its builtins at every
# start, ~0.8 s of guest CPU under TCG, and the tests start it hundreds of
# times; gojq starts in a quarter of that.  gojq always prints an object's
# keys sorted, so jq's -S is implied (and dropped: gojq has no such flag).
# A command run by `sh -c` or exec'd gets jq itself.
if [ -n "${BASH_VERSION:-}" ] && command -v gojq >/dev/null 2>&1; then
	eval 'jq() {
		local a=() x
		for x; do [ "$x" = -S ] || a+=("$x"); done
		command gojq "${a[@]}"
	}'
fi

# wait_for SECONDS COMMAND...: poll until COMMAND succeeds; fails when it
# has not after SECONDS, or after ROF_WAIT_MIN (300) seconds if that is
# longer.  SECONDS says how long the event takes on an idle host; the
# floor is for a loaded one (make check's lanes beside other work, under
# TCG), where an event that is late is not a failure.  Only a failing test
# waits that long, and its own limit (# rof-timeout) still bounds it.
# The polls back off, 0.1 s doubling to 1 s apart, and a pause is never
# shorter than the poll before it took: the waiting takes at most half
# the CPU from what it waits for (one vCPU, in most VM tests).
wait_for() {
	local secs=$1 start now deadline pause=100000 us frac
	[ "$secs" -ge "${ROF_WAIT_MIN:-300}" ] || secs=${ROF_WAIT_MIN:-300}
	shift
	usecs start
	deadline=$((start + secs * 1000000))
	while ! "$@" >/dev/null 2>&1; do
		usecs now
		[ "$now" -lt "$deadline" ] || return 1
		us=$((now - start))
		[ "$us" -ge "$pause" ] || us=$pause
		frac=$((us % 1000000 + 1000000))
		nap "$((us / 1000000)).${frac#1}"
		pause=$((pause * 2))
		[ "$pause" -le 1000000 ] || pause=1000000
		usecs start
	done
}

# --- soft-RoCE and the module --------------------------------------------
rxe_present() { rdma link show "$ROF_RXE/1" >/dev/null 2>&1; }

rxe_up() {
	rxe_present && return 0
	modprobe rdma_rxe && modprobe veth || return 1
	modprobe rdma_ucm 2>/dev/null
	if ! ip link show rofva >/dev/null 2>&1; then
		ip link add rofva type veth peer name rofvb || return 1
		ip addr add "$ROF_ADDR/24" dev rofva || return 1
		ip link set rofvb up && ip link set rofva up || return 1
	fi
	ip link set lo up
	rdma link add "$ROF_RXE" type rxe netdev "${ROF_NETDEV:-rofva}" || return 1
	wait_for 10 rxe_present
}

rxe_down() { rxe_present && rdma link delete "$ROF_RXE"; }

rof_loaded() { [ -d /sys/module/rof ]; }
rof_load() { rof_loaded || { modprobe ib_core && modprobe rdma_cm && insmod "$ROF_KO" "$@"; }; }
rof_unload() { ! rof_loaded || rmmod rof; }

rof_env_up() { rxe_up && rof_load; }

# --- rofd -----------------------------------------------------------------
# rofd keeps its policy and state where the test can write (the guest's
# root is the host's, read-only): one directory per test script, given
# the way systemd gives them (ConfigurationDirectory=, StateDirectory=).
ROF_ETC=$ROF_SCRATCH/$(basename "$0").etc
ROF_STATE=$ROF_SCRATCH/$(basename "$0").state
CONFIGURATION_DIRECTORY=$ROF_ETC STATE_DIRECTORY=$ROF_STATE
export ROF_ETC ROF_STATE CONFIGURATION_DIRECTORY STATE_DIRECTORY

# rofd_call METHOD [JSON]: one rof.v1 call as an outside client would make
# it (selftests/rofd-call); JSON out, "CODE: message" on stderr.
rofd_call() { "$ROF_SRC/selftests/rofd-call" --socket "$ROF_SOCKET" "$@"; }

# rofd_serving [SOCKET]: health SERVING, i.e. rofd reconciled and answers.
rofd_serving() {
	"$ROF_SRC/selftests/rofd-call" --socket "${1:-$ROF_SOCKET}" --timeout 5 Health.Check \
		2>/dev/null | grep -q '"SERVING"'
}

# rofd_two_tenants: the policy of the rofd tests.  kv (uid 1001) has a
# table with a free list, granted read-only to analytics (uid 1002), which
# has a scratch region.  Sessions connect to $ROF_ADDR.
ROF_KV_UID=1001 ROF_AN_UID=1002
rofd_two_tenants() {
	mkdir -p "$ROF_ETC/tenants.d"
	cat >"$ROF_ETC/rofd.toml" <<-EOF
	[sessions]
	address = "$ROF_ADDR"
	[limits]
	audit_streams_per_tenant = 2
	[metrics]
	enabled = true
	address = "127.0.0.1:9464"
	EOF
	cat >"$ROF_ETC/tenants.d/kv.toml" <<-EOF
	name = "kv"
	audit = "sessions"
	control_rate = 0
	[identity]
	uids = [$ROF_KV_UID]
	[quota]
	region_bytes = "64MiB"
	sessions = 16
	[[regions]]
	name = "table"
	size = "1MiB"
	access = ["read", "write", "atomic"]
	[[regions.freelists]]
	block_size = 64
	offset = 4096
	count = 1024
	[[grants]]
	region = "table"
	to = "analytics"
	EOF
	cat >"$ROF_ETC/tenants.d/analytics.toml" <<-EOF
	name = "analytics"
	control_rate = 0
	[identity]
	uids = [$ROF_AN_UID]
	[[regions]]
	name = "scratch"
	size = "64KiB"
	access = ["read", "write"]
	EOF
}

# journald_start / journald_stop: the guest's journald, as systemd runs it
# (it creates its own sockets; it needs the cgroup2 hierarchy mounted).
JOURNALD_PID=
journald_start() {
	[ -x /lib/systemd/systemd-journald ] || return 1
	mountpoint -q /sys/fs/cgroup || mount -t cgroup2 cgroup2 /sys/fs/cgroup || return 1
	mkdir -p /run/systemd/journal /run/log/journal
	/lib/systemd/systemd-journald >"$ROF_SCRATCH/journald.log" 2>&1 &
	JOURNALD_PID=$!
	wait_for 20 journalctl -n 1 -q --no-pager
}
journald_stop() {
	[ -n "$JOURNALD_PID" ] || return 0
	kill "$JOURNALD_PID"
	wait "$JOURNALD_PID" 2>/dev/null
	JOURNALD_PID=
	rm -rf /run/systemd/journal /run/log/journal
}

# as_uid UID CMD...: CMD as that uid and gid, no other groups.
as_uid() {
	local uid=$1
	shift
	setpriv --reuid "$uid" --regid "$uid" --clear-groups "$@"
}

ROFD_PID=
rofd_start() {
	local n
	n=$(_rofd_ready_lines)
	rofd --socket "$ROF_SOCKET" "$@" >>"$ROF_SCRATCH/rofd.log" 2>&1 &
	ROFD_PID=$!
	# Until its log says "serving on" (what it tells systemd with READY=1:
	# up, reconciled, health SERVING), then one `rofctl health`.  Each
	# poll is a grep: under TCG a rofctl start costs ~1.5 s of guest CPU,
	# a Python client's several, and a poll of either took CPU from the
	# rofd it waited for.
	wait_for 60 _rofd_up "$n"
	if ! kill -0 "$ROFD_PID" 2>/dev/null ||
			! rofctl --socket "$ROF_SOCKET" health >/dev/null 2>&1; then
		echo "rofd is not serving on $ROF_SOCKET:" >&2
		cat "$ROF_SCRATCH/rofd.log" >&2
		return 1
	fi
}
# _rofd_ready_lines: the "serving on" lines in rofd.log so far.
_rofd_ready_lines() {
	local n
	n=$(grep -c '^rofd: serving on ' "$ROF_SCRATCH/rofd.log" 2>/dev/null)
	echo "${n:-0}"
}
# _rofd_up N: rofd.log has more than N "serving on" lines, or rofd has
# exited (no use waiting on).
_rofd_up() {
	[ "$(_rofd_ready_lines)" -gt "$1" ] || ! kill -0 "$ROFD_PID" 2>/dev/null
}

# rofd_stop: SIGTERM, and its exit status (0 for a clean shutdown).
rofd_stop() {
	[ -n "$ROFD_PID" ] || return 0
	kill -TERM "$ROFD_PID" 2>/dev/null
	wait "$ROFD_PID"
	local rc=$?
	ROFD_PID=
	return $rc
}

# --- leaks ----------------------------------------------------------------
# rof_slab_objects: live slab objects allocated by code in rof.ko, from
# SLUB's per-call-site tracking (the VM boots with slub_debug U for the
# kmalloc caches, all rof.ko allocates from).  Equal
# numbers before and after create/destroy cycles mean nothing leaked.
rof_slab_objects() {
	cat /sys/kernel/debug/slab/*/alloc_traces 2>/dev/null |
		awk '/\[rof\]/ { n += $1 } END { print n + 0 }'
}

# rof_quiesce: returns once every free rof.ko deferred (session close
# works, region frees from its workqueue, RCU callbacks) has run; a real
# barrier, /sys/kernel/debug/rof/quiesce, not a wait for readings to agree.
rof_quiesce() {
	echo 1 >/sys/kernel/debug/rof/quiesce
}

# rof_slab_quiesced: rof_slab_objects at a quiescent point.  Equal before
# and after a cycle means nothing leaked, however loaded the machine is.
rof_slab_quiesced() {
	rof_quiesce || { echo "rof_quiesce failed" >&2; echo -1; return 1; }
	rof_slab_objects
}
