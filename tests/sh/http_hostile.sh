#!/usr/bin/env bash
# kvsnapd's HTTP front end against hostile local users (issue 26, defects 1,
# 4, 5, 6, 14), with real second users (useradd; run with runuser) and a
# real daemon running as root on a loopback TCP port:
#  1. a user who sends a request padded to ~2 KB and closes at once (plain
#     close or SO_LINGER 0), trying to DELETE root's private document, is
#     never taken for root (a closed client's time-wait socket reads uid 0):
#     the document stays, 25 tries and 5 sent while the daemon is held
#     (SIGSTOP, so that they have surely closed before it looks: on this
#     busy machine the old daemon looked fast enough for plain tries to
#     pass), on 127.0.0.1 and on [::1];
#  4. a user outside the main socket's group is refused (403), a member is
#     served; http-allow names who instead (a user: then the group no
#     longer counts), a bad entry is refused at start;
#  5. control bytes, ESC and bytes that are not UTF-8 in a request path or
#     a document reference do not reach the log raw: every line of it is
#     one line of printable UTF-8 with kvsnapd's prefix;
#  6. a slowloris (a byte every 3 s) is cut by --request-timeout (10 s);
#     unfinished requests count against --max-connections-per-user; a
#     daemon short of descriptors (ulimit -n 128) flooded with connections
#     keeps its log small and answers the socket protocol promptly;
# 14. a document reference that is not UTF-8 is named as such, its bytes
#     escaped (not "(unprintable message)").
# Needs root (useradd, groupadd, runuser); skipped otherwise.  Every wait is
# bounded.
set -u
. "$(dirname "$0")/lib.bash"
need "$MODEL" "$D" command:python3 command:curl command:useradd command:groupadd command:runuser
if [ "$(id -u)" -ne 0 ]; then
	echo "# SKIP: needs root (useradd, runuser)"; echo "0 passed, 0 failed"; exit 0
fi
scratch httphost
chmod 755 "$T"
G=kvsnap-hg UM=kvsnap-hm UX=kvsnap-hx made_u=() made_g=
getent group "$G" >/dev/null || { groupadd "$G" && made_g=1; }
id "$UM" >/dev/null 2>&1 || { useradd -M -N -G "$G" -s /usr/sbin/nologin "$UM" && made_u+=("$UM"); }
id "$UX" >/dev/null 2>&1 || { useradd -M -N -s /usr/sbin/nologin "$UX" && made_u+=("$UX"); }
host_cleanup() {
	local u
	lib_cleanup
	for u in "${made_u[@]}"; do userdel "$u" 2>/dev/null; done
	[ -n "$made_g" ] && groupdel "$G" 2>/dev/null
}
trap host_cleanup EXIT
id -nG "$UM" | grep -qw "$G" && ! id -nG "$UX" | grep -qw "$G"
ok "users $UM (in $G) and $UX (not)" $? || { finish; exit; }
# the main socket's group is $G: made in a setgid directory of that group
mkdir -p "$T/run" && chgrp "$G" "$T/run" && chmod 2770 "$T/run"
export KVSNAP_STATE=$T/state KVSNAP_SOCKET=$T/run/d.sock
EXPECT_TIMEOUT=120
prose GPL-3 80 > "$T/doc.txt"

cat > "$T/h.py" <<'PY'
# h.py: hostile HTTP clients.  h.py KIND ARGS...
import socket, struct, sys, time
def conn(host, port):
    fam = socket.AF_INET6 if ":" in host else socket.AF_INET
    s = socket.socket(fam)
    s.settimeout(10)
    s.connect((host, int(port)))
    return s
def status(s):
    try:
        b = s.recv(65536)
    except OSError as e:
        return "err:" + type(e).__name__
    return b.split(b"\r\n", 1)[0].decode("latin-1") if b else "eof"
kind = sys.argv[1]
if kind == "spoof":        # spoof HOST PORT PATH N LINGER: request, close at once
    host, port, path, n, linger = sys.argv[2:7]
    for i in range(int(n)):
        s = conn(host, port)
        if linger == "1":
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        s.sendall(("DELETE %s HTTP/1.1\r\nHost: x\r\nX-Pad: %s\r\nContent-Length: 0\r\n\r\n"
                   % (path, "a" * 2000)).encode())
        s.close()
        time.sleep(0.05)
