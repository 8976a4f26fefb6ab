#!/bin/sh
# Runs each offload-program fuzzer for SECONDS.
#   run-fuzz.sh SECONDS BUILD_DIR
# BUILD_DIR is a build configured with CC=clang CXX=clang++ -DROF_FUZZ=ON.
# Prints one TAP line per target ("ok - fuzz asm: N runs in Ss").  Exits
# non-zero if a target crashes, hangs or breaks an invariant; the scratch
# directory with the reproducer is then kept (removed on success).
set -eu

if [ $# -ne 2 ]; then
	echo "usage: $0 SECONDS BUILD_DIR" >&2
	exit 2
fi
secs=$1
build=$2
here=$(cd "$(dirname "$0")" && pwd)

find_bin() {
	f=$(find "$build" -type f -name "$1" -perm -u+x 2>/dev/null | head -n 1)
	if [ -z "$f" ]; then
		echo "run-fuzz: $1 not found under $build (configure with -DROF_FUZZ=ON)" >&2
		exit 2
	fi
	echo "$f"
}

work=$(mktemp -d "${TMPDIR:-/tmp}/rof-fuzz.XXXXXX")
echo "run-fuzz: corpora and artifacts in $work"
mkdir -p "$work/asm" "$work/slots" "$work/artifacts"
cp "$here"/corpus/*.rofs "$work/asm/"
# The verifier and executor take raw instruction slots: derive them from
# the same .rofs seeds.
"$(find_bin rof_fuzz_seeds)" "$work/slots" "$here"/corpus/*.rofs

status=0
for t in asm verifier exec; do
	bin=$(find_bin "rof_fuzz_$t")
	corpus="$work/slots"
	[ "$t" = asm ] && corpus="$work/asm"
	mkdir -p "$work/$t"
	echo "run-fuzz: $t for ${secs}s"
	if ! "$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
		-print_final_stats=1 -artifact_prefix="$work/artifacts/$t-" \
		"$work/$t" "$corpus" >"$work/$t.log" 2>&1; then
		echo "not ok - fuzz $t: log $work/$t.log, reproducer:"
		find "$work/artifacts" -type f -printf '# %f\n'
		tail -n 40 "$work/$t.log" | sed 's/^/# /'
		status=1
	else
		runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/$t.log")
		echo "ok - fuzz $t: ${runs:-?} runs in ${secs}s"
	fi
done
if [ $status -eq 0 ]; then
	rm -rf "$work"
fi
exit $status
