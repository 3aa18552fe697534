#!/usr/bin/env bash
# kvsnapd against hostile and clumsy clients (issue 15, defects 1 and 6): a
# real daemon with short timeouts set by flags.  One uid holding its
# per-user cap of idle sockets is refused the next one with
# too_many_connections while another uid (nobody) still gets in, and the
# CLI prints the refusal instead of "Broken pipe" (also when its write
# comes after the daemon closed: the write is delayed with strace); an idle
# socket is closed after --idle-timeout with a timeout event, a slowloris
# line after --request-timeout, a connection with a job in flight is not
# idle; a client that shuts down its write side after a query gets the
# whole answer, one that then closes altogether still cancels its ingest.
# Bounded: every wait has a deadline.
set -u
. "$(dirname "$0")/lib.bash"
daemon_scratch hostile
P=(--budget 64 --chunk 64)
EXPECT_TIMEOUT=120
IDLE=4 REQ=1 CAP=3
# long.txt is ingested by a client that leaves during it (several seconds
# of prefill, cancelled); mid.txt takes a few seconds, longer than IDLE on
# most machines, and is stored
words=1500 mid=120
is_san "$D" && words=400 mid=40 # sanitizer builds are ~10x slower
prose GPL-3 $words > "$T/long.txt"
prose LGPL-2.1 $mid > "$T/mid.txt"
prose Apache-2.0 60 > "$T/small.txt"

start_daemon() {
	"$D" --foreground --state "$KVSNAP_STATE" --socket "$KVSNAP_SOCKET" "${P[@]}" -t 2 \
		--workers 2 --max-connections 8 --max-connections-per-user $CAP \
		--idle-timeout $IDLE --request-timeout $REQ --log-level debug 2>>"$T/daemon.log" &
	DPID=$!
	wait_ready python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX); s.settimeout(5); s.connect(sys.argv[1])
s.sendall(b"{\"id\":0,\"op\":\"hello\"}\n"); assert b"\"protocol\"" in s.recv(4096)' "$KVSNAP_SOCKET"
}
# wait (up to 30 s) until the daemon has closed every connection it accepted
wait_no_conns() {
	local i
	for i in $(seq 1 300); do
		[ "$(log_count ': from pid')" -le "$(log_count ': closed (')" ] && return 0
		sleep 0.1
	done
	return 1
}

start_daemon; ok "daemon starts with the connection limits" $?
# others may connect (the cap test connects as nobody)
chmod 0711 "$T" && chmod 0666 "$KVSNAP_SOCKET"
expect_rc "ingest a small document" 0 "$K" ingest "$T/small.txt" --name small

# ---- half-close (defect 6): the query is answered in full, then EOF
timeout 60 python3 - "$KVSNAP_SOCKET" > "$T/half" 2>&1 <<'PY'
import json, socket, sys
s = socket.socket(socket.AF_UNIX); s.settimeout(30); s.connect(sys.argv[1])
s.sendall(b'{"v":1,"id":1,"op":"query","doc":"small","question":"What is this?","max_tokens":8}\n')
s.shutdown(socket.SHUT_WR)
f = s.makefile("rb")
kinds = []
for l in f:
    kinds.append(json.loads(l)["event"])
print(" ".join(kinds) + " EOF")
PY
grep -q '^token.* result EOF$' "$T/half"; ok "half-closed after a query: tokens, result, then EOF" $? ||
	sed 's/^/#   /' "$T/half" | tail -5