elif kind == "raw":        # raw HOST PORT: a request line with ESC and a non-UTF-8 byte
    s = conn(sys.argv[2], sys.argv[3])
    s.sendall(b"GET /v1/documents/\x1b[31mred\xff\x01 HTTP/1.1\r\nHost: x\r\n\r\n")
    print(status(s))
elif kind == "slow":       # slow HOST PORT: one byte every 3 s; seconds until cut
    s = conn(sys.argv[2], sys.argv[3])
    s.settimeout(3)
    t0 = time.time()
    req = b"GET /v1/models HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 100
    for c in req:
        if time.time() - t0 > 25:
            break
        try:
            s.send(bytes([c]))
            if s.recv(4096) == b"":
                break
        except socket.timeout:
            continue
        except OSError:
            break
    print("%.1f" % (time.time() - t0))
elif kind == "idle":       # idle HOST PORT N: N unfinished requests held, then one more
    held = []
    for i in range(int(sys.argv[4])):
        s = conn(sys.argv[2], sys.argv[3])
        s.sendall(b"GET /v1/models HTTP/1.1\r\nHost: x\r\n")
        held.append(s)
    time.sleep(0.5)
    s = conn(sys.argv[2], sys.argv[3])
    s.sendall(b"GET /v1/models HTTP/1.1\r\nHost: x\r\n")
    s.settimeout(3)
    print(status(s))
elif kind == "flood":      # flood HOST PORT SECONDS: open and hold as many as possible
    held, t0, refused = [], time.time(), 0
    while time.time() - t0 < float(sys.argv[4]):
        try:
            s = socket.socket(); s.setblocking(False)
            try:
                s.connect((sys.argv[2], int(sys.argv[3])))
            except BlockingIOError:
                pass
            held.append(s)
        except OSError:
            refused += 1
            time.sleep(0.01)
        if len(held) > 900:
            for x in held[:300]:
                x.close()
            del held[:300]
    print(len(held), refused)
PY
chmod 644 "$T/h.py"
as() { local u=$1; shift; timeout 90 runuser -u "$u" -- "$@"; }
free_port() { python3 -c 'import socket,sys; s=socket.socket(socket.AF_INET6 if sys.argv[1]=="6" else socket.AF_INET); s.bind(("::1" if sys.argv[1]=="6" else "127.0.0.1",0)); print(s.getsockname()[1])' "$1"; }
start() { # http address, more flags
	local a=$1; shift
	"$D" --state "$KVSNAP_STATE" --socket "$KVSNAP_SOCKET" --http "$a" --budget 64 --chunk 64 \
		-t 2 --workers 2 --request-timeout 10 --max-connections-per-user 4 "$@" \
		2>>"$T/daemon.log" &
	DPID=$!
	wait_ready curl -sf --max-time 5 "$BASE/v1/models"
}
stop() { kill -TERM "$DPID"; wait_exit; }
code() { # user url curl-args...: the HTTP status (body in $T/body)
	local u=$1 url=$2; shift 2
	as "$u" curl -s --max-time 30 -o "$T/body" -w '%{http_code}' "$@" "$url"
}
: > "$T/body"; chmod 666 "$T/body"

# ---- 127.0.0.1
port=$(free_port 4) BASE=http://127.0.0.1:$port
start "127.0.0.1:$port"; ok "daemon (root) serving HTTP on 127.0.0.1:$port" $?
expect_rc "root ingests a private document" 0 "$K" ingest --name root-private "$T/doc.txt"
grep -q "HTTP callers: root, uid 0 (this daemon), members of group $G (the socket's group)" \
	"$T/daemon.log"; ok "the log says who may call (the socket's group $G)" $?

