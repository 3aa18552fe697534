#!/usr/bin/env bash
# kvsnapd listens before it has loaded (issue 30, item 1; docs/HTTP.md
# "Operations", docs/PROTOCOL.md "Starting"): while it loads, GET /health is
# 503 {"status":"loading"}, every other HTTP request 503 `loading` with a
# Retry-After, the socket protocol an error event `loading`; systemd's
# READY=1 only once loaded; `kvsnap query` waits for it.  Then it serves.
# A stop signal while loading exits 0 at once; a model that fails to load
# still exits non-zero with the reason.
#
# The load is held without timing: another process (python's ctypes over
# the system's liblmdb, as any LMDB writer would) holds the store's write
# transaction, so kvsnapd's store open waits on LMDB's writer lock until
# the test lets go; no sleep decides anything.
set -u
. "$(dirname "$0")/lib.bash"
daemon_scratch loading
need command:curl
H=$T/h.sock
mkdir -p "$KVSNAP_STATE"

# hold.py DIR: LMDB's write lock on DIR's store until stdin ends; says
# "held" once it has it
cat > "$T/hold.py" <<'PY'
import ctypes, sys
l = ctypes.CDLL("liblmdb.so.0")
env, txn = ctypes.c_void_p(), ctypes.c_void_p()
assert l.mdb_env_create(ctypes.byref(env)) == 0
assert l.mdb_env_open(env, sys.argv[1].encode(), 0, 0o600) == 0
assert l.mdb_txn_begin(env, None, 0, ctypes.byref(txn)) == 0
print("held", flush=True)
sys.stdin.read()
l.mdb_txn_abort(txn)
l.mdb_env_close(env)
PY
# notify.py PATH: systemd's notification socket, each datagram a line
cat > "$T/notify.py" <<'PY'
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); s.bind(sys.argv[1])
print("bound", flush=True)
while True:
    print(s.recv(4096).decode().replace("\n", " "), flush=True)
PY
hcurl() { curl -s --max-time 30 --unix-socket "$H" "$@"; }
proto() { # REQUEST: the first event line the daemon answers
	timeout 30 python3 - "$KVSNAP_SOCKET" "$1" <<'PY'
import socket, sys
s = socket.socket(socket.AF_UNIX); s.settimeout(30); s.connect(sys.argv[1])
s.sendall(sys.argv[2].encode() + b"\n"); print(s.makefile().readline().strip())
PY
}
hold() { # take the store's write lock (fd 7 keeps the holder waiting)
	rm -f "$T/hold.in" "$T/hold.out"
	mkfifo "$T/hold.in"
	python3 "$T/hold.py" "$KVSNAP_STATE" < "$T/hold.in" > "$T/hold.out" 2>&1 &
	HPID=$!
	exec 7>"$T/hold.in"
	wait_for "$T/hold.out" '^held'
}
release() { exec 7>&-; wait "$HPID"; }
start() { # kvsnapd with HTTP and a notification socket (not holding fd 7:
	# the holder waits for its end of file)
	NOTIFY_SOCKET=$T/notify "$D" --state "$KVSNAP_STATE" --socket "$KVSNAP_SOCKET" \
		--http "unix:$H" --budget 64 --chunk 64 -t 1 --workers 1 --log-level info \
		"$@" 2>>"$T/daemon.log" 7>&- &
	DPID=$!
}
answers() { [ "$(hcurl -o /dev/null -w '%{http_code}' http://localhost/health)" != 000 ]; }

python3 "$T/notify.py" "$T/notify" > "$T/notify.log" &
NPID=$!
trap 'kill $NPID 2>/dev/null; exec 7>&-; lib_cleanup' EXIT
wait_for "$T/notify.log" '^bound'

# ---- loading: the store's lock is held
hold; ok "another process holds the store's write lock" $?
start
wait_ready answers; ok "kvsnapd answers HTTP while it loads (it used to refuse the connection)" $?
hcurl -i http://localhost/health > "$T/h.out"
head -1 "$T/h.out" | grep -q "^HTTP/1.1 503" &&
	python3 -c 'import json,sys; e=json.loads(sys.argv[1]); sys.exit(e["status"] != "loading" or e["error"]["code"] != 503)' "$(tail -1 "$T/h.out")"
ok "GET /health while loading: 503 {\"status\":\"loading\",...}" $? || cat "$T/h.out"
grep -qi '^Retry-After: 1' "$T/h.out"; ok "  ... with Retry-After" $?
hcurl -i http://localhost/v1/chat/completions -H 'Content-Type: application/json' \
	-d '{"messages":[{"role":"user","content":"Hi"}]}' > "$T/c.out"
