#!/usr/bin/env bash
# bench/http.sh [ROUNDS]: the OpenAI-compatible HTTP endpoint (docs/HTTP.md)
# against the socket protocol, on one kvsnapd (--http on a loopback port):
# requests per second for GET /v1/models (4 client threads, kept-alive
# connections) and for short chat completions over a snapshot (one client,
# max_tokens 8), and the time to first token of a streamed answer over the
# snapshot through HTTP vs the socket protocol (p50 / p95 of ROUNDS each,
# default 30).  Clients are Python's standard library, so the numbers are the
# server's, not a client package's.  Prints a table.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
ROUNDS=${1:-30}
MODEL=models/SmolLM2-135M-Instruct.Q4_1.gguf
[ -x "$BUILD/kvsnapd" ] && [ -e "$MODEL" ] || { echo "bench/http.sh: make all model first" >&2; exit 1; }
T=$(mktemp -d /tmp/kvsnap-bench-http-XXXXXX)
DPID=
trap '[ -n "$DPID" ] && kill "$DPID" 2>/dev/null; rm -rf "$T"' EXIT
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$BUILD/kvsnapd" --state "$T/state" --socket "$T/d.sock" --http "127.0.0.1:$port" \
	--workers 2 --max-connections-per-user 64 2>"$T/daemon.log" &
DPID=$!
head -c 100000 /usr/share/common-licenses/GPL-3 | tr -s ' \n' ' ' | cut -d' ' -f1-300 > "$T/doc.txt"
for i in $(seq 1 300); do
	curl -sf "http://127.0.0.1:$port/v1/models" >/dev/null 2>&1 && break
	kill -0 "$DPID" || { cat "$T/daemon.log" >&2; exit 1; }
	sleep 0.1
done
KVSNAP_SOCKET=$T/d.sock "$BUILD/kvsnap" ingest --name doc "$T/doc.txt" >/dev/null
python3 - "$port" "$T/d.sock" "$ROUNDS" <<'PY'
import http.client, json, socket, statistics, sys, threading, time

port, sock, rounds = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
Q = "What is this document about?"

def conn():
    return http.client.HTTPConnection("127.0.0.1", port, timeout=120)

def models_rate(threads=4, per=500):
    def run():
        c = conn()
        for _ in range(per):
            c.request("GET", "/v1/models")
            r = c.getresponse(); r.read()
            assert r.status == 200
    ts = [threading.Thread(target=run) for _ in range(threads)]
    t0 = time.perf_counter()
    for t in ts: t.start()
    for t in ts: t.join()
    return threads * per / (time.perf_counter() - t0)

def chat_body(stream):
    return json.dumps({"document": "doc", "max_tokens": 8, "stream": stream,
                       "messages": [{"role": "user", "content": Q}]})

def chat_rate(n):
    c = conn()
    t0 = time.perf_counter()
    for _ in range(n):
        c.request("POST", "/v1/chat/completions", chat_body(False),
                  {"Content-Type": "application/json"})
        r = c.getresponse(); r.read()
        assert r.status == 200
    return n / (time.perf_counter() - t0)

def ttft_http():
    c = conn()
    t0 = time.perf_counter()
    c.request("POST", "/v1/chat/completions", chat_body(True), {"Content-Type": "application/json"})
    r = c.getresponse()
    first = None
    while True:
        line = r.readline()  # de-chunked
        if not line:
            break
        if first is None and line.startswith(b"data: {") and b'"content"' in line:
            first = time.perf_counter() - t0
        if line.startswith(b"data: [DONE]"):
            break
    r.read(); c.close()
    return first

def ttft_socket():
    s = socket.socket(socket.AF_UNIX); s.connect(sock); f = s.makefile("rb")
    t0 = time.perf_counter()
    s.sendall((json.dumps({"id": 1, "op": "query", "doc": "doc", "question": Q,
                           "max_tokens": 8}) + "\n").encode())
    first = None
    for line in f:
        e = json.loads(line)
        if first is None and e["event"] == "token":
            first = time.perf_counter() - t0
        if e["event"] in ("result", "error"):
            break
    s.close()
    return first

def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]

ttft_http(); ttft_socket()  # warm: the snapshot in the page cache
m = models_rate()
cr = chat_rate(rounds)
h = [ttft_http() for _ in range(rounds)]
s = [ttft_socket() for _ in range(rounds)]
print("| measure | value |")
print("|---|---|")
print("| GET /v1/models, 4 threads x 500 kept-alive | %.0f req/s |" % m)
print("| chat completion over a snapshot, max_tokens 8, sequential | %.2f req/s |" % cr)
print("| TTFT streamed, HTTP (SSE): p50 / p95 of %d | %.1f / %.1f ms |" %
      (rounds, 1e3 * pct(h, 50), 1e3 * pct(h, 95)))
print("| TTFT streamed, socket protocol: p50 / p95 of %d | %.1f / %.1f ms |" %
      (rounds, 1e3 * pct(s, 50), 1e3 * pct(s, 95)))
PY
kill -TERM "$DPID"; wait "$DPID" || true; DPID=
