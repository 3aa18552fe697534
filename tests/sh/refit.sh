#!/usr/bin/env bash
# kvzip refit=1 stored (the bias section of snapshot formats 3 and 4, issue 28), end to end
# with the real model and LMDB: ingest --local --policy kvzip --opts refit=1
# stores the snapshot (the profile names refit=1, the store verifies, a
# query --local answers from it); a shrink of it is a refit cut too; then a
# real kvsnapd serving the same profile answers from the stored snapshot.
# (The logits of a loaded refit snapshot against the in-memory cache, bit
# for bit, are tests/test_kvzip.c `refit`; the codec's checks are
# tests/test_snapshot_refit.c.)
set -u
. "$(dirname "$0")/lib.bash"
need "$MODEL"
scratch refit
export KVSNAP_STATE=$T/state
words=300
is_san "$K" && words=200
printf 'The archive code word is PELICAN. %s\n' "$(head -c 20000 /usr/share/common-licenses/GPL-3 | tr -s ' \n' ' ' | cut -d' ' -f1-$words)" > "$T/gpl.txt"
P=(--local --policy kvzip --ratio 1/4 --opts refit=1 --chunk 128)

expect_rc "ingest --policy kvzip --opts refit=1" 0 "$K" ingest "${P[@]}" "$T/gpl.txt" --name gpl
$K info gpl > "$T/info.txt" 2>&1
grep -q "policy=kvzip:ratio=0.25,.*,refit=1 " "$T/info.txt"
ok "the profile names refit=1" $?
expect_rc "the store verifies (every biased record checked)" 0 "$K" verify
expect_rc "query --local answers from the refit snapshot" 0 "$K" query "${P[@]}" -n 12 gpl "What is the archive code word?"
[ -s "$T/out" ]; _s=$?; ok "with some text: $(head -c 80 "$T/out" | tr '\n' ' ')" $_s
expect_rc "an ingest of the same profile skips it" 0 "$K" ingest "${P[@]}" "$T/gpl.txt"

expect_rc "shrink the refit snapshot to 1/8" 0 "$K" shrink gpl --ratio 1/8
$K info gpl > "$T/info.txt" 2>&1
grep -q "policy=kvzip:ratio=0.125,.*refit=1,from=0.25 " "$T/info.txt"
ok "the cut is filed under ratio=0.125 ... refit=1,from=0.25" $?
expect_rc "the store still verifies" 0 "$K" verify
expect_rc "the cut answers" 0 "$K" query --local --policy kvzip --ratio 1/8 --opts refit=1,from=0.25 --chunk 128 -n 8 gpl "What is the archive code word?"

# ---- kvsnapd with the same profile answers from the stored snapshot
S=$T/d.sock
"$D" --foreground --state "$KVSNAP_STATE" --socket "$S" --policy kvzip --ratio 1/4 \
	--opts refit=1 --chunk 128 -t 2 --workers 1 2>"$T/daemon.log" &
DPID=$!
wait_ready daemon_ready "$S"; ok "kvsnapd starts (kvzip 1/4, refit=1)" $?
expect_rc "kvsnap query through kvsnapd answers from it" 0 env KVSNAP_SOCKET="$S" "$K" query -n 6 gpl "What is the archive code word?"
[ -s "$T/out" ]; _s=$?; ok "with some text: $(head -c 80 "$T/out" | tr '\n' ' ')" $_s
kill -TERM "$DPID"; wait_exit; ok "kvsnapd stops cleanly" $?

finish
