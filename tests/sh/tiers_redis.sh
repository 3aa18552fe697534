#!/usr/bin/env bash
# Two tiers over a real Redis Cluster (issue 17): starts 3 masters + 3
# replicas (tests/sh/redis_cluster.bash, with its ACL user), runs every check
# of tests/sh/tiers.sh against it (KVSNAP_TEST_SHARED=redis-cluster:..., the
# faults from tests/sh/tiers_redis_hooks.bash: SETRANGE on a record, every
# node shut down and started again), then two fresh hosts with the ACL
# user's credentials file: the master holding a document's slot SIGKILLed
# while host A ingests it -> the ingest completes after the failover or
# reports the error, no partial snapshot in the cluster or on either host,
# every earlier snapshot still answers from host B once the replica took
# over; and host B answers through its OpenAI HTTP front end from the shared
# tier too.
set -u
. "$(dirname "$0")/lib.bash"
. tests/sh/redis_cluster.bash
daemon_scratch tiers-redis
need command:redis-server command:redis-cli command:curl
unset KVSNAP_STATE KVSNAP_SOCKET
declare -A PIDS=()
cleanup() {
	local p
	for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null; done
	rcl_stop "$T/cluster"
	lib_cleanup
}
trap cleanup EXIT

rcl_start "$T/cluster"
ok "a 3 + 3 cluster on ports $RCL_PORTS reaches cluster_state:ok" $? || { finish; exit; }
SHARED=redis-cluster:$RCL_ADDR

# ---- every check of tiers.sh, against the cluster
KVSNAP_TEST_SHARED=$SHARED KVSNAP_TEST_TIER_HOOKS=$PWD/tests/sh/tiers_redis_hooks.bash \
	RCL_DIR=$T/cluster timeout 600 bash tests/sh/tiers.sh > "$T/tiers.tap" 2>&1
rc=$?
sed 's/^/    /' "$T/tiers.tap"
grep -q '^[1-9][0-9]* passed, 0 failed' "$T/tiers.tap" && [ $rc -eq 0 ]
ok "tiers.sh: every check against the Redis Cluster (exit $rc)" $?