timeout 60 python3 - "$KVSNAP_SOCKET" > "$T/half2" 2>&1 <<'PY'
import json, socket, sys
s = socket.socket(socket.AF_UNIX); s.settimeout(30); s.connect(sys.argv[1])
s.sendall(b'{"id":2,"op":"ls"}\n{"id":3,"op":"hello"}')   # the last line unended
s.shutdown(socket.SHUT_WR)
print(" ".join("%s:%s:%s" % (e["id"], e["event"], e.get("code", "")) for e in map(json.loads, s.makefile("rb"))))
PY
grep -q '2:result:' "$T/half2" && grep -q 'None:error:bad_request' "$T/half2"
ok "half-closed: ls answered, an unended line refused" $? || sed 's/^/#   /' "$T/half2" | tail -5
# a client that half-closes and then goes away altogether still cancels
ncanc=$(log_count "ingest cancelled")
timeout 60 python3 - "$KVSNAP_SOCKET" "$T/long.txt" > "$T/gone" 2>&1 <<'PY'
import json, os, socket, sys
s = socket.socket(socket.AF_UNIX); s.settimeout(30); s.connect(sys.argv[1])
s.sendall((json.dumps({"id": 4, "op": "ingest", "text": open(sys.argv[2]).read(), "name": "gone"}) + "\n").encode())
s.shutdown(socket.SHUT_WR)
for l in s.makefile("rb"):
    if b'"prefill"' in l: os._exit(0)
PY
wait_log "ingest cancelled" $((ncanc + 1)) && grep -q "client left; cancelling its ingest" "$T/daemon.log"
ok "half-closed, then gone: the ingest is cancelled" $?
"$K" info gone >/dev/null 2>&1; [ $? -eq 2 ]; ok "the cancelled ingest stored nothing" $?

# ---- the per-user cap (defect 1): this uid holds CAP sockets; its next
# one is refused with the reason, another uid still gets in, and the CLI
# prints the refusal (plain, and with its write delayed past the daemon's
# close, which was "Broken pipe" before)
wait_no_conns
timeout 60 python3 - "$KVSNAP_SOCKET" "$CAP" "$K" > "$T/cap" 2>&1 <<'PY'
import json, os, socket, subprocess, sys
path, cap, cli = sys.argv[1], int(sys.argv[2]), sys.argv[3]
def conn():
    s = socket.socket(socket.AF_UNIX); s.settimeout(10); s.connect(path); return s
def ask(s, line):
    s.sendall(line + b"\n"); return s.makefile("rb").readline().decode().strip()
held = [conn() for _ in range(cap)]
for s in held:                      # each accepted and counted
    assert '"protocol"' in ask(s, b'{"id":0,"op":"hello"}')
s = conn()
print("refused:", s.makefile("rb").readline().decode().strip())
r, w = os.pipe()
if os.fork() == 0:                  # another uid, the same moment
    os.close(r); os.setgid(65534); os.setuid(65534)
    try: out = ask(conn(), b'{"id":1,"op":"hello"}')
    except Exception as e: out = "nobody failed: %r" % e
    os.write(w, out.encode()); os._exit(0)
os.close(w); os.wait()
print("nobody:", os.read(r, 65536).decode())
for name, pre in (("cli", []), ("cli-late", ["strace", "-f", "-o", "/dev/null", "-e", "trace=sendmsg",
        "-e", "inject=sendmsg:delay_enter=500000"])):
    for s in held:                  # still held: not idle (a slow start, a sanitizer build)
        assert '"protocol"' in ask(s, b'{"id":0,"op":"hello"}')
    # LeakSanitizer cannot run under ptrace (strace): off for the delayed run
    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=0") if pre else None
    p = subprocess.run(pre + [cli, "query", "-n", "4", "small", "Who?"], capture_output=True,
                       timeout=30, env=env)
    print("%s: rc=%d %s" % (name, p.returncode, p.stderr.decode().strip().replace("\n", " | ")))
PY
grep '^refused:' "$T/cap" | grep -q 'too_many_connections.*uid'; ok "over the per-user cap: too_many_connections naming the uid" $? || cat "$T/cap"
grep '^nobody:' "$T/cap" | grep -q '"protocol"'; ok "another uid still gets in" $?
grep '^cli:' "$T/cap" | grep -q 'rc=3 .*per-user.*(too_many_connections)'; ok "the CLI prints the refusal, exit 3" $?
grep '^cli-late:' "$T/cap" | grep 'rc=3 .*per-user.*(too_many_connections)' | grep -vq 'Broken pipe'
ok "the CLI writing after the daemon closed prints the refusal, not Broken pipe" $? ||
	grep '^cli' "$T/cap" | sed 's/^/#   /'

