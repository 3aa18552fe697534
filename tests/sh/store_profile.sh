#!/usr/bin/env bash
# One snapshot at a time (issue 28, item 4), end to end with the real model,
# LMDB and a real kvsnapd: `kvsnap shrink DOC --ratio R --replace` files the
# cut and removes the snapshot it was cut from in one store transaction
# (the store verifies, the cut answers, the source is gone); `kvsnap rm DOC
# --profile P` removes one snapshot, and the last one removes the document
# with its name and its text index rows (search no longer finds it); bad
# profile references get their exit codes.  Then the protocol's shrink with
# "replace" and rm with "profile" through kvsnapd.
set -u
. "$(dirname "$0")/lib.bash"
cli_scratch store-profile 300 200
printf 'The archive code word is PELICAN. %s\n' "$(head -c 20000 /usr/share/common-licenses/GPL-3 | tr -s ' \n' ' ' | cut -d' ' -f1-$words)" > "$T/gpl.txt"
{ echo "A second copy, code word ALBATROSS."; cat "$T/gpl.txt"; } > "$T/gpl2.txt"
P=(--local --policy kvzip --chunk 128)
# profiles "ratio:id" of DOC's snapshots, one a line (info --json)
snaps() {
	"$K" info --json "$1" | python3 -c '
import json, re, sys
for s in json.loads(sys.stdin.readline())["snapshots"]:
    print(re.search(r"ratio=([0-9.]+)", s["profile"]).group(1) + ":" + s["profile_id"])' | sort
}

expect_rc "ingest at 1/2" 0 "$K" ingest "${P[@]}" --ratio 1/2 "$T/gpl.txt" --name gpl
expect_rc "shrink to 1/4 (kept beside it)" 0 "$K" shrink gpl --ratio 1/4
[ "$(snaps gpl | cut -d: -f1 | tr '\n' ' ')" = "0.25 0.5 " ]; ok "two snapshots: 1/4 and 1/2" $?
src=$(snaps gpl | grep '^0.5:' | cut -d: -f2)
expect_rc "shrink to 1/8 --replace --json" 0 "$K" shrink gpl --ratio 1/8 --replace --json
python3 -c 'import json,sys; assert json.loads(sys.stdin.readline())["replaced"] is True' < "$T/out"
ok "the result says replaced" $?
[ "$(snaps gpl | cut -d: -f1 | tr '\n' ' ')" = "0.125 0.25 " ]
_s=$?; ok "the 1/2 source is gone, the cut is there: $(snaps gpl | cut -d: -f1 | tr '\n' ' ')" $_s
! "$K" info --json gpl | grep -q "$src"; ok "no record of the source's profile id" $?
expect_rc "the store verifies" 0 "$K" verify
expect_rc "the cut answers" 0 "$K" query "${P[@]}" --ratio 1/8 --opts from=0.5 -n 8 gpl "What is the archive code word?"
expect_rc "shrink without --replace prints no replaced" 0 "$K" shrink gpl --ratio 1/16
! grep -q replaced "$T/out"; ok "  (and says nothing of a replacement)" $?

# ---- rm --profile
cut16=$(snaps gpl | grep '^0.0625:' | cut -d: -f2)
expect_rc "rm --profile with a short prefix" 1 "$K" rm gpl --profile "${cut16:0:3}"
expect_rc "rm --profile that is not hex" 1 "$K" rm gpl --profile zzzzzz
expect_rc "rm --profile that names no snapshot" 2 "$K" rm gpl --profile ffffffffffffffffffff
n=$(snaps gpl | wc -l)
[ "$n" -eq 3 ]; ok "nothing removed by those: $n snapshots" $?
expect_rc "rm --profile (the 1/16 cut) --json" 0 "$K" rm gpl --profile "${cut16:0:12}" --json
python3 -c '
import json, sys
r = json.loads(sys.stdin.readline())
assert r["removed"] is False and r["profile_id"] == sys.argv[1], r' "$cut16" < "$T/out"
ok "  its profile_id, and the document stays (removed: false)" $?
[ "$(snaps gpl | cut -d: -f1 | tr '\n' ' ')" = "0.125 0.25 " ]; ok "the other two are left" $?
expect_rc "rm --profile (1/4)" 0 "$K" rm gpl --profile "$(snaps gpl | grep '^0.25:' | cut -d: -f2 | head -c 8)"
gid=$("$K" info --json gpl | python3 -c 'import json,sys; print(json.loads(sys.stdin.readline())["doc"]["doc_id"])')
expect_rc "search finds the document before its last snapshot goes" 0 "$K" search --local --json "PELICAN archive"
grep -q "$gid" "$T/out"; ok "  (gpl among the hits)" $?
expect_rc "rm --profile (the last)" 0 "$K" rm gpl --profile "$(snaps gpl | cut -d: -f2 | head -c 8)"
grep -q "its last: the document is removed" "$T/out"; ok "  says the document went with it" $?
expect_rc "the document is gone" 2 "$K" info gpl
expect_rc "search --local after it" 0 "$K" search --local --json "PELICAN archive"
! grep -q "$gid" "$T/out"; ok "  no longer finds it (its index rows went too)" $?
expect_rc "the store verifies" 0 "$K" verify

