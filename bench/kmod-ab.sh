#!/bin/bash
# bench/kmod-ab.sh - what a change to rof.ko's data path buys, as ratios taken
# in one VM boot: builds of the module (and module parameters) are loaded in
# turn, interleaved over repetitions, and each is measured the same way with
# the module's own test client (selftests/progs/ksess-client), beside a raw
# SEND/RECV round trip of perftest's ib_send_lat on the same device.
#
# Runs inside the test VM (bench/kmod-ab boots it: selftests/vm/run --mode ab); the
# configurations come from the environment:
#   AB_CONFIGS  space-separated LABEL=KO[:PARAM=VALUE[,PARAM=VALUE]...]
#               the first is the baseline of every ratio
#   AB_REPS     repetitions (default 5); medians over them
# Per configuration: ECHO 32 B one in flight (us per round trip), ECHO 32 B
# 16 in flight (ops/s), INVOKEs with the credits in flight while a reader
# drains the audit ring as rofd does (ops/s, and the reader's wake-ups).
# Numbers for a reader; nothing here is a test.
. "$ROF_SRC/selftests/ksess-lib.sh"
set -u
AB_REPS=${AB_REPS:-5}
read -r -a configs <<<"${AB_CONFIGS:?AB_CONFIGS: LABEL=KO[:PARAMS] ...}"
R=$ROF_SCRATCH/ab
rm -rf "$R" && mkdir -p "$R"

load_config() { # LABEL=KO[:P=V,...]
	local spec=${1#*=} ko params
	ko=${spec%%:*}
	params=""
	[ "$spec" != "$ko" ] && params=${spec#*:}
	ksess_cleanup
	if rof_loaded && ! rmmod rof; then
		echo "kmod-ab: cannot unload rof.ko" >&2
		return 1
	fi
	# shellcheck disable=SC2086 # one word per parameter
	insmod "$ko" ${params//,/ } || return 1
	KSESS_TAG=ab$$-$RANDOM ksess_setup
}

echo_run() { # N WINDOW -> microseconds the ECHOs took (the client's own clock)
	ksess_prepare "$TENANT_A" || return 1
	ksess-client connect "$KSESS_ADDR" "$TICKET" -P -e "$1" -k "$2" -s 32 |
		sed -n 's/^echo: .* failed, credits [0-9]*, \([0-9]*\) us$/\1/p'
}

flood_run() { # N -> "microseconds wake-ups" of N INVOKEs with the audit drained
	local drain us
	ksess-client audit-drain >"$R/drain" &
	drain=$!
	wait_for 30 grep -q ready "$R/drain"
	ksess_prepare "$TENANT_A" || return 1
	us=$(ksess-client invoke-flood "$KSESS_ADDR" "$TICKET" "$1" |
		sed -n 's/.* failed, \([0-9]*\) us$/\1/p')
	kill -TERM "$drain"
	wait "$drain"
	echo "$us $(sed -n 's/^audit-drain: [0-9]* records, \([0-9]*\) wake-ups.*/\1/p' "$R/drain")"
}

raw_rtt() { # -> microseconds, the typical round trip of ib_send_lat (2 x one way)
	local srv
	ib_send_lat -d "$ROF_RXE" -x 1 -s 32 -n 1000 -F >"$R/raw-srv" 2>&1 &
	srv=$!
	# The server is up when it listens on perftest's port (18515 is rof's: -p).
	wait_for 30 sh -c "ss -Htln | grep -q ':18515 '" || true
	ib_send_lat -d "$ROF_RXE" -x 1 -s 32 -n 1000 -F "$ROF_ADDR" 2>/dev/null |
		awk '/t_typical/ { getline; printf "%.1f\n", 2 * $5 }'
	wait "$srv"
}

median() { sort -n | awk '{ v[NR] = $1 } END { if (NR) print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

echo "# kmod-ab: ${#configs[@]} configurations, $AB_REPS repetitions, interleaved"
for rep in $(seq "$AB_REPS"); do
	raw_rtt >>"$R/raw"
	for c in "${configs[@]}"; do
		label=${c%%=*}
		load_config "$c" || { echo "Bail out! cannot load $c"; exit 1; }
		us=$(echo_run 1000 1) && echo "$us" | awk '{ print $1 / 1000 }' >>"$R/$label.rtt"
		us=$(echo_run 3000 16) && echo "$us" | awk '{ print 3000 * 1e6 / $1 }' >>"$R/$label.echo16"
		res=$(flood_run 3000)
		us=${res% *} wakes=${res#* }
		echo "$us" | awk '{ print 3000 * 1e6 / $1 }' >>"$R/$label.invoke"
		echo "$wakes" >>"$R/$label.wakes"
		echo "# rep $rep $label: rtt $(tail -1 "$R/$label.rtt") us, echo16 $(tail -1 "$R/$label.echo16") ops/s, invoke $(tail -1 "$R/$label.invoke") ops/s, audit wake-ups $wakes"
	done
done
# Leave the module as the harness loaded it.
ksess_cleanup
rmmod rof 2>/dev/null
rof_load

raw=$(median <"$R/raw")
base=${configs[0]%%=*}
b_rtt=$(median <"$R/$base.rtt") b_e16=$(median <"$R/$base.echo16") b_inv=$(median <"$R/$base.invoke")
echo "# raw SEND/RECV round trip (ib_send_lat, typical x 2): $raw us"
printf '# %-12s %10s %8s %8s %12s %8s %12s %8s %10s\n' config rtt_us x_raw x_base echo16_ops x_base invoke_ops x_base audit_wake
for c in "${configs[@]}"; do
	l=${c%%=*}
	rtt=$(median <"$R/$l.rtt") e16=$(median <"$R/$l.echo16") inv=$(median <"$R/$l.invoke") wk=$(median <"$R/$l.wakes")
	awk -v l="$l" -v rtt="$rtt" -v raw="$raw" -v brtt="$b_rtt" -v e="$e16" -v be="$b_e16" \
		-v i="$inv" -v bi="$b_inv" -v w="$wk" 'BEGIN {
		printf "# %-12s %10.0f %8.2f %8.2f %12.0f %8.2f %12.0f %8.2f %10.0f\n",
			l, rtt, rtt / raw, rtt / brtt, e, e / be, i, i / bi, w }'
done
