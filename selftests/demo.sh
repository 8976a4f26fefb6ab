#!/bin/bash
# What `make demo` shows inside the VM (selftests/vm/run --mode demo): the
# kvstore of examples/kvstore serving memcached's protocol from rof
# regions, under load from rof-kvload, while rofd and then the kvstore
# server are killed (SIGKILL) and restarted; another tenant refused kv's
# table; the audit.  selftests/tests/kvstore-demo runs this same script
# with DEMO_SUMMARY=FILE and checks the key=value summary it writes there.
#
# DEMO_SECONDS (default 30): how long rof-kvload runs at least (it is
# stopped with SIGTERM once both kills are behind it); DEMO_KEYS its keys;
# DEMO_RATE its operations a second (rof-kvload --rate; default 0, as fast
# as it goes); DEMO_PROGRAMS the build of kv-get, kv-put and kv-del
# rof-kvstore loads (--programs: rofs, the default, or c: compiled with
# clang at its first start, kept in $S/images for the restart);
# DEMO_IMAGES, with c, a directory of their objects prepared for
# DEMO_ITEMS (rof-kvstore --prepare; the build makes
# $ROF_BUILD/examples/kv-images), copied to $S/images before the first
# start: rof-kvstore then runs no clang, and is given none (ROF_CLANG
# names no file), so a start that needed one fails.  DEMO_CONNECT_MS
# (default 60000): how long the sessions of rof-kv and rof-kvload may take
# to connect (--connect-timeout; librof's own 10 s is short for an
# emulated guest on a loaded host, where rof-kvload's first ran out of it).
. "$ROF_SRC/selftests/lib.sh"
set -u

PATH=$ROF_BUILD/examples:$PATH
DEMO_SECONDS=${DEMO_SECONDS:-30}
DEMO_KEYS=${DEMO_KEYS:-1000}
DEMO_RATE=${DEMO_RATE:-0}
DEMO_CONNECT_MS=${DEMO_CONNECT_MS:-60000}
# 2000 items keep the regions small (kv_heap near 1 MiB).
DEMO_ITEMS=${DEMO_ITEMS:-2000}
DEMO_PROGRAMS=${DEMO_PROGRAMS:-rofs}
DEMO_IMAGES=${DEMO_IMAGES:-}
GUEST_UID=1003
S=$ROF_SCRATCH/demo
rm -rf "$S" && mkdir -p "$S"
summary=()
failed=0
note() { summary+=("$1=$2"); }
fail() { echo "!! FAILED: $*"; failed=$((failed + 1)); }
section() { printf '\n== %s\n' "$*"; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }

# The kvstore's tenant "kv" (uid 1001) may create regions and load
# programs; "guest" (uid 1003) owns nothing and is granted nothing.
demo_policy() {
	mkdir -p "$ROF_ETC/tenants.d"
	rm -f "$ROF_ETC"/tenants.d/*.toml
	cat >"$ROF_ETC/rofd.toml" <<-EOF
	[sessions]
	address = "$ROF_ADDR"
	EOF
	cat >"$ROF_ETC/tenants.d/kv.toml" <<-EOF
	name = "kv"
	control_rate = 0
	audit = "sessions"
	[quota]
	sessions = 32
	programs = 16
	regions = 8
	region_bytes = "96MiB"
	[sessions]
	message_bytes = "8KiB"   # kv-get answers a 4096-byte value in one response
	[identity]
	uids = [$ROF_KV_UID]
	EOF
	cat >"$ROF_ETC/tenants.d/guest.toml" <<-EOF
	name = "guest"
	control_rate = 0
	[identity]
	uids = [$GUEST_UID]
	[quota]
	region_bytes = 0
	regions = 0
	sessions = 4
	programs = 0
	EOF
}

# kv's clients run as its uid; rof-kvstore runs as root for tenant kv (it
# maps its regions: /dev/rof is root's in the VM).
as_kv() { as_uid "$ROF_KV_UID" "$@"; }
rofctl_() { rofctl --socket "$ROF_SOCKET" "$@"; }

KV_PID=
kvstore_ready() { grep -q '^rof-kvstore: ready' "$S/kvstore.out"; }
# Ready, or gone: the two events a start ends in (a loaded host takes its
# time; the test's own limit bounds it).
kvstore_started() { kvstore_ready || ! kill -0 "$KV_PID" 2>/dev/null; }
if [ -n "$DEMO_IMAGES" ]; then
	mkdir -p "$S/images" && cp "$DEMO_IMAGES"/*.o "$S/images/"
	export ROF_CLANG=$S/no-clang
fi
kvstore_start() {
	: >"$S/kvstore.out"
	# --timeout: a loaded host in TCG can keep rofd off the CPU for more
	# than the default 10 s (a restart after SIGKILL failed so).
	rof-kvstore --socket "$ROF_SOCKET" --tenant kv --items "$DEMO_ITEMS" --timeout 120000 \
		--programs "$DEMO_PROGRAMS" --image-cache "$S/images" \
		>"$S/kvstore.out" 2>>"$S/kvstore.err" &
	KV_PID=$!
	until kvstore_started; do nap 0.2; done
	if kvstore_ready; then
		sed 's/^/   /' "$S/kvstore.out"
	else
		cat "$S/kvstore.err"
		return 1
	fi
}

# Which build of kv-get, kv-put and kv-del rofd runs: "rofs", "c", or the
# programs' own answers when they differ ("?" for neither).  rofd loaded
# each with its verified worst case as its budget, and those of
# programs/NAME.c and NAME.rofs differ (docs/programs.md; the geometry
# changes neither): a program whose budget is NAME.rofs's runs the
# assembly, one with another budget the C build rof-kvstore says it loaded
# ("programs kv-*.c").  NAME.rofs's worst cases are verified here, offline;
# the C's would cost three more clang runs under emulation, where each
# takes seconds.  worst_cases fills worst_rofs, once: programs_build runs
# in a subshell.
declare -A worst_rofs=()
worst_cases() {
	local p
	for p in kv-get kv-put kv-del; do
		worst_rofs[$p]=$(rofctl -j prog verify --offline "$ROF_SRC/programs/$p.rofs" 2>/dev/null |
			jq -r '.worst_case // empty | tostring')
	done
}
programs_build() {
	local p b got=()
	for p in kv-get kv-put kv-del; do
		b=$(rofctl_ -j prog list --tenant kv 2>/dev/null |
			jq -r --arg n "$p" '.programs[]? | select(.name == $n) | .budget | tostring')
		if [ -n "$b" ] && [ "$b" = "${worst_rofs[$p]:-}" ]; then
			got+=(rofs)
		elif [ -n "$b" ] && [ -n "${worst_rofs[$p]:-}" ] &&
			grep -q 'programs kv-\*\.c$' "$S/kvstore.out"; then
			got+=(c)
		else
			got+=("?")
		fi
		echo "   $p: budget ${b:-none}; worst case of $p.rofs ${worst_rofs[$p]:--}" >&2
	done
	if [ "${got[0]}" = "${got[1]}" ] && [ "${got[1]}" = "${got[2]}" ]; then
		echo "${got[0]}"
	else
		echo "${got[*]}"
	fi
}

# Loads DEMO keys through memcached's text protocol (pymemcache), reads
# them back the same way, and prints one line.
memcache_load() {
	python3 - <<-'EOF'
	from pymemcache.client.base import Client
	c = Client(("127.0.0.1", 11211), connect_timeout=10, timeout=30)
	keys = ["demo:%03d" % i for i in range(200)]
	for k in keys:
	    c.set(k, ("value of %s, stored through memcached's protocol" % k).encode())
	got = c.get_many(keys)
	ok = sum(1 for k in keys if got.get(k) == ("value of %s, stored through memcached's protocol" % k).encode())
	print("set %d keys with pymemcache, read back %d identical" % (len(keys), ok))
	raise SystemExit(0 if ok == len(keys) else 1)
	EOF
}

# kvload_at N: rof-kvload's run has printed its Nth progress line.
kvload_at() { grep -Eq "^rof-kvload: +$1s " "$S/kvload.err"; }
kvload_started() { grep -q '^rof-kvload: run started' "$S/kvload.err"; }

section "rof.ko and rofd"
demo_policy
if rofd_start; then
	chmod 0666 "$ROF_SOCKET"
	rofctl_ status
	echo "tenants:"
	rofctl_ tenant list 2>&1 | head -5
else
	fail "rofd does not start"
fi

section "rof-kvstore: the table and the values live in rof regions"
kvstore_start || fail "rof-kvstore is not ready"
rofctl_ region list --tenant kv

section "memcached's protocol on 127.0.0.1:11211"
if out=$(memcache_load 2>&1); then
	echo "$out"
	note memcache ok
else
	echo "$out"
	fail "loading through memcached's protocol"
	note memcache failed
fi
printf 'offload GET of demo:007 (rof-kv, the kv-get program): '
if v=$(as_kv rof-kv --socket "$ROF_SOCKET" --connect-timeout "$DEMO_CONNECT_MS" get demo:007 2>&1) &&
	grep -q "value of demo:007, stored through memcached's protocol" <<<"$v"; then
	echo "$v"
	note offload_get ok
else
	echo "$v"
	fail "the offload GET does not return the value set over TCP"
	note offload_get failed
fi

section "the kv programs, loaded by rof-kvstore"
if rofctl_ prog list --tenant kv >"$S/progs" 2>&1 &&
	[ "$(grep -Ec 'kv-(get|put|del)' "$S/progs")" -ge 3 ]; then
	note programs ok
else
	fail "kv-get, kv-put, kv-del are not all loaded"
	note programs failed
fi
cat "$S/progs"
worst_cases
build=$(programs_build)
echo "   the build rofd runs: $build (rof-kvstore --programs $DEMO_PROGRAMS)"
note programs_build "$build"
[ "$build" = "$DEMO_PROGRAMS" ] || fail "rofd runs the $build build of the kv programs, not $DEMO_PROGRAMS"

section "rof-kvload: YCSB A, zipf, 2 threads, ${DEMO_SECONDS}s or more; rofd and rof-kvstore killed meanwhile"
# setpriv (as_uid's) execs rof-kvload, so LOAD_PID is rof-kvload's own and
# the SIGTERM that ends the run reaches it.
setpriv --reuid "$ROF_KV_UID" --regid "$ROF_KV_UID" --clear-groups \
	rof-kvload --socket "$ROF_SOCKET" --keys "$DEMO_KEYS" --threads 2 --workload a --dist zipf \
	--value-size 32-200 --preload --seconds 900 --rate "$DEMO_RATE" --json \
	--connect-timeout "$DEMO_CONNECT_MS" \
	>"$S/kvload.json" 2>"$S/kvload.err" &
LOAD_PID=$!
kill_rofd='' kill_kv=''
# Its run started, or it is gone: no limit of the demo's own.
until kvload_started || ! kill -0 "$LOAD_PID" 2>/dev/null; do nap 0.2; done
if kvload_started; then
	t0=$(now)
	echo "   run started"
	wait_for 30 kvload_at 3
	kill -KILL "$ROFD_PID"
	wait "$ROFD_PID" 2>/dev/null
	kill_rofd=$(since "$t0" "$(now)")
	echo "   +${kill_rofd}s  kill -9 rofd"
	ROFD_PID=
	rofd_start || fail "rofd does not restart"
	chmod 0666 "$ROF_SOCKET"
	# The audit from here on (a stream ends with the rofd it came from).
	rofctl_ -j audit tail -f --tenant kv >"$S/audit" 2>/dev/null &
	AUDIT_PID=$!
	echo "   +$(since "$t0" "$(now)")s  rofd serving again"
	n=$(grep -c '^rof-kvload: ' "$S/kvload.err")
	wait_for 30 sh -c "[ \$(grep -c '^rof-kvload: ' '$S/kvload.err') -gt $((n + 1)) ]"
	kill -KILL "$KV_PID"
	wait "$KV_PID" 2>/dev/null
	kill_kv=$(since "$t0" "$(now)")
	echo "   +${kill_kv}s  kill -9 rof-kvstore"
	kvstore_start >/dev/null || fail "rof-kvstore does not restart"
	echo "   +$(since "$t0" "$(now)")s  rof-kvstore ready again (same regions)"
	# The run goes on for three more seconds of progress, and until
	# DEMO_SECONDS at least; then it is stopped (whatever the machine's
	# speed, both kills fall inside it).
	n=$(grep -c '^rof-kvload: ' "$S/kvload.err")
	wait_for 60 sh -c "[ \$(grep -c '^rof-kvload: ' '$S/kvload.err') -gt $((n + 3)) ]"
	wait_for "$((DEMO_SECONDS + 60))" kvload_at "$DEMO_SECONDS"
else
	fail "rof-kvload does not start its run"
	cat "$S/kvload.err"
fi
kill -TERM "$LOAD_PID" 2>/dev/null
wait "$LOAD_PID"
load_rc=$?
t_end=$(since "${t0:-$(now)}" "$(now)")
grep -E '^rof-kvload: +[0-9]+s ' "$S/kvload.err" | sed 's/^rof-kvload: /   /' | awk 'NR % 5 == 0'
grep -v -E '^rof-kvload: +[0-9]+s |run started' "$S/kvload.err" | sed 's/^/   /'
note kvload_rc "$load_rc"
note kill_rofd "$kill_rofd"
note kill_kvstore "$kill_kv"
note run_end "$t_end"
[ "$load_rc" = 0 ] || fail "rof-kvload exited with status $load_rc"
# rof-kvstore restarted loaded its programs again (ReplaceProgram or kept).
build=$(programs_build)
echo "   after the restarts, the build rofd runs: $build"
note programs_build_restarted "$build"
# The C builds' objects kept for the restart (--image-cache): one a program.
note images "$(find "$S/images" -name '*.o' 2>/dev/null | wc -l)"
[ "$build" = "$DEMO_PROGRAMS" ] || fail "after the restarts rofd runs the $build build, not $DEMO_PROGRAMS"

section "tenant guest (uid $GUEST_UID) asks to map kv's table"
echo "   \$ rofctl region token kv/kv_index --access r"
as_uid "$GUEST_UID" rofctl --socket "$ROF_SOCKET" region token kv/kv_index --access r \
	>"$S/refusal.out" 2>"$S/refusal.err"
refusal_rc=$?
sed 's/^/   /' "$S/refusal.out" "$S/refusal.err"
echo "   (exit status $refusal_rc)"
note refusal_rc "$refusal_rc"
# The same with -j, for the code rofctl names.
refusal_code=$(as_uid "$GUEST_UID" rofctl --socket "$ROF_SOCKET" -j region token kv/kv_index --access r \
	2>/dev/null | jq -r '.code // empty')
note refusal_code "$refusal_code"
if [ "$refusal_rc" != 5 ] || [ "$refusal_code" != PERMISSION_DENIED ]; then
	fail "guest was not refused with PERMISSION_DENIED"
fi

section "audit (the last records of tenant kv)"
if [ -n "${AUDIT_PID:-}" ]; then
	kill "$AUDIT_PID" 2>/dev/null
	wait "$AUDIT_PID" 2>/dev/null
	grep -c . "$S/audit" | sed 's/^/   records since rofd restarted: /'
	# The last session opens and closes and the last records whatever their
	# kind, once each, in time order.
	fmt='"   \(.time // "") \(.kind // "" | tostring | sub("^AUDIT_KIND_"; "")) session \(.session // 0) status \(.status // 0) \(.message // "")"'
	{
		jq -r "select((.kind // \"\") | tostring | test(\"SESSION\")) | $fmt" "$S/audit" 2>/dev/null | tail -n 4
		tail -n 3 "$S/audit" | jq -r "$fmt" 2>/dev/null
	} | sort -u
fi

section "rof-kvstore stops on SIGTERM"
if kill -TERM "$KV_PID" 2>/dev/null; then
	wait "$KV_PID"
	kv_rc=$?
else
	kv_rc="gone"
fi
echo "   exit status $kv_rc"
note kvstore_term_rc "$kv_rc"
if [ "$kv_rc" != 0 ]; then
	fail "rof-kvstore exited with status $kv_rc on SIGTERM"
	tail -n 20 "$S/kvstore.err" | sed 's/^/   kvstore: /'
fi

# Leave rof.ko empty, as every test does.
ids=$(rofd_call Tenants.ListTenants 2>/dev/null | jq -r '.tenants[].id')
rofd_stop
for id in $ids; do ksess-client tenant-destroy "$id" force >/dev/null 2>&1; done

section "summary"
if [ -s "$S/kvload.json" ]; then
	jq -r --arg kr "$kill_rofd" --arg kk "$kill_kv" '
		"ops \(.ops) in \(.seconds | floor) s: \(.ops_per_sec | floor) ops/s over 2 sessions",
		"GET p50 \(.get.p50_us) us  p99 \(.get.p99_us) us;  SET p50 \(.set.p50_us) us  p99 \(.set.p99_us) us",
		"errors \(.errors)  wrong values \(.wrong)  (misses \(.misses))",
		"rofd killed at +\($kr)s, rof-kvstore killed at +\($kk)s: the sessions and the programs lived on"' \
		"$S/kvload.json"
	for k in ops seconds ops_per_sec errors wrong; do note "$k" "$(jq -r ".$k" "$S/kvload.json")"; done
	note get_p50_us "$(jq -r .get.p50_us "$S/kvload.json")"
	note get_p99_us "$(jq -r .get.p99_us "$S/kvload.json")"
else
	fail "rof-kvload wrote no summary"
fi
echo "guest refused kv's table: exit $refusal_rc, $refusal_code"
note failed "$failed"
if [ -n "${DEMO_SUMMARY:-}" ]; then
	printf '%s\n' "${summary[@]}" >"$DEMO_SUMMARY"
fi
if [ "$failed" = 0 ]; then echo "demo: every step succeeded"; else echo "demo: $failed step(s) failed"; fi
[ "$failed" = 0 ]
