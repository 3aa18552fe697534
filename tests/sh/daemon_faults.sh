#!/usr/bin/env bash
# kvsnapd under faults and load (real daemon, model, LMDB, CLI):
#  - kill -9 in the middle of an ingest: restart, the store verifies,
#    nothing partial is listed, the same document ingests again;
#  - SIGTERM in the middle of a streamed query: clean exit 0;
#  - 32 concurrent clients for a bounded time mixing queries, ingests
#    (inline), malformed, oversized, truncated and binary-garbage requests:
#    every valid request answered with a result, every bad one with an
#    error event (or a dropped connection for a truncated line), the
#    daemon alive afterwards, and its RSS stable (second half vs first).
set -u
. "$(dirname "$0")/lib.bash"
daemon_scratch faults
SAN=0
is_san "$D" && SAN=1
# drain: how long after the soak's window the queued requests may take to
# be answered.  Under ASan a model job is ~10x slower (an ingest of the
# small document: 14 s against 1.3 s on the 2-core AMD VM), and the 32
# clients can leave up to 32 jobs queued for the 2 model workers when the
# window closes (~16 x 14 s = 230 s): 240 s failed there by timeout while
# the daemon was still answering them, so ASan gets 600 s
words=3000 soak=40 drain=240
[ "$SAN" = 1 ] && words=600 soak=30 drain=600
prose GPL-3 $words > "$T/long.txt"
prose Apache-2.0 80 > "$T/small.txt"

start_daemon() {
	# fault handling does not depend on the policy: snapkv keeps the soak's
	# ingest cost what its timeouts were sized for (kvzip, the default, runs
	# through the daemon in daemon.sh)
	"$D" --foreground --state "$KVSNAP_STATE" --socket "$KVSNAP_SOCKET" --policy snapkv --budget 64 --chunk 64 \
		-t 1 --workers 2 --max-connections 128 --max-connections-per-user 128 --max-jobs 256 \
		--log-level warn 2>>"$T/daemon.log" &
	DPID=$!
	wait_ready daemon_ready
}

# ---- kill -9 mid-ingest
start_daemon; ok "daemon starts" $?
timeout 60 "$K" ingest --name small "$T/small.txt" >/dev/null 2>&1; ok "a first document stored" $?
timeout 300 "$K" ingest --json --name long "$T/long.txt" > "$T/ing.out" 2>&1 &
cpid=$!
for _ in $(seq 1 600); do grep -q '"progress"' "$T/ing.out" 2>/dev/null && break; sleep 0.1; done
grep -q '"progress"' "$T/ing.out" && ! grep -q '"doc_id"' "$T/ing.out"; ok "ingest under way (progress seen, no result yet)" $?
kill -KILL "$DPID"; wait "$DPID" 2>/dev/null; DPID=
wait "$cpid"; crc=$?
[ "$crc" -ne 0 ]; ok "the client sees the daemon die (exit $crc)" $?
rm -f "$KVSNAP_SOCKET"
start_daemon; ok "restart after kill -9" $?
timeout 120 "$K" verify >/dev/null 2>&1; ok "store verifies after kill -9" $?
"$K" ls > "$T/ls" 2>&1
grep -q small "$T/ls" && ! grep -q long "$T/ls"; ok "earlier document kept, killed ingest left nothing" $?
timeout 300 "$K" ingest --name long "$T/long.txt" >/dev/null 2>&1; ok "re-ingest after restart works" $?
"$K" ls | grep -q long; ok "and is listed" $?

# ---- SIGTERM mid-query
timeout 300 "$K" query -n 400 long "Repeat the document word for word." > "$T/q.out" 2>&1 &
qpid=$!
for _ in $(seq 1 600); do [ -s "$T/q.out" ] && break; sleep 0.05; done
kill -TERM "$DPID"
wait_exit; rc=$?
[ "$rc" -eq 0 ]; ok "SIGTERM during a query: exit 0 (got $rc)" $?
wait "$qpid"
[ ! -e "$KVSNAP_SOCKET" ]; ok "socket removed" $?

# ---- 32 concurrent clients, mixed good and bad, bounded time (the
# connection limit is set well above 32: a client's closed connection is
# counted until the loop reads its EOF, which lags under a flood of 2 MiB
# lines; the limit itself is tested in daemon.sh; all 32 run as one uid, so
# the per-user cap is raised with it: daemon_hostile.sh tests that one)
start_daemon; ok "restart for the soak" $?
cat > "$T/soak.py" <<'PY'
import json, os, socket, sys, threading, time, random
path, seconds, pid = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
small = open(sys.argv[4]).read()
lock = threading.Lock()
stats = {"ok": 0, "bad_ok": 0, "missing": [], "rss": []}
def rss():
    for l in open(f"/proc/{pid}/status"):
        if l.startswith("VmRSS:"): return int(l.split()[1])