# ---- timeouts: idle sockets, slowloris lines; a job in flight is not idle
wait_no_conns
timeout 120 python3 - "$KVSNAP_SOCKET" "$IDLE" "$REQ" "$T/mid.txt" > "$T/time" 2>&1 <<'PY'
import json, socket, sys, threading, time
path, idle, req, doc = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
def conn():
    s = socket.socket(socket.AF_UNIX); s.settimeout(idle + 10); s.connect(path); return s
def until_eof(s, t0):
    evs = []
    try:
        for l in s.makefile("rb"):
            evs.append(json.loads(l))
    except ConnectionResetError:
        # a Unix socket closed with bytes of ours it never read resets: the
        # slowloris client may have sent one after the daemon's last read
        pass
    return "%s %.1f" % (",".join("%s:%s" % (e["event"], e.get("code", "")) for e in evs), time.time() - t0)
res = {}
def idle_one():
    t0 = time.time(); res["idle"] = until_eof(conn(), t0)
def slow():
    s = conn(); t0 = time.time()
    try:
        for b in b'{"id":1,"op":"hello"': s.sendall(bytes([b])); time.sleep(0.2)
    except OSError:
        pass
    res["slow"] = until_eof(s, t0)
def busy():                          # an ingest longer than nothing-at-all
    s = conn(); t0 = time.time()
    s.sendall((json.dumps({"id": 2, "op": "ingest", "text": open(doc).read(), "name": "long"}) + "\n").encode())
    f = s.makefile("rb")
    while True:
        e = json.loads(f.readline())
        if e["event"] in ("result", "error"): break
    res["busy"] = "%s:%s %.1f" % (e["event"], e.get("code", ""), time.time() - t0)
    s.settimeout(idle + 10)          # and once it is done, the idle clock runs
    res["after"] = until_eof(s, time.time())
th = [threading.Thread(target=x) for x in (idle_one, slow, busy)]
for t in th: t.start()
for t in th: t.join()
for k in ("idle", "slow", "busy", "after"): print("%s: %s" % (k, res.get(k)))
PY
cat "$T/time" | sed 's/^/# /'
python3 - "$T/time" "$IDLE" "$REQ" <<'PY'
import sys
r = dict(l.split(": ", 1) for l in open(sys.argv[1]).read().splitlines() if ": " in l)
ev, t = r["idle"].split(); t = float(t)
# the timer is not early; 3 s of slack for a loaded machine
sys.exit(0 if ev == "error:timeout" and float(sys.argv[2]) - 0.1 <= t <= float(sys.argv[2]) + 3 else 1)
PY
ok "an idle socket: a timeout event after --idle-timeout, then closed" $?
python3 - "$T/time" "$IDLE" "$REQ" <<'PY'
import sys
r = dict(l.split(": ", 1) for l in open(sys.argv[1]).read().splitlines() if ": " in l)
ev, t = r["slow"].split(); t = float(t)
# closed after --request-timeout, well before --idle-timeout
sys.exit(0 if ev == "error:timeout" and float(sys.argv[3]) - 0.1 <= t < float(sys.argv[2]) else 1)
PY
ok "a slowloris line: a timeout event after --request-timeout, then closed" $?
grep -q '^busy: result:' "$T/time"; ok "a connection with an ingest in flight is not idle" $?
grep -q '^after: error:timeout' "$T/time"; ok "once its ingest is answered, its idle clock runs" $?
grep -q "uid $(id -u)): no request for $IDLE s" "$T/daemon.log"; ok "the idle timeout is logged with the uid" $?

timeout 30 python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX); s.settimeout(5); s.connect(sys.argv[1])
s.sendall(b"{\"id\":9,\"op\":\"hello\"}\n"); assert b"\"protocol\"" in s.recv(4096)' "$KVSNAP_SOCKET"
ok "the daemon still answers" $?
kill -TERM "$DPID"; wait_exit; ok "SIGTERM: exit 0" $?

if [ "$fail" -ne 0 ]; then echo "# daemon log (tail):"; tail -n 30 "$T/daemon.log" | sed 's/^/#   /'; fi
finish