# ---- through kvsnapd: shrink with "replace", rm with "profile"
expect_rc "ingest gpl2 at 1/2" 0 "$K" ingest "${P[@]}" --ratio 1/2 "$T/gpl2.txt" --name gpl2
S=$T/d.sock
"$D" --foreground --state "$KVSNAP_STATE" --socket "$S" --policy kvzip --ratio 1/4 --chunk 128 \
	-t 2 --workers 1 2>"$T/daemon.log" &
DPID=$!
wait_ready daemon_ready "$S"; ok "kvsnapd starts (kvzip, ratio 1/4)" $?
proto_py
req() { python3 "$T/proto.py" "$S" "$1"; }
r=$(req '{"v":1,"id":1,"op":"shrink","doc":"gpl2","ratio":0.25,"replace":true}')
[ "$(json_field replaced <<<"$r")" = True ] && [ "$(json_field serves <<<"$r")" = True ]
_s=$?; ok "shrink op with replace: replaced $(json_field replaced <<<"$r"), serves $(json_field serves <<<"$r")" $_s
[ "$(snaps gpl2 | cut -d: -f1 | tr '\n' ' ')" = "0.25 " ]; ok "gpl2 holds the cut alone" $?
r=$(req '{"v":1,"id":2,"op":"query","doc":"gpl2","question":"What is the code word?","max_tokens":4}')
[ "$(json_field event <<<"$r")" = result ]; ok "the daemon answers from it" $?
req_code bad_request "replace must be a boolean" '{"v":1,"id":3,"op":"shrink","doc":"gpl2","ratio":0.25,"replace":"yes"}'
req_code bad_request "rm with a bad profile" '{"v":1,"id":4,"op":"rm","doc":"gpl2","profile":"xyz!"}'
req_code not_found "rm with a profile it lacks" '{"v":1,"id":5,"op":"rm","doc":"gpl2","profile":"ffffffffffff"}'
pid=$(snaps gpl2 | cut -d: -f2)
r=$(req "{\"v\":1,\"id\":6,\"op\":\"rm\",\"doc\":\"gpl2\",\"profile\":\"${pid:0:10}\"}")
[ "$(json_field removed <<<"$r")" = True ] && [ "$(json_field profile_id <<<"$r")" = "$pid" ]
_s=$?; ok "rm op with profile: its last snapshot, the document removed ($(json_field removed <<<"$r"))" $_s
expect_rc "the document is gone" 2 "$K" info gpl2
kill -TERM "$DPID"; wait_exit; ok "kvsnapd stops cleanly" $?
expect_rc "the store still verifies" 0 "$K" verify

