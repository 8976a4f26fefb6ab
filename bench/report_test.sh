#!/bin/sh
# bench/report_test.sh REPORT JSON DIR: bench/report turns a rof-bench JSON
# into DIR/table.md, with a row for every case, and one PNG per series.
set -eu
report=$1 json=$2 dir=$3
rm -rf "$dir"
"$report" "$json" "$dir" >/dev/null
for id in $(jq -r '.cases[].id' "$json"); do
	grep -q "^| $id |" "$dir/table.md" || { echo "table.md has no row of $id"; exit 1; }
done
want=$(jq '[.cases[].series | length] | add' "$json")
have=$(find "$dir" -name '*.png' -size +1k | wc -l)
[ "$have" -eq "$want" ] || { echo "$have plots, want $want"; exit 1; }
echo "table.md and $have plots"
