# shellcheck shell=bash
# selftests/rofctl-batch.sh - checks on the lines of one `rofctl batch`,
# sourced by the VM tests that run many rofctl commands (rofctl-cli,
# programs): under emulation a rofctl start and its connection cost
# seconds, a command on an open channel (and, for `prog run`, an open
# session) a fraction of one.  Needs $S, a scratch directory, and lib.sh.

# b WORDS...: queue a rofctl command line (without `rofctl`); checks on the
# line just queued, judged when the batch runs:
#   b_ok DESC JQ-FILTER     exit 0 and the filter true of its JSON output
#   b_fails DESC STATUS CODE  exit STATUS and {"error", "code": CODE}
#   b_status DESC STATUS    exit STATUS
#   b_rec DESC JQ-FILTER    the filter true of its whole record
#                           ({"status", "output", "error", "code"})
#   b_get VAR JQ-FILTER     after the run, VAR = the filter of its output
#   b_text DESC ERE         (text batches) exit 0, a line of its text matches
#   b_err DESC STATUS ERE   (text batches) exit STATUS, a line of its text
#                           or stderr matches
# Filters see every record of the batch as $all; $B is the index of the
# line just queued; `hex` turns bytes as -j spells them (base64) into
# lowercase hex: '(.response | hex) == "2a00000000000000"'.  b_run [-u UID] [OPTION...] runs the queue as one
# `rofctl -j OPTION... batch --force` (as UID if given) and prints the
# checks' TAP lines in order; b_run_text runs it as a text batch.
BQ=() BC=() B=-1
# jq: a base64 string's bytes in hex.
_B_DEFS='def hex: [explode[] | select(. != 61) | if . >= 97 then . - 71 elif . >= 65 then . - 65
	elif . >= 48 then . + 4 elif . == 43 then 62 else 63 end] as $v |
	[range(0; $v | length; 4) as $i | $v[$i:$i + 4] as $g | ($g + [0, 0, 0])[0:4] as $p |
	 ($p[0] * 262144 + $p[1] * 4096 + $p[2] * 64 + $p[3]) as $n |
	 [65536, 256, 1][0:($g | length) - 1][] | ($n / . | floor) % 256] |
	map("0123456789abcdef"[(. / 16 | floor):(. / 16 | floor) + 1] +
	    "0123456789abcdef"[. % 16:. % 16 + 1]) | join("");'
b() {
	local line
	printf -v line '%q ' "$@"
	BQ+=("$line")
	B=$((${#BQ[@]} - 1))
}
_bc() { BC+=("$1"$'\x1f'"$B"$'\x1f'"$2"$'\x1f'"${3:-}"$'\x1f'"${4:-}"); }
b_ok() { _bc ok "$1" "$2"; }
b_fails() { _bc fails "$1" "$2" "$3"; }
b_status() { _bc status "$1" "$2"; }
b_rec() { _bc rec "$1" "$2"; }
b_get() { _bc get "$1" "$2"; }
b_text() { _bc text "$1" "$2"; }
b_err() { _bc err "$1" "$2" "$3"; }

_b_file() { printf '%s\n' "${BQ[@]}" >"$S/batch.txt"; chmod 0644 "$S/batch.txt"; }
_b_reset() { BQ=() BC=() B=-1; }

b_run() {
	local uid=
	if [ "${1:-}" = -u ]; then uid=$2; shift 2; fi
	local kind i desc a1 a2 c verdict n=0 t='then "ok" else "not " + tojson end)'
	local -a exprs=() verdicts=() cmd=(rofctl -j "$@" batch --force "$S/batch.txt")
	for c in "${BC[@]}"; do
		IFS=$'\x1f' read -r kind i desc a1 a2 <<<"$c"
		case $kind in
		ok) exprs+=("(\$all[$i] | if .status == 0 and (try ([.output[0] | ($a1)] | length > 0 and (last | . != null and . != false)) catch false) $t") ;;
		fails) exprs+=("(\$all[$i] | if .status == $a1 and .code == \"$a2\" and ((.error // \"\") | length > 0) $t") ;;
		status) exprs+=("(\$all[$i] | if .status == $a1 $t") ;;
		rec) exprs+=("(\$all[$i] | if (try ($a1) catch false) $t") ;;
		get) exprs+=("(\$all[$i] | \"=\" + ([.output[0] | ($a1) | tostring] | join(\" \")))") ;;
		*) echo "b_run: $kind is a text check" >&2; return 1 ;;
		esac
	done
	_b_file
	[ -z "$uid" ] || cmd=(as_uid "$uid" "${cmd[@]}")
	"${cmd[@]}" >"$S/batch.out" 2>"$S/batch.err"
	# One jq for every check of the batch, one verdict a line, in order.
	# (Files, not a process substitution: the guest has no /dev/fd.)
	(IFS=,; jq -rs "$_B_DEFS . as \$all | ${exprs[*]}" "$S/batch.out") >"$S/verdicts" 2>"$S/jq.err"
	mapfile -t verdicts <"$S/verdicts"
	for c in "${BC[@]}"; do
		IFS=$'\x1f' read -r kind i desc a1 a2 <<<"$c"
		verdict=${verdicts[n]:-}
		n=$((n + 1))
		case $kind in
		get) printf -v "$desc" %s "${verdict#=}"; continue ;;
		fails) desc="$desc: exit $a1, $a2" ;;
		esac
		if [ "$verdict" = ok ]; then
			tap_ok "$desc"
		else
			tap_fail "$desc"
			{
				printf 'line %s: %s\n' "$((i + 1))" "${BQ[i]}"
				if [ -n "$verdict" ]; then printf '%s\n' "${verdict#not }"
				else cat "$S/batch.out" "$S/batch.err" "$S/jq.err"; fi
			} | tap_diag
		fi
	done
	_b_reset
}

b_run_text() {
	local kind i desc a1 a2 c line want re k=-1 ok
	local -a out=() rcs=()
	_b_file
	rofctl batch --force "$S/batch.txt" >"$S/batch.out" 2>&1
	while IFS= read -r line; do
		if [[ $line =~ ^'>>> '[0-9]+': ' ]]; then
			k=$((k + 1)) out[k]="" rcs[k]=0
		elif [[ $line =~ ^'<<< '[0-9]+': exit '([0-9]+)$ ]]; then
			rcs[k]=${BASH_REMATCH[1]}
		elif [ "$k" -ge 0 ]; then
			out[k]+=$line$'\n'
		fi
	done <"$S/batch.out"
	for c in "${BC[@]}"; do
		IFS=$'\x1f' read -r kind i desc a1 a2 <<<"$c"
		case $kind in
		text) want=0 re=$a1 ;;
		err) want=$a1 re=$a2 ;;
		*) echo "b_run_text: $kind is a JSON check" >&2; return 1 ;;
		esac
		ok=0
		if [ -n "${rcs[i]:-}" ] && [ "${rcs[i]}" -eq "$want" ]; then
			while IFS= read -r line; do
				[[ $line =~ $re ]] && { ok=1; break; }
			done <<<"${out[i]}"
		fi
		if [ "$ok" = 1 ]; then
			tap_ok "$desc"
		else
			tap_fail "$desc (exit ${rcs[i]:-none}, want $want)"
			printf 'line %s: %s\n%s' "$((i + 1))" "${BQ[i]}" "${out[i]:-}" | tap_diag
		fi
	done
	_b_reset
}
