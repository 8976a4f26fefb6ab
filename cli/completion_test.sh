#!/bin/bash
# completion_test.sh COMPLETION ROFCTL: source rofctl's bash completion
# and check what a few command lines complete to.  TAP.
set -u
comp=$1 rofctl=$2
n=0 fail=0

# bash-completion's _init_completion when available; a minimal stand-in
# otherwise (cur, prev, words, cword from COMP_WORDS).
if [ -r /usr/share/bash-completion/bash_completion ]; then
	# shellcheck source=/dev/null
	. /usr/share/bash-completion/bash_completion
fi
if ! declare -F _init_completion >/dev/null; then
	# The variables are the completion function's, which reads them.
	# shellcheck disable=SC2034
	_init_completion() {
		words=("${COMP_WORDS[@]}") cword=$COMP_CWORD
		cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]}
	}
	_filedir() { mapfile -t COMPREPLY < <(compgen -f -- "$cur"); }
fi
# shellcheck source=cli/rofctl.bash-completion
. "$comp"

# check "LINE" WORD...: completing the last word of LINE offers WORD...
check() {
	local line=$1
	shift
	read -ra COMP_WORDS <<<"$line"
	[[ $line == *" " ]] && COMP_WORDS+=("")
	COMP_WORDS[0]=$rofctl
	COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
	COMP_LINE=$line COMP_POINT=${#line}
	COMPREPLY=()
	_rofctl
	local got=" ${COMPREPLY[*]} " w ok=1
	for w in "$@"; do
		[[ $got == *" $w "* ]] || ok=0
	done
	n=$((n + 1))
	if [ $ok = 1 ]; then
		echo "ok $n - '$line' offers $*"
	else
		echo "not ok $n - '$line' offers $* (got:$got)"
		fail=1
	fi
}

check "rofctl " tenant policy region prog session audit status health stats top batch
check "rofctl batch -" --force --socket
check "rofctl re" region
check "rofctl s" session status stats
check "rofctl prog " verify load replace build list show dump unload run test
check "rofctl prog replace x -" --tenant --bind --socket
check "rofctl region create x --" --size --access --tenant --freelist --json
check "rofctl region create x --access " r rw rwa
check "rofctl --socket /nonexistent tenant " list show create delete destroy
check "rofctl stats -o " prom
check "rofctl top -" --once --iterations --delay --json
check "rofctl tenant list -o " wide
check "rofctl region list --" --tenant --output
check "rofctl -" --socket --json --pretty
# Names need rofd: with none, nothing, and no error.
check "rofctl --socket /nonexistent --timeout 200 tenant show "
# Names from `rofctl -j OBJECT list`, here a stand-in rofctl.
if command -v jq >/dev/null; then
	fake=$(mktemp)
	trap 'rm -f "$fake"' EXIT
	cat >"$fake" <<-'EOS'
	#!/bin/sh
	for a; do obj=$last; last=$a; done
	case $obj in
	tenant) echo '{"tenants":[{"name":"kv","id":1},{"name":"analytics","id":2}]}' ;;
	region) echo '{"regions":[{"tenant":"kv","name":"table"}]}' ;;
	session) echo '{"sessions":[{"id":7}]}' ;;
	esac
	EOS
	chmod +x "$fake"
	rofctl=$fake
	check "rofctl tenant show " kv analytics
	check "rofctl region list --tenant a" analytics
	check "rofctl region delete t" table
	check "rofctl session close " 7
fi
echo "1..$n"
exit $fail
