#!/bin/bash
# bench/guest.sh - rof-bench's run inside the test VM (selftests/vm/run
# --mode bench, which bench/run starts; and selftests/tests/bench-smoke):
# rof.ko and soft-RoCE are up (guest-run did that); this starts what the
# cases measure against, in the same boot:
#   - rofd with the bench's policy (tenants bench, kv, aggressor, victim,
#     t00..t63), and rof-kvstore for tenant kv, each under a respawn loop,
#     so that B3 can kill -9 them;
#   - rof-bench-server (the raw-verbs RPC and READ server), its polling
#     thread on CPU 1;
#   - stock memcached on 127.0.0.1;
# then runs rof-bench with BENCH_ARGS and writes the JSON to BENCH_OUT
# (default $ROF_SCRATCH/bench/result.json).  With BENCH_PRINT=1 it also
# prints the JSON on stdout between "# rofbench: json begin/end" lines,
# which is how the host gets it out of the VM.  Exits with rof-bench's status.
# BENCH_KV_C=1 (bench/run --kv-c) also starts a second rof-kvstore, for
# tenant kvc, on the C builds of its programs (clang runs here), which B1
# measures beside the first.
# BENCH_POLL (default B0,B1,B2,B4,B5; empty: none): after the first pass,
# with rof.ko as the VM loaded it (completion events), everything is
# stopped, rof.ko is loaded again with poll_cpus=1 (its polling thread on
# CPU 1, the CPU the raw server's polling thread has), everything starts
# again from a fresh state, and these of the cases asked for run a second
# time, as the pass "poll": ids B0@poll and so on, in the same JSON.  Then
# rof.ko is loaded as it was.  With CPU 1 offline (a test run on one CPU)
# there is no polling pass, and the log says so.
# BENCH_PERF=1 (bench/run --perf): each pass runs under `perf record -a`
# (every CPU, the kernel and rof.ko too; cpu-clock sampling, the only
# clock an emulated guest has) and its flat profile, by command and by
# symbol, 0.5% of the samples or more, follows the pass as "# bench: perf:"
# lines.
. "$ROF_SRC/selftests/rofd-lib.sh"
set -u

S=$ROF_SCRATCH/bench
rm -rf "$S" && mkdir -p "$S"
BENCH_OUT=${BENCH_OUT:-$S/result.json}
BENCH_ARGS=${BENCH_ARGS:-}
BENCH_KV_C=${BENCH_KV_C:-0}
BENCH_POLL=${BENCH_POLL-B0,B1,B2,B4,B5}
BENCH_PERF=${BENCH_PERF:-0}
RAW_PORT=18600
MC_PORT=11311
PATH=$ROF_BUILD/bench:$ROF_BUILD/examples:$PATH
log() { echo "# bench: $*" >&2; }

