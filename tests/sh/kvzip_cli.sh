#!/usr/bin/env bash
# kvzip and ratio budgets from the command line, end to end with the real
# model and LMDB: ingest --local --policy kvzip --ratio 1/2, the unit count a
# ratio promises, the profile says ratio= and kvzip's options; shrink to 1/8
# (a second snapshot with from=0.5 and an eighth of the units, the store
# still verifies, the shrunk snapshot answers a question); what shrink and
# --ratio refuse (exit codes as documented): nothing to shrink, no kvzip
# snapshot, both --budget and --ratio, ratios outside (0, 1], an ingest of a
# from= profile.
set -u
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
K=$BUILD/kvsnap
MODEL=models/SmolLM2-135M-Instruct.Q4_1.gguf
if [ ! -f "$MODEL" ]; then
	echo "# SKIP: no model ($MODEL; make model)"
	echo "0 passed, 0 failed"
	exit 0
fi
T=$(mktemp -d /tmp/kvsnap-kvzip-cli-XXXXXX)
trap 'rm -rf "$T"' EXIT
export KVSNAP_STATE=$T/state
pass=0 fail=0
ok() { # description, then the command's status
	if [ "$2" -eq 0 ]; then pass=$((pass + 1)); echo "ok - $1"
	else fail=$((fail + 1)); echo "not ok - $1"; fi
}
expect_rc() { # description, expected rc, command...
	local d=$1 want=$2; shift 2
	"$@" >"$T/out" 2>"$T/err"
	local rc=$?
	[ "$rc" -eq "$want" ]; ok "$d (exit $rc, want $want)" $?
	[ "$rc" -eq "$want" ] || { sed 's/^/#   /' "$T/err" | tail -5; }
}
# sanitizer builds are ~10x slower: a shorter document there
words=300
# (at least ~200: a ratio of 1/8 must leave more than the ~24 sink units)
grep -q __asan_init "$K" 2>/dev/null && words=200
printf 'The archive code word is PELICAN. %s\n' "$(head -c 20000 /usr/share/common-licenses/GPL-3 | tr -s ' \n' ' ' | cut -d' ' -f1-$words)" > "$T/gpl.txt"
P=(--local --policy kvzip --chunk 128)
{ echo "A second copy."; cat "$T/gpl.txt"; } > "$T/gpl2.txt"

expect_rc "ingest with --policy kvzip --ratio 1/2" 0 "$K" ingest "${P[@]}" --ratio 1/2 "$T/gpl.txt" --name gpl
$K info --json gpl > "$T/info.json" 2>&1
read -r tokens units < <(python3 -c '
import json, sys
snaps = [json.loads(l) for l in open(sys.argv[1]) if "units" in l]
print(snaps[0]["tokens"], snaps[0]["units"])' "$T/info.json")
want=$(( (tokens + 1) / 2 * 30 * 3 ))
[ "$units" -eq "$want" ]; ok "ratio 1/2 of $tokens tokens keeps ceil(n/2) units per head: $units (want $want)" $?
$K info gpl > "$T/info.txt" 2>&1
grep -q "policy=kvzip:ratio=0.5,seg=2048,alloc=global,sinks=auto,norm=prob" "$T/info.txt"
ok "the profile names the ratio and kvzip's options" $?

expect_rc "shrink gpl --ratio 1/8" 0 "$K" shrink gpl --ratio 1/8
$K info gpl > "$T/info.txt" 2>&1
grep -q "policy=kvzip:ratio=0.125,.*,from=0.5 " "$T/info.txt"
ok "the shrunk snapshot is filed under ratio=0.125 ... from=0.5" $?
n8=$(grep -o "tokens -> [0-9]* units" "$T/info.txt" | awk '{print $3}' | sort -n | head -1)
want=$(( (tokens + 7) / 8 * 30 * 3 ))
[ "$n8" -eq "$want" ]; ok "it keeps an eighth: $n8 units (want $want)" $?
expect_rc "the store verifies" 0 "$K" verify
expect_rc "the shrunk snapshot answers" 0 "$K" query "${P[@]}" --ratio 1/8 --opts from=0.5 -n 12 gpl "What is the archive code word?"
[ -s "$T/out" ]; ok "with some text: $(head -c 80 "$T/out" | tr '\n' ' ')" $?

expect_rc "shrinking to more than the snapshot holds is refused" 1 "$K" shrink gpl --ratio 0.9
grep -q "nothing to shrink" "$T/err"; ok "and says why" $?
expect_rc "ingest the same text with snapkv under another name" 0 "$K" ingest --local --policy snapkv --budget 64 --chunk 128 "$T/gpl2.txt" --name snap

expect_rc "shrink of a snapkv-only document" 2 "$K" shrink snap --ratio 1/8
grep -q "no kvzip snapshot" "$T/err"; ok "and says why" $?
expect_rc "--budget and --ratio together" 1 "$K" ingest "${P[@]}" --budget 64 --ratio 1/4 "$T/gpl.txt"
for r in 0 1.5 3/2 1/0 abc -0.25; do
	expect_rc "--ratio $r is refused" 1 "$K" ingest "${P[@]}" --ratio "$r" "$T/gpl.txt"
done
expect_rc "shrink without --ratio" 1 "$K" shrink gpl
expect_rc "an ingest of a from= profile" 1 "$K" ingest "${P[@]}" --ratio 1/8 --opts from=0.5 "$T/gpl.txt"
grep -q "kvsnap shrink" "$T/err"; ok "and says why" $?

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
