#!/usr/bin/env bash
# kvsnapd over a data.mdb that is cut short (issue 15, defect 2): LMDB maps
# the file, and a page past a short file's end used to kill the daemon with
# SIGBUS on its next query.  Cut under the running daemon, a query is
# answered `corrupt` (exit 4) with the reason and the daemon stays up; the
# file put back, it answers again; started on a cut file, kvsnapd refuses
# with the reason.
set -u
. "$(dirname "$0")/lib.bash"
daemon_scratch store-cut
prose Apache-2.0 80 > "$T/small.txt"
# the check does not depend on the policy: snapkv keeps the ingest short
DARGS=(--foreground --socket "$KVSNAP_SOCKET" --policy snapkv --budget 64 --chunk 64 -t 1
	--workers 2 --log-level warn)

"$D" "${DARGS[@]}" --state "$KVSNAP_STATE" 2>>"$T/daemon.log" &
DPID=$!
wait_ready daemon_ready; ok "daemon starts" $?
EXPECT_TIMEOUT=120 # bounds each command: an ingest of 80 words takes seconds
expect_rc "ingest a document" 0 "$K" ingest --name small "$T/small.txt"
expect_rc "query it" 0 "$K" query -n 4 small "What is this about?"
cp "$KVSNAP_STATE/data.mdb" "$T/whole.mdb"
size=$(stat -c %s "$T/whole.mdb")
cut=$((size * 6 / 10))
truncate -s "$cut" "$KVSNAP_STATE/data.mdb"
expect_rc "query with data.mdb cut to $cut of $size bytes: corrupt" 4 \
	"$K" query -n 4 small "What is this about?"
grep -q "data.mdb is $cut bytes.*truncated" "$T/err"; ok "... naming the file and both sizes" $?
kill -0 "$DPID" 2>/dev/null; ok "the daemon is still up" $?
cp "$T/whole.mdb" "$KVSNAP_STATE/data.mdb"
expect_rc "the file put back: answered again" 0 "$K" query -n 4 small "What is this about?"
kill -TERM "$DPID"; wait_exit >/dev/null

rm -f "$KVSNAP_SOCKET"
truncate -s 8192 "$KVSNAP_STATE/data.mdb"
timeout 60 "$D" "${DARGS[@]}" --state "$KVSNAP_STATE" 2>"$T/start.log"; rc=$?
[ "$rc" -ne 0 ] && [ "$rc" -lt 124 ]; ok "started on a cut data.mdb: refused (exit $rc)" $?
grep -q "cannot open the store.*data.mdb is 8192 bytes.*truncated" "$T/start.log"
ok "... with the reason" $? || sed 's/^/#   /' "$T/start.log" | tail -3
[ ! -S "$KVSNAP_SOCKET" ]; ok "... and no socket left" $?
finish