# 4: the socket's group decides
[ "$(code "$UX" "$BASE/v1/models")" = 403 ]; ok "$UX (not in $G): 403" $?
grep -q '"code":"denied"' "$T/body" && grep -q "not allowed to use this HTTP listener" "$T/body"
ok "  denied, saying why" $? || cat "$T/body"
[ "$(code "$UX" "$BASE/v1/documents")" = 403 ]; ok "  and for the document list" $?
[ "$(code "$UM" "$BASE/v1/models")" = 200 ]; ok "$UM (in $G): served" $?
[ "$(code "$UM" "$BASE/v1/documents")" = 200 ] && ! grep -q root-private "$T/body"
ok "  without root's private document" $?

# 1: the spoofed close, as a member of the group (served, but not as root):
# 20 plain closes, 5 resets, and 5 sent while the daemon's loop is held
# (SIGSTOP: a busy daemon), so that they are surely closed before it reads
spoof() { # host
	local linger how
	for linger in 0 1; do
		how="plain close"; [ $linger = 1 ] && how="SO_LINGER 0: reset"
		as "$UM" python3 "$T/h.py" spoof "$1" "$port" /v1/documents/root-private \
			$((linger ? 5 : 20)) $linger
		_s=$?; ok "$UM sent $((linger ? 5 : 20)) DELETEs of root's document to $1, closing at once ($how)" $_s
	done
	kill -STOP "$DPID"
	as "$UM" python3 "$T/h.py" spoof "$1" "$port" /v1/documents/root-private 5 0
	ok "  and 5 more while the daemon was held (SIGSTOP)" $?
	kill -CONT "$DPID"
	sleep 1
	expect_rc "  root's document is still there" 0 "$K" info root-private
	! grep -q "http: uid 0: DELETE" "$T/daemon.log"; ok "  none was served as uid 0" $?
}
spoof 127.0.0.1
grep -q "refused a connection: cannot identify the caller (the client's socket is already closed" \
	"$T/daemon.log"; ok "  the held ones were refused: cannot identify the caller" $?

# 14: a reference that is not UTF-8
[ "$(code root "$BASE/v1/documents/caf%E9%0A")" = 400 ]; ok "GET /v1/documents/caf%E9%0A: 400" $?
grep -q 'document reference is not valid UTF-8' "$T/body" && grep -qF 'caf\\xe9\\n' "$T/body"
ok "  naming the problem, the bytes escaped" $? || cat "$T/body"

# 5: what clients choose does not reach the log raw
code root "$BASE/v1/documents/x%0Akvsnapd%5B1%5D%20error%3A%20forged%1B%5B2J%E2%80%AE" >/dev/null
as "$UM" env KVSNAP_SOCKET="$KVSNAP_SOCKET" "$K" info "$(printf 'y\nkvsnapd[1] error: forged too\033[2J')" >/dev/null 2>&1
python3 "$T/h.py" raw 127.0.0.1 "$port" > "$T/raw"; rc=$?; raw=$(cat "$T/raw")
ok "a raw request line with ESC and \\xff: $raw" $rc
sleep 0.5
grep -qF 'x\nkvsnapd[1] error: forged\x1b[2J\u{202e}' "$T/daemon.log"; ok "  the reference is logged escaped" $?
python3 - "$T/daemon.log" <<'PY'
import re, sys
bad = 0
for i, l in enumerate(open(sys.argv[1], "rb").read().split(b"\n")[:-1]):
    try:
        t = l.decode("utf-8")
    except UnicodeDecodeError:
        print("# line %d is not UTF-8: %r" % (i + 1, l[:120])); bad += 1; continue
    if not re.match(r"kvsnapd\[\d+\] (error|warn|info|debug): ", t) or \
            any(ord(c) < 32 or 0x7f <= ord(c) <= 0x9f or c in "\u2028\u2029\u202e" for c in t):
        print("# line %d: %r" % (i + 1, t[:120])); bad += 1
sys.exit(1 if bad else 0)
PY
ok "  every log line is one printable UTF-8 line with kvsnapd's prefix" $?

# 6: slowloris, unfinished requests against the cap
t=$(python3 "$T/h.py" slow 127.0.0.1 "$port")
python3 -c 'import sys; sys.exit(0 if 9 <= float(sys.argv[1]) <= 13 else 1)' "$t"
ok "a byte every 3 s is cut after ${t}s (--request-timeout 10; 9-13 s)" $?
s=$(as "$UM" python3 "$T/h.py" idle 127.0.0.1 "$port" 4)
case $s in *429*) true ;; *) false ;; esac
ok "$UM holding 4 unfinished requests: a 5th connection is refused ($s)" $?
sleep 0.5
[ "$(code "$UM" "$BASE/v1/models")" = 200 ]; ok "  and served once they are gone" $?
stop; ok "SIGTERM: exit 0" $?

