#!/usr/bin/env bash
# The shipped unit keeps callers' uids apart (issue 26, defect 2).  systemd
# cannot run the unit here (no systemd as PID 1), so its user setting is
# emulated: when systemd/kvsnapd.service (or the unit named by $UNIT) has
# PrivateUsers=yes, kvsnapd runs in a user namespace mapping only root (as
# PrivateUsers= maps only root and the service's own user), so every other
# caller's SO_PEERCRED uid reads as the overflow uid 65534, as under
# systemd.  Two real users (useradd; runuser): A ingests a private
# document; the daemon must see A's own uid, B must not find A's document,
# and B's connections must not count against A's cap.  With the old unit
# (PrivateUsers=yes) B read A's document.  Needs root; skipped otherwise.
set -u
. "$(dirname "$0")/lib.bash"
need "$MODEL" "$D" command:python3 command:useradd command:runuser
if [ "$(id -u)" -ne 0 ]; then
	echo "# SKIP: needs root (useradd, runuser)"; echo "0 passed, 0 failed"; exit 0
fi
UNIT=${UNIT:-systemd/kvsnapd.service}
scratch sdusers
chmod 755 "$T"
UA=kvsnap-ua UB=kvsnap-ub
USERS_PRE_CLEANUP='[ -s "$T/inner.pid" ] && kill -KILL "$(cat "$T/inner.pid")" 2>/dev/null'
test_users $UA $UB
export KVSNAP_STATE=$T/state KVSNAP_SOCKET=$T/d.sock
EXPECT_TIMEOUT=120
mkdir -p "$T/a"
prose GPL-3 60 > "$T/a/private.txt"
chown -R "$UA" "$T/a"; chmod 700 "$T/a"; chmod 600 "$T/a/private.txt"

# userns.py CMD...: run CMD in a new user namespace that maps only root
# (what PrivateUsers=yes leaves a root service: every other uid unmapped);
# the inner pid goes to $T/inner.pid, SIGTERM is passed on.
cat > "$T/userns.py" <<'PY'
import ctypes, os, signal, sys
r, w = os.pipe(); r2, w2 = os.pipe()
pid = os.fork()
if pid == 0:
    if ctypes.CDLL(None, use_errno=True).unshare(0x10000000) != 0:  # CLONE_NEWUSER
        os._exit(99)
    os.write(w, b"x"); os.read(r2, 1)
    os.execv(sys.argv[2], sys.argv[2:])
os.read(r, 1)
for m in ("uid_map", "gid_map"):
    with open("/proc/%d/%s" % (pid, m), "w") as f:
        f.write("0 0 1\n")
open(sys.argv[1], "w").write(str(pid))
os.write(w2, b"x")
signal.signal(signal.SIGTERM, lambda *a: os.kill(pid, signal.SIGTERM))
while True:
    try:
        _, st = os.waitpid(pid, 0); break
    except InterruptedError:
        continue
sys.exit(os.waitstatus_to_exitcode(st))
PY
proto_py # readable by the users too; every read bounded at 60 s below
chmod 644 "$T/proto.py"
# OP DOC as USER: the event's code ("ok" for a result)
op_as() {
	timeout 60 runuser -u "$1" -- python3 "$T/proto.py" "$KVSNAP_SOCKET" \
		"{\"id\":1,\"op\":\"$2\"${3:+,\"doc\":\"$3\"}}" 60 | python3 -c '
import json, sys
e = json.loads(sys.stdin.read()); print(e.get("code", "ok") if e.get("event") == "error" else "ok")'
}
pu=$(sed -n 's/^PrivateUsers=//p' "$UNIT" | tail -1)
case $pu in yes|true|1|on) wrap=(python3 "$T/userns.py" "$T/inner.pid") ;; *) wrap=() ;; esac
echo "# $UNIT: PrivateUsers=${pu:-(not set)}"
"${wrap[@]}" "$D" --state "$KVSNAP_STATE" --socket "$KVSNAP_SOCKET" --budget 64 --chunk 64 -t 2 \
	--max-connections-per-user 2 --log-level debug 2>>"$T/daemon.log" &
DPID=$!
wait_ready python3 "$T/proto.py" "$KVSNAP_SOCKET" '{"id":0,"op":"hello"}' 60; ok "daemon started ${wrap:+(in a user namespace as PrivateUsers=yes makes)}" $?
chmod 666 "$KVSNAP_SOCKET" # every user may connect: ownership is the only gate
asA=(runuser -u "$UA" -- env KVSNAP_SOCKET="$KVSNAP_SOCKET")
asB=(runuser -u "$UB" -- env KVSNAP_SOCKET="$KVSNAP_SOCKET")
expect_rc "A ingests a private document" 0 "${asA[@]}" "$K" ingest --name a-private "$T/a/private.txt"
ua=$(id -u "$UA")
grep -q "from pid [0-9]* uid $ua " "$T/daemon.log"; ok "  the daemon saw A's own uid ($ua)" $? \
	|| grep -o "from pid [0-9]* uid [0-9]*" "$T/daemon.log" | tail -2 | sed 's/^/#   /'
[ "$(op_as "$UB" info a-private)" = not_found ]; ok "B does not find A's private document" $?
[ "$(op_as "$UB" rm a-private)" = not_found ]; ok "B cannot remove it" $?
[ "$(op_as "$UA" info a-private)" = ok ]; ok "A still has it" $?
# B holds its 2 connections (--max-connections-per-user 2): A is not affected
"${asB[@]}" python3 -c '
import socket, sys, time
h = [socket.socket(socket.AF_UNIX) for _ in range(2)]
for s in h: s.connect(sys.argv[1])
time.sleep(4)' "$KVSNAP_SOCKET" &
hold=$!
sleep 1.5
[ "$(op_as "$UA" ls)" = ok ]; ok "A is served while B holds its 2 connections" $?
wait "$hold"
kill -TERM "$DPID"; wait_exit; ok "SIGTERM: exit 0" $?
finish
