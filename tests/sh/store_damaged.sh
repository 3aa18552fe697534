#!/usr/bin/env bash
# store_damaged.sh: one flipped byte in one document's metadata costs only
# that document (issue 26, defect 12), in a real LMDB store (through
# kvsnapd: the `ls` op, GET /v1/documents, the `prune` op; and the CLI's
# ls and prune) and in a real Redis Cluster (the CLI's ls and prune with
# --shared).  Before: every listing listed nothing and prune refused to
# run, with a message that did not name the document.
set -u
. "$(dirname "$0")/lib.bash"
. tests/sh/redis_cluster.bash
daemon_scratch store-damaged
need command:mdb_dump command:mdb_load command:curl
unset KVSNAP_STATE KVSNAP_SOCKET
cleanup() { rcl_stop "$T/cluster"; lib_cleanup; }
trap cleanup EXIT

proto_py
proto() { timeout 120 python3 "$T/proto.py" "$T/d.sock" "$1"; }
# py FILE EXPR: EXPR over the JSON object e of FILE's last line
py() { python3 -c 'import json,sys; e=json.loads([l for l in open(sys.argv[1]) if l.strip()][-1]); print(eval(sys.argv[2]))' "$1" "$2"; }

daemon_start "$T/d.sock" "$T/daemon.log" --state "$T/state" --http "unix:$T/d.http" -t 1 \
	--workers 1 --log-level info
ok "kvsnapd starts (socket and HTTP)" $?
ids=()
for lic in GPL-3 Apache-2.0 MPL-2.0; do
	prose "$lic" 120 > "$T/$lic.txt"
	"$K" ingest --json -s "$T/d.sock" --name "$lic" "$T/$lic.txt" > "$T/i" 2>&1 || break
	ids+=("$(py "$T/i" 'e["doc_id"]')")