# ---- [::1]
port=$(free_port 6) BASE="http://[::1]:$port"
start "[::1]:$port"; ok "daemon serving HTTP on [::1]:$port" $?
spoof ::1
stop; ok "SIGTERM: exit 0" $?
# ---- http-allow: only $UX (not the socket's group)
port=$(free_port 4) BASE=http://127.0.0.1:$port
start "127.0.0.1:$port" --http-allow "$UX"; ok "daemon with --http-allow $UX" $?
[ "$(code "$UX" "$BASE/v1/models")" = 200 ]; ok "  $UX served" $?
[ "$(code "$UM" "$BASE/v1/models")" = 403 ]; ok "  $UM (in the socket's group, not listed) refused" $?
[ "$(code root "$BASE/v1/models")" = 200 ]; ok "  root served" $?
stop; ok "SIGTERM: exit 0" $?
printf 'http-allow = @no-such-group-here\n' > "$T/bad.conf"
expect_rc "http-allow naming a missing group: refused at start" 1 "$D" --config "$T/bad.conf" \
	--state "$KVSNAP_STATE"
grep -q "no group 'no-such-group-here'" "$T/err"; ok "  naming it" $?

# ---- short of descriptors: a flood of connections
port=$(free_port 4) BASE=http://127.0.0.1:$port
: > "$T/daemon.log"
(ulimit -n 128; exec "$D" --state "$KVSNAP_STATE" --socket "$KVSNAP_SOCKET" --http "127.0.0.1:$port" \
	--max-connections 1000 --max-connections-per-user 1000 --request-timeout 30 -t 2 \
	2>>"$T/daemon.log") &
DPID=$!
wait_ready curl -sf --max-time 5 "$BASE/v1/models"; ok "daemon with ulimit -n 128" $?
t0=$(date +%s.%N); "$K" ls >/dev/null 2>&1
echo "# kvsnap ls before the flood: $(python3 -c "import sys,time; print('%.2f' % (time.time() - float(sys.argv[1])))" "$t0") s (a busy shared machine)"
python3 "$T/h.py" flood 127.0.0.1 "$port" 12 > "$T/flood" &
fl=$!
sleep 3
worst=0
for i in 1 2 3; do
	t0=$(date +%s.%N)
	timeout 30 "$K" ls >/dev/null 2>&1; rc=$?
	t=$(python3 -c "import sys,time; print('%.2f' % (time.time() - float(sys.argv[1])))" "$t0")
	[ "$rc" -eq 0 ] || t=99
	worst=$(python3 -c 'import sys; print(max(float(a) for a in sys.argv[1:]))' "$worst" "$t")
	sleep 1
done
wait "$fl"
# a tolerance, not a benchmark: kvsnap ls takes 0.1-0.8 s here; 3 s allows
# a busy shared machine (10 s under AddressSanitizer, ~10x slower); the old
# busy loop took 8.6 s
lim=3; is_san "$D" && lim=10
python3 -c 'import sys; sys.exit(0 if float(sys.argv[1]) < float(sys.argv[2]) else 1)' "$worst" "$lim"
ok "kvsnap ls during the flood: slowest of 3 ${worst}s (< $lim s)" $?
lines=$(wc -l < "$T/daemon.log") bytes=$(wc -c < "$T/daemon.log") flood=$(cat "$T/flood")
[ "$bytes" -lt 20000 ]; ok "the log stays small: $lines lines, $bytes bytes (< 20 kB; flood held, refused: $flood)" $? \
	|| sort "$T/daemon.log" | sed 's/kvsnapd\[[0-9]*\]//' | uniq -c | sort -rn | head -5 | sed 's/^/#   /'
curl -sf --max-time 10 "$BASE/v1/models" >/dev/null; ok "HTTP answers after the flood" $?
stop; ok "SIGTERM: exit 0" $?
finish