def conn():
    s = socket.socket(socket.AF_UNIX); s.settimeout(300); s.connect(path); return s, s.makefile("rb")
def ask(line, want):
    """send one line; read events to the end; want 'result' or 'error'"""
    s, f = conn()
    try:
        s.sendall(line)
        while True:
            l = f.readline()
            if not l: return "eof"
            e = json.loads(l)
            if e.get("event") == "result":
                return "result"
            if e.get("event") == "error":
                return "error" if want == "error" else "error:" + str(e.get("code"))
    except (BrokenPipeError, ConnectionResetError):
        return "eof"  # the daemon hung up on an oversized line
    finally:
        s.close()
def worker(k):
    rnd = random.Random(k)
    end = time.time() + seconds
    i = 0
    while time.time() < end:
        i += 1; kind = rnd.choice(["query", "query", "ingest", "ls", "bad", "big", "trunc", "garbage"])
        rid = f"{k}-{i}"
        if kind == "query":
            line = json.dumps({"v": 1, "id": rid, "op": "query", "doc": "small", "question": "Who wrote it?", "max_tokens": 4})
            r = ask(line.encode() + b"\n", "result"); good = r == "result"
        elif kind == "ingest":
            line = json.dumps({"v": 1, "id": rid, "op": "ingest", "text": small + f" (copy {k} {i})"})
            r = ask(line.encode() + b"\n", "result"); good = r == "result"
        elif kind == "ls":
            r = ask(json.dumps({"v": 1, "id": rid, "op": "ls"}).encode() + b"\n", "result"); good = r == "result"
        elif kind == "bad":
            r = ask(b'{"id":"' + rid.encode() + b'","op":"query","doc":5}\n', "error"); good = r == "error"
        elif kind == "big":
            r = ask(b'{"id":1,"x":"' + b"y" * (2 << 20) + b'"}\n', "error"); good = r in ("error", "eof")
        elif kind == "garbage":
            r = ask(bytes(rnd.getrandbits(8) for _ in range(200)).replace(b"\n", b" ") + b"\n", "error"); good = r == "error"
        else:  # truncated: half a request, then hang up
            s, f = conn()
            try:
                s.sendall(b'{"v":1,"id":"t","op":"qu')
            except (BrokenPipeError, ConnectionResetError):
                pass
            s.close(); good = True; kind = "trunc"
        with lock:
            if good: stats["ok" if kind in ("query", "ingest", "ls") else "bad_ok"] += 1
            else: stats["missing"].append((kind, r))
def sampler():
    end = time.time() + seconds
    while time.time() < end:
        stats["rss"].append(rss()); time.sleep(0.5)
ts = [threading.Thread(target=worker, args=(k,)) for k in range(32)] + [threading.Thread(target=sampler)]
for t in ts: t.start()
for t in ts: t.join()
r = stats["rss"]; h = len(r) // 2
print(json.dumps({"valid_answered": stats["ok"], "bad_answered": stats["bad_ok"],
                  "missing": stats["missing"][:10], "n_missing": len(stats["missing"]),
                  "rss_first_half_max_kb": max(r[:h]), "rss_second_half_max_kb": max(r[h:]),
                  "rss_end_kb": r[-1]}))
PY
timeout $((soak + drain)) python3 "$T/soak.py" "$KVSNAP_SOCKET" "$soak" "$DPID" "$T/small.txt" > "$T/soak.json" 2> "$T/soak.err"
ok "soak ran to its end" $?
cat "$T/soak.json" | sed 's/^/# /'
tail -3 "$T/soak.err" | sed 's/^/# /'
python3 - "$T/soak.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
sys.exit(0 if r["n_missing"] == 0 and r["valid_answered"] > 0 and r["bad_answered"] > 0 else 1)
PY
ok "every valid request got a result, every bad one an error" $?
if [ "$SAN" = 1 ]; then
	# ASan keeps freed blocks in a 256 MiB quarantine, so RSS climbs by
	# design there; the plain build's run checks it (leaks: LSan at exit)
	echo "# SKIP: RSS stability under ASan (quarantine); checked in the plain build"
else
	python3 - "$T/soak.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
# stable: the second half's peak within 10 % + 16 MiB of the first half's
sys.exit(0 if r["rss_second_half_max_kb"] <= r["rss_first_half_max_kb"] * 1.10 + 16384 else 1)
PY
	ok "RSS stable under load" $?
fi
kill -0 "$DPID" 2>/dev/null; ok "daemon alive after the soak" $?
timeout 60 "$K" query -n 4 small "Who wrote it?" >/dev/null 2>&1; ok "and still answers" $?
timeout 120 "$K" verify >/dev/null 2>&1; ok "store verifies after the soak" $?
kill -TERM "$DPID"; wait_exit; ok "SIGTERM after the soak: exit 0" $?
finish