# ---- the default profile (issue 28, item 4: kvzip 1/2, q6h) and old stores
# under the defaults before it (kvzip 1/2 q8, and the first, kvzip 1/4
# fp16): a plain query answers from either; a document holding both answers
# from the latest; through kvsnapd a plain ingest skips the document as
# stored and `--force` adds the default's snapshot, which is then picked
# over the old ones.
printf 'The vault code word is MARLIN. %s\n' "$(prose GPL-3 60)" > "$T/v1.txt"
printf 'The vault code word is OSPREY. %s\n' "$(prose GPL-3 60)" > "$T/v2.txt"
printf 'The vault code word is HERON. %s\n' "$(prose GPL-3 60)" > "$T/v3.txt"
L=(--local --chunk 128)
prof() { "$K" info --json "$1" | python3 -c '
import json, re, sys
print(" | ".join(sorted(re.search(r"ratio=([0-9.]+)", s["profile"]).group(1) + " " + s["quant"]
    for s in json.loads(sys.stdin.readline())["snapshots"])))'; }
units_of() { "$K" info --json "$1" | python3 -c '
import json, sys
print([s["units"] for s in json.loads(sys.stdin.readline())["snapshots"] if s["quant"] == sys.argv[1]][0])' "$2"; }
answered() { python3 -c '
import json, sys
e = [json.loads(l) for l in sys.stdin if l.strip()]
assert e[-1]["event"] == "result" and e[-1]["tokens"] > 0, e[-1]' < "$T/out"; }
# the ingest's result skipped the document, naming a stored snapshot of $1 units
skipped_with() { python3 -c '
import json, sys
r = json.loads(sys.stdin.readline())
assert r["skipped"] is True and r["units"] == int(sys.argv[1]), (r, sys.argv[1])' "$1" < "$T/out"; }
expect_rc "plain ingest" 0 "$K" ingest "${L[@]}" "$T/v1.txt" --name plain
[ "$(prof plain)" = "0.5 q6h" ]; _s=$?; ok "  stored kvzip ratio 0.5, quant q6h (info --json): '$(prof plain)'" $_s
expect_rc "ingest under the first default (--ratio 1/4 --quant fp16)" 0 "$K" ingest "${L[@]}" --ratio 1/4 --quant fp16 "$T/v2.txt" --name old
[ "$(prof old)" = "0.25 fp16" ]; _s=$?; ok "  stored 1/4 fp16: '$(prof old)'" $_s
expect_rc "a plain query answers from the first default's snapshot" 0 "$K" query "${L[@]}" --json -n 4 old "What is the code word?"
answered; ok "  a result with tokens (the old code refused it: profile_mismatch)" $?
expect_rc "ingest under the default before (--quant q8)" 0 "$K" ingest "${L[@]}" --quant q8 "$T/v3.txt" --name mid
[ "$(prof mid)" = "0.5 q8" ]; _s=$?; ok "  stored 1/2 q8: '$(prof mid)'" $_s
expect_rc "a plain query answers from the q8 default's snapshot" 0 "$K" query "${L[@]}" --json -n 4 mid "What is the code word?"
answered; ok "  a result with tokens" $?
expect_rc "the first default's snapshot of it too" 0 "$K" ingest "${L[@]}" --ratio 1/4 --quant fp16 "$T/v3.txt" --name mid
[ "$(prof mid)" = "0.25 fp16 | 0.5 q8" ]; _s=$?; ok "  it holds both: '$(prof mid)'" $_s
expect_rc "a query under another profile (1/8) is still refused (profile_mismatch)" 4 "$K" query "${L[@]}" --ratio 1/8 -n 4 old "What is the code word?"
"$D" --foreground --state "$KVSNAP_STATE" --socket "$S" --chunk 128 -t 2 --workers 1 2>"$T/daemon.log" &
DPID=$!
wait_ready daemon_ready "$S"; ok "kvsnapd starts with the default profile" $?
u=$(units_of mid q8)
expect_rc "a plain ingest of the document holding both old defaults" 0 "$K" ingest -s "$S" --json "$T/v3.txt" --name mid
skipped_with "$u"
ok "  skips it, picking the latest old default's (q8, $u units) over the first's" $?
expect_rc "through kvsnapd: a plain query of the old document" 0 "$K" query -s "$S" --json -n 4 old "What is the code word?"
answered; ok "  answers" $?
expect_rc "a plain ingest of it" 0 "$K" ingest -s "$S" --json "$T/v2.txt" --name old
python3 -c 'import json,sys; assert json.loads(sys.stdin.readline())["skipped"] is True' < "$T/out"
ok "  skips it as stored" $?
[ "$(prof old)" = "0.25 fp16" ]; _s=$?; ok "  and adds no snapshot: '$(prof old)'" $_s
expect_rc "ingest --force" 0 "$K" ingest -s "$S" --force "$T/v2.txt" --name old
[ "$(prof old)" = "0.25 fp16 | 0.5 q6h" ]; _s=$?; ok "  adds the default's snapshot, the old one kept: '$(prof old)'" $_s
u=$(units_of old q6h)
expect_rc "a plain ingest after it" 0 "$K" ingest -s "$S" --json "$T/v2.txt" --name old
skipped_with "$u"
ok "  skips it, picking the default's snapshot ($u units) over the old one" $?
kill -TERM "$DPID"; wait_exit; ok "kvsnapd stops cleanly" $?
expect_rc "the store verifies" 0 "$K" verify

finish
