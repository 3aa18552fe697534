#!/usr/bin/env bash
# kvzip and ratio budgets from the command line, end to end with the real
# model and LMDB: ingest --local --policy kvzip --ratio 1/2, the unit count a
# ratio promises, the profile says ratio= and kvzip's options; shrink to 1/8
# (a second snapshot with from=0.5 and an eighth of the units, the store
# still verifies, the shrunk snapshot answers a question); what shrink and
# --ratio refuse (exit codes as documented): nothing to shrink, no kvzip
# snapshot, both --budget and --ratio, ratios outside (0, 1], an ingest of a
# from= profile.  Then the protocol's shrink through a real kvsnapd serving
# kvzip at 1/4: a snapshot cut to the daemon's ratio is answered from
# (serves: true), and bad shrink requests get their error codes.
set -u
. "$(dirname "$0")/lib.bash"
# a shorter document under the sanitizer, but at least ~200 words: a
# ratio of 1/8 must leave more than the ~24 sink units
cli_scratch kvzip-cli 300 200
printf 'The archive code word is PELICAN. %s\n' "$(head -c 20000 /usr/share/common-licenses/GPL-3 | tr -s ' \n' ' ' | cut -d' ' -f1-$words)" > "$T/gpl.txt"
P=(--local --policy kvzip --chunk 128)
{ echo "A second copy."; cat "$T/gpl.txt"; } > "$T/gpl2.txt"

expect_rc "ingest with --policy kvzip --ratio 1/2" 0 "$K" ingest "${P[@]}" --ratio 1/2 "$T/gpl.txt" --name gpl
$K info --json gpl > "$T/info.json" 2>&1
read -r tokens units < <(python3 -c '
import json, sys
snaps = json.loads(open(sys.argv[1]).readline())["snapshots"]
print(snaps[0]["tokens"], snaps[0]["units"])' "$T/info.json")
# a ratio is of the document's tokens, the sinks (the chat template's system
# turn and user header, s units per head) kept on top: ceil(R (n - s)) + s per
# head (docs/KVZIP.md).  s is not printed anywhere: the sink counts in 1..64
# this count allows are kept, and the 1/8 and 1/4 cuts below must each be
# given exactly by one of them (each check narrows the list).
keep() { echo $(( ($2 - $3 + $1 - 1) / $1 + $3 )); } # DENOM n s
fits() { # DENOM UNITS: the sink counts of $sinks that give UNITS
	local s out=
	for s in $sinks; do [ $(( $(keep "$1" "$tokens" "$s") * 90 )) -eq "$2" ] && out="$out $s"; done
	echo $out
}
sinks=$(seq 1 64); sinks=$(fits 2 "$units")
[ -n "$sinks" ]; ok "ratio 1/2 of $tokens tokens keeps ceil((n - s)/2) + s units per head for a sink count s in 1..64: $units (s in: $sinks)" $?
$K info gpl > "$T/info.txt" 2>&1
grep -q "policy=kvzip:ratio=0.5,seg=2048,alloc=global,sinks=auto,norm=prob" "$T/info.txt"
ok "the profile names the ratio and kvzip's options" $?

expect_rc "shrink gpl --ratio 1/8" 0 "$K" shrink gpl --ratio 1/8
$K info gpl > "$T/info.txt" 2>&1
grep -q "policy=kvzip:ratio=0.125,.*,from=0.5 " "$T/info.txt"
ok "the shrunk snapshot is filed under ratio=0.125 ... from=0.5" $?
n8=$(grep -o "tokens -> [0-9]* units" "$T/info.txt" | awk '{print $3}' | sort -n | head -1)
sinks=$(fits 8 "$n8")
[ -n "$sinks" ]; ok "it keeps an eighth of the document and the sinks: $n8 units (s in: $sinks)" $?
expect_rc "the store verifies" 0 "$K" verify
expect_rc "the shrunk snapshot answers" 0 "$K" query "${P[@]}" --ratio 1/8 --opts from=0.5 -n 12 gpl "What is the archive code word?"
[ -s "$T/out" ]; _s=$?; ok "with some text: $(head -c 80 "$T/out" | tr '\n' ' ')" $_s

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

# ---- the protocol's shrink, through kvsnapd (kvzip at 1/4, gpl's chunk)
S=$T/d.sock
"$D" --foreground --state "$KVSNAP_STATE" --socket "$S" --policy kvzip --ratio 1/4 --chunk 128 \
	-t 2 --workers 1 2>"$T/daemon.log" &
DPID=$!
wait_ready daemon_ready "$S"; ok "kvsnapd starts (kvzip, ratio 1/4)" $?
# one request per argument; prints the last event of each
req() {
	timeout 120 python3 - "$S" "$@" <<'PY'
import json, socket, sys
s = socket.socket(socket.AF_UNIX); s.settimeout(110); s.connect(sys.argv[1])
f = s.makefile("rb")
for a in sys.argv[2:]:
    s.sendall(a.encode() + b"\n")
    while True:
        l = f.readline()
        if not l: print("EOF"); sys.exit(1)
        e = json.loads(l)
        if e.get("event") in ("result", "error"): print(json.dumps(e)); break
PY
}
req_code profile_mismatch "before shrink the daemon has no snapshot of its profile" '{"v":1,"id":1,"op":"query","doc":"gpl","question":"Hi","max_tokens":2}'
r=$(req '{"v":1,"id":2,"op":"shrink","doc":"gpl","ratio":0.25}')
n4=$(json_field units <<<"$r")
[ "$n4" != - ] && [ -n "$(fits 4 "$n4")" ]; _s=$?; ok "shrink op: gpl cut to a quarter of the document and the sinks, $n4 units (s in: $sinks)" $_s
[ "$(json_field serves <<<"$r")" = True ]; ok "and the daemon says it serves the result" $?
r=$(req '{"v":1,"id":3,"op":"query","doc":"gpl","question":"What is the archive code word?","max_tokens":8}')
[ "$(json_field event <<<"$r")" = result ] && [ "$(json_field tokens <<<"$r")" -gt 0 ]
_s=$?; ok "the daemon answers from the shrunk snapshot ($(json_field tokens <<<"$r") tokens)" $_s
expect_rc "and so does kvsnap query through it" 0 env KVSNAP_SOCKET="$S" "$K" query -n 4 gpl "What is the archive code word?"
for bad in '"ratio":0' '"ratio":1.5' '"ratio":"1/4"' '"ratio":null'; do
	req_code bad_request "shrink with $bad" "{\"v\":1,\"id\":4,\"op\":\"shrink\",\"doc\":\"gpl\",$bad}"
done
req_code bad_request "shrink without doc" '{"v":1,"id":5,"op":"shrink","ratio":0.25}'
req_code bad_request "shrink to more than the source holds" '{"v":1,"id":6,"op":"shrink","doc":"gpl","ratio":0.9}'
req_code not_found "shrink of a document with no kvzip snapshot" '{"v":1,"id":7,"op":"shrink","doc":"snap","ratio":0.25}'
req_code not_found "shrink of an unknown document" '{"v":1,"id":8,"op":"shrink","doc":"nosuchdoc","ratio":0.25}'
kill -TERM "$DPID"; wait_exit; ok "kvsnapd stops cleanly" $?
expect_rc "the store still verifies" 0 "$K" verify

finish
