#!/usr/bin/env bash
# tiers_ingest_outage.sh: an ingest while the shared tier (a real Redis
# Cluster, 3 masters + 3 replicas) stops answering (every node paused with
# SIGSTOP: connections stay open, replies never come, so the first call
# waits for its whole 15 s budget) under kvsnapd with one model worker
# (issue 26):
#  - the ingest's shared-tier steps (is it there? copy it out) run on the
#    tier worker, so queries of a locally stored document started meanwhile
#    are answered at local speed (they waited for the ingest's tier call
#    when it ran on the model worker);
#  - the ingest ends with a clear result: stored locally, not in the shared
#    tier, and saying it is copied there when the tier is back;
#  - the nodes resumed, the prober copies it there: nothing lost (answered
#    from the shared tier once the local copy is removed).
set -u
. "$(dirname "$0")/lib.bash"
. tests/sh/redis_cluster.bash
daemon_scratch tiers-ingest-outage
need command:redis-server command:redis-cli
unset KVSNAP_STATE KVSNAP_SOCKET
paused=
cleanup() {
	local p
	for p in $paused; do kill -CONT "$(cat "$T/cluster/$p.pid")" 2>/dev/null; done
	rcl_stop "$T/cluster"; lib_cleanup
}
trap cleanup EXIT

rcl_start "$T/cluster"
ok "a 3 + 3 cluster on ports $RCL_PORTS reaches cluster_state:ok" $? || { finish; exit; }
SHARED=redis-cluster:$RCL_ADDR

proto_py
proto() { timeout 400 python3 "$T/proto.py" "$T/a.sock" "$1" 400; }
field() { python3 -c 'import json,sys; e=json.loads(open(sys.argv[1]).read().split("\n")[0]); print(e.get(sys.argv[2]))' "$1" "$2"; }
ask() { proto "{\"id\":2,\"op\":\"query\",\"doc\":\"$1\",\"question\":\"Who?\",\"max_tokens\":2}"; }
now() { date +%s.%N; }

# one model worker: anything that held it would hold every query
daemon_start "$T/a.sock" "$T/a.log" --state "$T/a" -t 1 --workers 1 --log-level info \
	--shared "$SHARED"
ok "kvsnapd starts with the cluster as its shared tier (one model worker)" $?
# sanitizer builds are ~10x slower: shorter documents there
words=200 limit=90
is_san "$D" && words=60 limit=300
prose GPL-3 $words > "$T/local.txt"
prose Apache-2.0 $words > "$T/new.txt"
"$K" ingest -s "$T/a.sock" --name local "$T/local.txt" >/dev/null 2>&1
ok "'local' ingested (and copied to the shared tier)" $?
ask local > "$T/q0"
[ "$(field "$T/q0" tier)" = local ]; ok "'local' is answered from the local tier" $? || cat "$T/q0"

# ---- every node paused: the tier is still up as far as kvsnapd knows
for p in $RCL_PORTS; do kill -STOP "$(cat "$T/cluster/$p.pid")" && paused="$paused $p"; done
ok "all 6 nodes paused (SIGSTOP)" $?

python3 - "$T/new.txt" > "$T/ingest.req" <<'PY'
import json, sys
print(json.dumps({"id": 3, "op": "ingest", "name": "new", "text": open(sys.argv[1]).read()}))
PY
ti0=$(now)
( proto "$(cat "$T/ingest.req")" > "$T/ingest.out"; now > "$T/ingest.end" ) &
ipid=$!
sleep 1
worst=0 bad=0
for i in 1 2 3; do
	t0=$(now)
	ask local > "$T/ql"
	t1=$(now)
	[ "$(field "$T/ql" event)" = result ] && [ "$(field "$T/ql" tier)" = local ] || bad=1
	worst=$(python3 -c "print(round(max($worst, $t1 - $t0), 2))")
done
[ $bad = 0 ]; ok "queries of 'local' during the ingest are answered from the local tier" $? ||
	cat "$T/ql"
# Bound: a local 2-token query takes ~0.2 s here; the ingest's first call to
# the paused tier waits its whole 15 s budget, so a query that waited for it
# (the ingest's tier step on the only model worker) takes over 10 s.  The
# rest is headroom for a loaded 2-core machine.
python3 -c "import sys; sys.exit(0 if $worst < 4.0 else 1)"
ok "... at local speed while the ingest waits on the paused tier (slowest $worst s < 4 s)" $?

wait $ipid
took=$(python3 -c "print(round($(cat "$T/ingest.end" 2>/dev/null || echo 0) - $ti0, 1))")
echo "# the ingest took $took s (the tier's 15 s budget, then the model; a busy machine)"
[ "$(field "$T/ingest.out" event)" = result ] && [ "$(field "$T/ingest.out" skipped)" = False ]
ok "the ingest ends with a result: stored" $? || cat "$T/ingest.out"
[ "$(field "$T/ingest.out" shared)" = False ] &&
	field "$T/ingest.out" shared_error | grep -q "copied there when it is back"
ok "  ... not in the shared tier yet, saying it is copied there when the tier is back" $? ||
	cat "$T/ingest.out"
# Bound: the tier's 15 s budget once, then the model's ingest (~12 s here,
# 10x that under AddressSanitizer), with headroom for a loaded machine.
python3 -c "import sys; sys.exit(0 if $took < $limit else 1)"
ok "  ... within the tier's budget plus the model's time ($took s < $limit s)" $?
"$K" ls --json --state "$T/a" > "$T/ls-local" 2>&1 && grep -q '"name": *"new"' "$T/ls-local"
ok "'new' is in the local tier" $? || cat "$T/ls-local"

# ---- the nodes resumed: the prober brings the tier back and copies 'new' out
for p in $paused; do kill -CONT "$(cat "$T/cluster/$p.pid")"; done
paused=
rcl_wait_ok "$T/cluster"; ok "the nodes resumed, cluster_state:ok" $?
for i in $(seq 1 120); do
	grep -q "stored locally during the outage copied there" "$T/a.log" && break
	sleep 0.5
done
grep -q "reachable again" "$T/a.log"; ok "the log says the tier is back" $?
grep -q ": 1 of 1 snapshot stored locally during the outage copied there" "$T/a.log"
ok "  ... and that the snapshot stored during the outage was copied there" $? ||
	grep "shared tier" "$T/a.log" | tail -5
"$K" ls --json --shared "$SHARED" > "$T/ls-shared" 2>&1 &&
	grep -q '"name": *"new"' "$T/ls-shared" && grep -q '"name": *"local"' "$T/ls-shared"
ok "the shared tier holds 'new' and 'local'" $? || cat "$T/ls-shared"
"$K" rm --state "$T/a" new >/dev/null 2>&1
ask new > "$T/q2"
[ "$(field "$T/q2" event)" = result ] && [ "$(field "$T/q2" tier)" = shared ]
ok "'new' removed locally is answered from the shared tier's copy: nothing lost" $? ||
	cat "$T/q2"
kill -TERM $DPID; wait_exit; ok "kvsnapd stops cleanly" $?
finish
