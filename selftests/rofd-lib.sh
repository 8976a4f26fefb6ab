#!/bin/bash
# selftests/rofd-lib.sh - what the rofd tests share beyond lib.sh; bash
# only (lib.sh itself is also sourced by sh -c in the ksess tests).
. "$ROF_SRC/selftests/lib.sh"

# rofd_client NAME [UID]: a long-lived client (selftests/rofd-call --batch
# behind two FIFOs), as root or as UID: one Python start for all of a
# test's calls, which matters in the emulated VM.  Then
#   rc NAME METHOD [JSON]    one call: the answer's JSON on stdout, or
#                            "CODE: message" on stderr and a failure
rofd_client() {
	local name=$1 uid=${2:-} in=$ROF_SCRATCH/rc-$1.in out=$ROF_SCRATCH/rc-$1.out fd
	rm -f "$in" "$out"
	mkfifo "$in" "$out"
	chmod 0666 "$in" "$out"
	if [ -n "$uid" ]; then
		as_uid "$uid" "$ROF_SRC/selftests/rofd-call" --socket "$ROF_SOCKET" --batch \
			<"$in" >"$out" 2>>"$ROF_SCRATCH/rc-$name.err" &
	else
		"$ROF_SRC/selftests/rofd-call" --socket "$ROF_SOCKET" --batch \
			<"$in" >"$out" 2>>"$ROF_SCRATCH/rc-$name.err" &
	fi
	exec {fd}>"$in"
	printf -v "RC_IN_$name" %s "$fd"
	exec {fd}<"$out"
	printf -v "RC_OUT_$name" %s "$fd"
}
# rofd_client_close NAME: its client reads end of file and exits.
rofd_client_close() {
	local in=RC_IN_$1 out=RC_OUT_$1
	local infd=${!in} outfd=${!out}
	exec {infd}>&- {outfd}<&-
}
rc() {
	local name=$1 in out line req=${3:-}
	in=RC_IN_$name out=RC_OUT_$name
	[ -n "$req" ] || req='{}'
	printf '%s %s\n' "$2" "$req" >&"${!in}"
	IFS= read -r line <&"${!out}" || { echo "rofd client $name is gone" >&2; return 99; }
	if [[ $line == '{"error":'* ]]; then
		jq -r .error <<<"$line" >&2
		return 1
	fi
	printf '%s\n' "$line"
}