policy() {
	mkdir -p "$ROF_ETC/tenants.d"
	rm -f "$ROF_ETC"/tenants.d/*.toml
	cat >"$ROF_ETC/rofd.toml" <<-EOF
	[sessions]
	address = "$ROF_ADDR"
	EOF
	# The cases' own tenant (regions, programs, sessions) and the kvstore's.
	cat >"$ROF_ETC/tenants.d/bench.toml" <<-EOF
	name = "bench"
	control_rate = 0
	[quota]
	sessions = 64
	programs = 16
	regions = 8
	region_bytes = "16MiB"
	EOF
	local kv kvs=kv
	[ "$BENCH_KV_C" = 1 ] && kvs="kv kvc"
	for kv in $kvs; do
		cat >"$ROF_ETC/tenants.d/$kv.toml" <<-EOF
		name = "$kv"
		control_rate = 0
		[quota]
		sessions = 64
		programs = 16
		regions = 8
		region_bytes = "96MiB"
		credits = 16
		[sessions]
		# rof-kvstore --max-value 65536: kv-get answers up to 32768 bytes a call
		message_bytes = "64KiB"
		EOF
	done
	# B4: an aggressor limited to 500 requests/s, a victim that is not.
	cat >"$ROF_ETC/tenants.d/aggressor.toml" <<-EOF
	name = "aggressor"
	control_rate = 0
	[quota]
	sessions = 4
	programs = 4
	[rate.tenant]
	ops_per_sec = 500
	EOF
	cat >"$ROF_ETC/tenants.d/victim.toml" <<-EOF
	name = "victim"
	control_rate = 0
	[quota]
	sessions = 4
	programs = 4
	EOF
	# B6: 64 tenants of 16 sessions, 8 requests in flight each.
	local i
	for i in $(seq -w 0 63); do
		cat >"$ROF_ETC/tenants.d/t$i.toml" <<-EOF
		name = "t$i"
		control_rate = 0
		[quota]
		sessions = 20
		programs = 2
		credits = 8
		EOF
	done
}

# respawn NAME CMD...: runs CMD again whenever it exits, until $S/stop
# exists (systemd's Restart=always, for B3's kill loop).
respawn() {
	local name=$1
	shift
	(
		while [ ! -e "$S/stop" ]; do
			"$@" >>"$S/$name.out" 2>>"$S/$name.err"
		done
	) &
}

ready() { grep -q "$2" "$S/$1.out" 2>/dev/null; }

# Stops everything start_all started: the respawn loops first, then what
# they run (by name: a respawned process has a new pid), then the rest by
# pid, again each time one of them exits: a loop that had just passed its
# check of the stop file starts its command once more.
# rof.ko is left empty, as every test leaves it: once rofd is gone, every
# tenant (and with it its regions, programs and sessions) is destroyed,
# B8's too, which rofd leaves in the module when they leave the policy.
# This is the test VM's module: never run this script on a real host.
PIDS=()
stop_all() {
	touch "$S/stop"
	while [ -n "$(jobs -rp)" ]; do
		pkill -TERM -x rof-kvstore
		pkill -TERM -x rofd
		[ ${#PIDS[@]} -eq 0 ] || kill -TERM "${PIDS[@]}" 2>/dev/null
		wait -n
	done
	PIDS=()
	kobj-ioctl drain force >/dev/null
	rm -f "$S/stop"
}
trap stop_all EXIT

# Starts rofd with the bench's policy and a fresh state, rof-kvstore (and
# its C twin), the raw server and memcached, and waits until each serves.
kv_args=()
start_all() {
	policy
	rm -rf "$ROF_STATE"
	respawn rofd rofd --socket "$ROF_SOCKET"
	if ! "$ROF_SRC/selftests/rofd-call" --socket "$ROF_SOCKET" --wait 120 Health.Check >/dev/null; then
		log "rofd does not serve:"; cat "$S/rofd.err" >&2
		return 1
	fi
	respawn kvstore rof-kvstore --socket "$ROF_SOCKET" --tenant kv --items 4096 --max-value 65536
	kv_args=()
	if [ "$BENCH_KV_C" = 1 ]; then
		# Its first start runs clang three times under emulation; a respawn
		# (B3) translates the cached objects again.
		respawn kvstore-c rof-kvstore --socket "$ROF_SOCKET" --tenant kvc --items 4096 \
			--max-value 65536 --listen 127.0.0.1:11212 --programs c --image-cache "$S/images"
		wait_for 900 ready kvstore-c '^rof-kvstore: ready' || { log "rof-kvstore (C builds) is not ready:"; cat "$S/kvstore-c.err" >&2; return 1; }
		kv_args=(--set kv_c_tenant=kvc)
	fi
	wait_for 180 ready kvstore '^rof-kvstore: ready' || { log "rof-kvstore is not ready:"; cat "$S/kvstore.err" >&2; return 1; }
	rof-bench-server --bind "$ROF_ADDR" --port $RAW_PORT --items 256 --vmax 65536 --cpu 1 >"$S/raw.out" 2>"$S/raw.err" &
	PIDS+=($!)
	wait_for 60 ready raw '^rof-bench-server: ready' || { log "rof-bench-server is not ready:"; cat "$S/raw.err" >&2; return 1; }
	memcached -u nobody -l 127.0.0.1 -p $MC_PORT -m 64 -t 1 -U 0 >"$S/memcached.out" 2>&1 &
	PIDS+=($!)
	wait_for 60 bash -c "exec 3<>/dev/tcp/127.0.0.1/$MC_PORT" || { log "memcached does not listen"; return 1; }
}

# B3's kill round N: rofd on even rounds, rof-kvstore on odd ones.
cat >"$S/kill-round" <<-'EOF'
#!/bin/sh
if [ $(($1 % 2)) -eq 0 ]; then exec pkill -KILL -x rofd; else exec pkill -KILL -x rof-kvstore; fi
EOF
chmod +x "$S/kill-round"

# B6's 1024 sessions take 3 descriptors each.
ulimit -Hn 65536 && ulimit -n 65536
dp=/sys/kernel/debug/rof/datapath

# run_pass OUT [rof-bench options]: rof-bench over what start_all started;
# its status.
run_pass() {
	local out=$1 rc f perf=()
	shift
	log "rof-bench $BENCH_ARGS $*"
	[ -w $dp ] && echo 0 >$dp
	if [ "$BENCH_PERF" = 1 ]; then
		if command -v perf >/dev/null; then
			rm -f "$S/perf.data"
			perf=(perf record -a -F 999 -q -o "$S/perf.data" --)
		else
			log "no perf here (linux-perf): the pass runs unprofiled"
		fi
	fi
	# shellcheck disable=SC2086 # BENCH_ARGS is a list of options
	"${perf[@]}" rof-bench --rofd "unix:$ROF_SOCKET" --raw-server "$ROF_ADDR:$RAW_PORT" \
		--memcached "127.0.0.1:$MC_PORT" --set "kill_cmd=$S/kill-round" \
		--set "policy_dir=$ROF_ETC/tenants.d" "${kv_args[@]}" $BENCH_ARGS "$@" -o "$out"
	rc=$?
	if [ $rc -ne 0 ]; then
		for f in rofd.err kvstore.err; do
			log "the last lines of $f:"
			tail -n 40 "$S/$f" | sed 's/^/# bench:   /' >&2
		done
	fi
	# What the module did for the pass (docs/kmod.md, section 8.3).
	[ -r $dp ] && sed 's/^/# bench: datapath: /' $dp >&2
	if [ ${#perf[@]} -gt 0 ] && [ -s "$S/perf.data" ]; then
		for f in comm comm,dso comm,dso,sym; do
			perf report -i "$S/perf.data" --stdio --no-children --sort $f \
				--percent-limit 0.5 2>/dev/null | grep -v '^#\|^$' | sed "s/^/# bench: perf: $f: /" >&2
		done
	fi
	return $rc
}

start_all || exit 1
run_pass "$BENCH_OUT"
rc=$?
poll_cases=
# shellcheck disable=SC2086 # BENCH_ARGS is a list of options
[ -n "$BENCH_POLL" ] && poll_cases=$(rof-bench --list $BENCH_ARGS --within "$BENCH_POLL")
if [ -n "$poll_cases" ] && [ "$(cat /sys/devices/system/cpu/cpu1/online 2>/dev/null)" != 1 ]; then
	log "no polling pass: CPU 1 is offline here"
elif [ -n "$poll_cases" ]; then
	stop_all
	if ! { rof_unload && rof_load poll_cpus=1 && start_all; }; then
		log "the polling pass could not start"
		rc=1
	else
		run_pass "$S/poll.json" --within "$BENCH_POLL" --label poll || rc=1
		if [ -s "$S/poll.json" ] && [ -s "$BENCH_OUT" ]; then
			jq -s '.[0] + {cases: (.[0].cases + .[1].cases),
				failed_cases: (.[0].failed_cases + .[1].failed_cases),
				finished: .[1].finished,
				passes: {"": "rof.ko as the VM loaded it", poll: "rof.ko with poll_cpus=1"}}' \
				"$BENCH_OUT" "$S/poll.json" >"$S/both.json" && mv "$S/both.json" "$BENCH_OUT" || rc=1
		fi
		if [ -r /sys/kernel/debug/rof/poll ]; then
			sed 's/^/# bench: poll: /' /sys/kernel/debug/rof/poll >&2
		fi
	fi
	stop_all
	rof_unload && rof_load || rc=1
fi
if [ "${BENCH_PRINT:-0}" = 1 ] && [ -s "$BENCH_OUT" ]; then
	echo "# rofbench: json begin"
	cat "$BENCH_OUT"
	echo "# rofbench: json end"
fi
exit $rc