# ---- a master SIGKILLed while host A ingests
printf 'user = %s\npassword = %s\n' "$RCL_USER" "$RCL_PASS" > "$T/auth"
chmod 600 "$T/auth"
P=(--budget 64 --chunk 64 -t 1 --workers 2 --log-level info --shared "$SHARED" --shared-auth "$T/auth")
start() { # HOST [flags]
	local h=$1; shift
	"$D" --state "$T/$h" --socket "$T/$h.sock" "${P[@]}" "$@" 2>>"$T/$h.log" &
	PIDS[$h]=$!
	DPID=$!
	wait_ready python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.settimeout(5)
s.connect(sys.argv[1]); s.sendall(b"{\"id\":0,\"op\":\"hello\"}\n"); assert b"result" in s.recv(65536)' "$T/$h.sock"
}
stop() {
	local rc
	kill -TERM "${PIDS[$1]}"; DPID=${PIDS[$1]}; wait_exit; rc=$?; unset "PIDS[$1]"
	ok "host ${1^^} stops cleanly (exit $rc)" $rc
}
jf() { # FILE KEY: KEY of the last JSON line
	python3 -c 'import json,sys; l=[x for x in open(sys.argv[1]) if x.startswith("{")][-1]; v=json.loads(l).get(sys.argv[2]); print(json.dumps(v) if isinstance(v,bool) or v is None else v)' "$1" "$2"
}
words=1500
is_san "$D" && words=600
prose GPL-2 $words > "$T/big.txt"
EXPECT_TIMEOUT=300
start a; ok "host A starts (ACL user from a 0600 credentials file)" $?
start b --http "unix:$T/b.http"; ok "host B starts, with the HTTP front end" $?
# doc_id: BLAKE2b-256 of a plain text file's bytes; master_of DOC_ID: the
# port of the master holding the slot of its keys (hash tag {DOC_ID})
doc_id() { python3 -c 'import hashlib,sys; print(hashlib.blake2b(open(sys.argv[1],"rb").read(), digest_size=32).hexdigest())' "$1"; }
master_of() {
	local slot
	slot=$(redis-cli -p "${RCL_PORTS%% *}" cluster keyslot "kvsnap:{$1}:meta")
	redis-cli -p "${RCL_PORTS%% *}" cluster nodes | python3 -c '
import sys
slot = int(sys.argv[1])
for l in sys.stdin:
    f = l.split()
    if "master" not in f[2] or "fail" in f[2]: continue
    for r in f[8:]:
        a, _, b = r.partition("-")
        if a.isdigit() and int(a) <= slot <= int(b or a):
            print(f[1].split("@")[0].split(":")[1])' "$slot"
}
BIG=$(doc_id "$T/big.txt")
victim=$(master_of "$BIG")
[ -n "$victim" ]; ok "the master of the big document's slot: port $victim" $?
# earlier documents, until one lives on that master too
earlier=() on_victim=
for lic in Apache-2.0 MPL-2.0 LGPL-3 GFDL-1.3 Artistic BSD CC0-1.0 GPL-1 LGPL-2 MPL-1.1; do
	prose "$lic" 150 > "$T/$lic.txt"
	id=$(doc_id "$T/$lic.txt")
	"$K" ingest --json -s "$T/a.sock" "$T/$lic.txt" > "$T/out" 2>&1 || break
	earlier+=("$id")
	[ "$(master_of "$id")" = "$victim" ] && on_victim=$id
	[ ${#earlier[@]} -ge 3 ] && [ -n "$on_victim" ] && break
done
[ -n "$on_victim" ] && [ "$(redis-cli -p "$victim" exists "kvsnap:{$on_victim}:meta")" = 1 ]
ok "A ingested ${#earlier[@]} documents, one of them on port $victim's slots" $? || cat "$T/out"
"$K" ingest --json -s "$T/a.sock" --name big "$T/big.txt" > "$T/big.out" 2> "$T/big.err" &
ipid=$!
sleep 1
kill -0 $ipid 2>/dev/null; ok "the ingest is still running when the master is killed" $?
bash tests/sh/redis_cluster.bash kill "$T/cluster" "$victim"
wait $ipid
irc=$?
[ "$(jf "$T/big.out" doc_id)" = "$BIG" ]; ok "the ingest's doc_id is the one whose master was killed" $?
if [ $irc -eq 0 ] && [ "$(jf "$T/big.out" shared)" = true ]; then
	ok "the ingest completed after the failover (shared: true)" 0
	big_shared=1
else
	[ $irc -eq 0 ] && [ -n "$(jf "$T/big.out" shared_error)" ] && grep -q "warning" "$T/big.err"
	ok "the ingest reports the shared tier's error, stored locally (exit $irc)" $? ||
		cat "$T/big.out" "$T/big.err"
	big_shared=0
fi
bash tests/sh/redis_cluster.bash wait_ok "$T/cluster"
ok "the replica took over: cluster_state:ok without port $victim" $?
expect_rc "kvsnap verify --shared after the kill: no partial or corrupt snapshot" 0 \
	"$K" verify --shared "$SHARED" --shared-auth "$T/auth"
expect_rc "kvsnap ls --shared --json" 0 "$K" ls --json --shared "$SHARED" --shared-auth "$T/auth"
grep -q "$BIG" "$T/out"; [ $? -eq $((1 - big_shared)) ]
ok "  ... the big document listed exactly when the ingest said the tier holds it" $?
for id in "${earlier[@]}"; do
	expect_rc "B answers ${id:0:12} (ingested on A before the kill) after the failover" 0 \
		"$K" query --json -s "$T/b.sock" -n 2 "$id" "What is this about?"
	[ "$(jf "$T/out" tier)" = shared ]; ok "  ... from the shared tier" $? || cat "$T/out" "$T/err"
done
if [ $big_shared = 1 ]; then
	expect_rc "B answers the big document" 0 "$K" query --json -s "$T/b.sock" -n 2 "$BIG" "Who?"
	[ "$(jf "$T/out" tier)" = shared ]; ok "  ... from the shared tier" $?
else
	expect_rc "B: the big document is not found (nothing partial)" 2 \
		"$K" query -s "$T/b.sock" -n 2 "$BIG" "Who?"
fi
expect_rc "kvsnap verify on B's local tier" 0 "$K" verify --state "$T/b"
expect_rc "kvsnap verify on A's local tier" 0 "$K" verify --state "$T/a"

# ---- the HTTP front end shares the job code: a shared-tier hit through it
prose GFDL-1.3 150 > "$T/e4.txt"
expect_rc "A ingests e4" 0 "$K" ingest --json -s "$T/a.sock" --name e4 "$T/e4.txt"
hits=$(grep -c "shared-tier hit" "$T/b.log")
code=$(curl -s -o "$T/http.out" -w '%{http_code}' --unix-socket "$T/b.http" \
	-H 'Content-Type: application/json' http://localhost/v1/chat/completions \
	-d '{"model":"kvsnap","document":"'"$(jf "$T/out" doc_id)"'","max_tokens":2,"messages":[{"role":"user","content":"Who?"}]}')
[ "$code" = 200 ] && grep -q '"choices"' "$T/http.out"
ok "B answers e4 through HTTP (status $code)" $? || cat "$T/http.out"
[ "$(grep -c "shared-tier hit" "$T/b.log")" -eq $((hits + 1)) ]
ok "  ... a shared-tier hit in B's log" $?
stop a; stop b
if is_san "$D"; then
	! grep -q "ERROR: \(Address\|Leak\|Undefined\)Sanitizer\|runtime error" "$T/a.log" "$T/b.log"
	ok "no sanitizer report in either log" $?
fi
finish