head -1 "$T/c.out" | grep -q "^HTTP/1.1 503" && grep -qi '^Retry-After: 1' "$T/c.out" &&
	python3 -c 'import json,sys; e=json.loads(sys.argv[1])["error"]; sys.exit(e["code"] != "loading" or e["type"] != "server_error" or "loading" not in e["message"])' "$(tail -1 "$T/c.out")"
ok "a chat completion while loading: 503, OpenAI's error shape, code loading, Retry-After" $? ||
	cat "$T/c.out"
code=$(hcurl -o /dev/null -w '%{http_code}' http://localhost/metrics)
[ "$code" = 503 ]; ok "GET /metrics while loading: 503 (got $code)" $?
code=$(hcurl -o /dev/null -w '%{http_code}' http://localhost/v1/models)
[ "$code" = 503 ]; ok "GET /v1/models while loading: 503 (got $code)" $?
ev=$(proto '{"v":1,"id":4,"op":"hello"}')
python3 -c 'import json,sys; e=json.loads(sys.argv[1]); sys.exit(e != {**e, "id": 4, "event": "error", "code": "loading", "class": "server"})' "$ev"
ok "socket protocol while loading: hello is an error event, code loading, class server" $? ||
	echo "# $ev"
ev=$(proto '{"v":1,"id":5,"op":"query","doc":"x","question":"Why?"}')
python3 -c 'import json,sys; e=json.loads(sys.argv[1]); sys.exit(e.get("code") != "loading" or e.get("id") != 5)' "$ev"
ok "socket protocol while loading: a query is refused with loading" $? || echo "# $ev"
"$K" query nosuchdoc "Why?" > "$T/q.out" 2> "$T/q.err" 7>&- &
QPID=$!
wait_for "$T/q.err" "waiting for kvsnapd: it is loading"
ok "kvsnap query waits for the load, and says so" $? || cat "$T/q.err"
kill -0 "$QPID" 2>/dev/null; ok "  ... still waiting" $?
! grep -q "READY=1" "$T/notify.log" && grep -q "STATUS=loading" "$T/notify.log"
ok "systemd: STATUS loading, no READY=1 yet" $? || cat "$T/notify.log"

# ---- loaded
release
wait_ready hcurl -f http://localhost/health; ok "the lock released: /health turns 200" $?
[ "$(hcurl http://localhost/health)" = '{"status":"ready"}' ]; ok "  ... {\"status\":\"ready\"}" $?
wait "$QPID"; rc=$?
[ "$rc" = 2 ] && grep -q "not_found" "$T/q.err" && [ "$(grep -c "waiting for kvsnapd" "$T/q.err")" = 1 ]
ok "the waiting query is answered once loaded (not_found, exit $rc), the wait said once" $? ||
	cat "$T/q.err"
wait_for "$T/notify.log" "READY=1"; ok "systemd: READY=1 once loaded" $? || cat "$T/notify.log"
ev=$(proto '{"v":1,"id":6,"op":"hello"}')
python3 -c 'import json,sys; e=json.loads(sys.argv[1]); sys.exit(e.get("event") != "result" or not e.get("model"))' "$ev"
ok "hello answered with the model" $? || echo "# $ev"
code=$(hcurl -o /dev/null -w '%{http_code}' http://localhost/v1/models)
[ "$code" = 200 ]; ok "GET /v1/models: 200 (got $code)" $?
grep -q "loading the model and the store" "$T/daemon.log" && grep -q "ready$" "$T/daemon.log"
ok "the log says loading, then ready" $?
kill -TERM "$DPID"; wait_exit; rc=$?
[ "$rc" = 0 ]; ok "SIGTERM: exit 0 (got $rc)" $?

# ---- a stop signal while loading: exit 0 at once, the sockets removed
hold; ok "the store's write lock held again" $?
start
wait_ready answers; ok "loading again" $?
kill -TERM "$DPID"; wait_exit; rc=$?
[ "$rc" = 0 ] && [ ! -e "$KVSNAP_SOCKET" ] && [ ! -e "$H" ]
ok "SIGTERM while loading: exit 0 (got $rc), both sockets removed" $?
grep -q "while loading: stopped" "$T/daemon.log"; ok "  ... and the log says so" $?
release

# ---- a model that fails to load: exit non-zero with the reason
printf 'not a model\n%.0s' $(seq 1 10) > "$T/bad.gguf"
start --model "$T/bad.gguf"
wait_exit; rc=$?
[ "$rc" != 0 ] && grep -q "cannot load the model $T/bad.gguf" "$T/daemon.log" &&
	[ ! -e "$KVSNAP_SOCKET" ] && [ ! -e "$H" ]
ok "a model that fails to load: exit $rc, the reason logged, the sockets removed" $? ||
	tail -3 "$T/daemon.log" | sed 's/^/#   /'
finish