done
[ ${#ids[@]} = 3 ] && [ ${#ids[1]} = 64 ]; ok "three documents ingested" $? || cat "$T/i"
BAD=${ids[1]}

# one byte of Apache-2.0's metadata flipped, through lmdb-utils' dump/load
mdb_dump -s docs "$T/state" > "$T/dump" &&
python3 - "$T/dump" "$BAD" <<'PY' && mdb_load -s docs "$T/state" < "$T/dump" 2>"$T/load.err"
import sys
path, doc = sys.argv[1], sys.argv[2]
lines = open(path).read().split("\n")
i = lines.index(" " + doc)
v = lines[i + 1]
j = 1 + 2 * (len(v) // 4)
lines[i + 1] = v[:j] + "%02x" % (int(v[j:j + 2], 16) ^ 0x01) + v[j + 2:]
open(path, "w").write("\n".join(lines))
PY
ok "one byte of ${BAD:0:12}'s metadata flipped in the LMDB store" $? || cat "$T/load.err"

expect_rc "kvsnap ls still lists the others" 0 "$K" ls --state "$T/state"
grep -q GPL-3 "$T/out" && grep -q MPL-2.0 "$T/out" && ! grep -q Apache "$T/out"
ok "  ... both undamaged documents, not the damaged one" $? || cat "$T/out"
grep -q "warning: ls: .*${BAD:0:12}" "$T/err"; ok "  ... a warning names the damaged document" $? || cat "$T/err"
expect_rc "kvsnap ls --json too" 0 "$K" ls --json --state "$T/state"
[ "$(py "$T/out" 'len(e["docs"])')" = 2 ]; ok "  ... two documents" $? || cat "$T/out"

proto '{"id":1,"op":"ls"}' > "$T/ls"
[ "$(py "$T/ls" 'len(e["docs"])')" = 2 ] && [ "$(py "$T/ls" 'e["damaged"][0]["doc_id"]')" = "$BAD" ]
ok "the ls op: two documents, and the damaged one under damaged (for root)" $? || cat "$T/ls"
# issue 32: one shape for a document, written once (service/store_json.c):
# the ls op's documents are `kvsnap ls --json`'s ($T/out), but for mine
# (whether kvsnapd's caller owns it)
python3 - "$T/ls" "$T/out" <<'PY'
import json, sys
last = lambda p: json.loads([l for l in open(p) if l.strip()][-1])["docs"]
op, cli = last(sys.argv[1]), last(sys.argv[2])
def same(a, b):  # the CLI writes reals with 6 significant digits (cli_json.c)
    if isinstance(a, float) or isinstance(b, float):
        return abs(a - b) <= 1e-5 * max(abs(a), abs(b), 1)
    return a == b
sys.exit(not (len(op) == len(cli) == 2 and all(
    isinstance(d.pop("mine", None), bool) and list(d) == list(c) and
    all(same(d[k], c[k]) for k in d) for d, c in zip(op, cli))))
PY
ok "  ... the same documents, member for member, as ls --json (but mine)" $? || cat "$T/ls" "$T/out"
grep -q "ls: skipped a damaged document: .*${BAD:0:12}" "$T/daemon.log"
ok "  ... the daemon's log names it" $?
code=$(curl -s -o "$T/http" -w '%{http_code}' --unix-socket "$T/d.http" http://localhost/v1/documents)
[ "$code" = 200 ] && [ "$(py "$T/http" 'len(e["data"])')" = 2 ]
ok "GET /v1/documents: 200 with the two documents (status $code)" $? || cat "$T/http"
[ "$(py "$T/http" 'e["damaged"][0]["doc_id"]')" = "$BAD" ] &&
	py "$T/http" 'e["damaged"][0]["error"]' | grep -q "${BAD:0:12}"
ok "  ... and the damaged one under damaged, named, as the ls op (for root)" $? || cat "$T/http"

proto '{"id":2,"op":"prune","keep":1,"dry_run":true}' > "$T/pr"
[ "$(py "$T/pr" 'e.get("event")')" = result ] && [ "$(py "$T/pr" 'e["dropped"]')" = 1 ] &&
	[ "$(py "$T/pr" 'e["damaged"][0]["doc_id"]')" = "$BAD" ]
ok "the prune op runs (keep 1: one to drop) and reports the damaged one skipped" $? || cat "$T/pr"
expect_rc "kvsnap prune runs" 0 "$K" prune --state "$T/state" --keep 1
grep -q "dropped 1 snapshot" "$T/out"; ok "  ... dropping the oldest readable snapshot" $? || cat "$T/out"
grep -q "warning: prune: .*${BAD:0:12}.*skipped" "$T/err"; ok "  ... and names the damaged document it skipped" $? || cat "$T/err"
expect_rc "kvsnap verify reports the damaged document" 4 "$K" verify --state "$T/state"
kill -TERM $DPID; wait_exit; ok "kvsnapd stops cleanly" $?
DPID=

# ---- the same on a Redis Cluster (the shared tier's backend)
if command -v redis-server >/dev/null && command -v redis-cli >/dev/null; then
	rcl_start "$T/cluster"
	ok "a 3 + 3 cluster on ports $RCL_PORTS" $? || { finish; exit; }
	SHARED=redis-cluster:$RCL_ADDR
	P0=${RCL_PORTS%% *}
	daemon_start "$T/d2.sock" "$T/daemon2.log" --state "$T/state2" -t 1 --workers 1 \
		--shared "$SHARED"
	for lic in GPL-3 Apache-2.0 MPL-2.0; do
		"$K" ingest -s "$T/d2.sock" --name "$lic" "$T/$lic.txt" >/dev/null 2>&1
	done
	kill -TERM $DPID; wait_exit; DPID=
	expect_rc "three documents in the cluster" 0 "$K" ls --shared "$SHARED"
	[ "$(grep -c -e GPL-3 -e Apache -e MPL "$T/out")" = 3 ]; ok "  ... listed" $? || cat "$T/out"
	key="kvsnap:{$BAD}:meta"
	len=$(redis-cli -c -p "$P0" strlen "$key")
	off=$((len / 2))
	b=$(redis-cli -c -p "$P0" --raw getrange "$key" "$off" "$off" | od -An -tx1 | awk '{print $1}')
	ch=x; [ "$b" = 78 ] && ch=y
	[ "$(redis-cli -c -p "$P0" setrange "$key" "$off" "$ch")" = "$len" ]
	ok "one byte of ${BAD:0:12}'s metadata changed in the cluster" $?
	expect_rc "kvsnap ls --shared still lists the others" 0 "$K" ls --shared "$SHARED"
	grep -q GPL-3 "$T/out" && grep -q MPL-2.0 "$T/out" && ! grep -q Apache "$T/out"
	ok "  ... both undamaged documents" $? || cat "$T/out"
	grep -q "warning: ls: .*${BAD:0:12}" "$T/err"; ok "  ... a warning names the damaged one" $? || cat "$T/err"
	expect_rc "kvsnap prune --shared runs" 0 "$K" prune --shared "$SHARED" --keep 1
	grep -q "dropped 1 snapshot" "$T/out"; ok "  ... dropping the oldest readable snapshot" $? || cat "$T/out"
	grep -q "warning: prune: .*${BAD:0:12}.*skipped" "$T/err"; ok "  ... naming the damaged one it skipped" $? || cat "$T/err"
fi
finish
