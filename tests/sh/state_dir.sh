#!/usr/bin/env bash
# The default state directory on a fresh home (issue 25, item 4): with no
# --state and no $KVSNAP_STATE, kvsnapd and `kvsnap ingest --local` use
# $XDG_STATE_HOME/kvsnap when XDG_STATE_HOME is absolute, else
# ~/.local/state/kvsnap, and create its missing parents (and itself) 0700,
# as the XDG Base Directory spec asks; a relative XDG_STATE_HOME is ignored.
set -u
. "$(dirname "$0")/lib.bash"
need "$MODEL" "$D" "$K" command:python3
scratch state-dir
unset KVSNAP_STATE STATE_DIRECTORY XDG_STATE_HOME KVSNAP_SOCKET
modes() { stat -c '%a' "$@" | paste -sd' '; }
hello() { # the daemon at $T/d.sock answers
	timeout 10 python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX); s.settimeout(10); s.connect(sys.argv[1])
s.sendall(b"{\"id\":0,\"op\":\"hello\"}\n"); assert b"result" in s.recv(65536)' "$T/d.sock"
}

# ---- kvsnapd, HOME with no .local: starts, makes ~/.local/state/kvsnap
H=$T/home1; mkdir -m 700 "$H"
HOME=$H "$D" --foreground --socket "$T/d.sock" -t 1 --workers 1 --log-level warn 2>"$T/d.err" &
DPID=$!
wait_ready hello; ok "kvsnapd with no --state on a fresh home starts" $? ||
	sed 's/^/#   /' "$T/d.err" | tail -3
m=$(modes "$H/.local" "$H/.local/state" "$H/.local/state/kvsnap" 2>/dev/null)
[ "$m" = "700 700 700" ]; ok "... ~/.local, ~/.local/state, ~/.local/state/kvsnap made 0700 ($m)" $?
[ -e "$H/.local/state/kvsnap/data.mdb" ]; ok "... the store is there" $?
kill -TERM "$DPID"; wait_exit; rc=$?; ok "... and stops cleanly (exit $rc)" $rc

# ---- kvsnapd, XDG_STATE_HOME absolute and missing: $XDG_STATE_HOME/kvsnap
H=$T/home2; mkdir -m 700 "$H"
HOME=$H XDG_STATE_HOME=$T/xdg/state "$D" --foreground --socket "$T/d.sock" -t 1 --workers 1 \
	--log-level warn 2>"$T/d.err" &
DPID=$!
wait_ready hello; ok "kvsnapd with XDG_STATE_HOME=$T/xdg/state (missing) starts" $? ||
	sed 's/^/#   /' "$T/d.err" | tail -3
m=$(modes "$T/xdg" "$T/xdg/state" "$T/xdg/state/kvsnap" 2>/dev/null)
[ "$m" = "700 700 700" ] && [ -e "$T/xdg/state/kvsnap/data.mdb" ] && [ ! -e "$H/.local" ]
ok "... the store in \$XDG_STATE_HOME/kvsnap, its parents 0700 ($m), nothing in ~/.local" $?
kill -TERM "$DPID"; wait_exit; rc=$?; ok "... and stops cleanly (exit $rc)" $rc

# ---- kvsnap ingest --local: the same default, the same parents
H=$T/home3; mkdir -m 700 "$H"
echo "A short note about lighthouses." > "$T/note.txt"
expect_rc "ingest --local with no --state on a fresh home" 0 env HOME="$H" "$K" ingest --local -t 2 --name note "$T/note.txt"
m=$(modes "$H/.local" "$H/.local/state" "$H/.local/state/kvsnap" 2>/dev/null)
[ "$m" = "700 700 700" ]; ok "... ~/.local/state/kvsnap and its parents made 0700 ($m)" $?
expect_rc "ls finds it there" 0 env HOME="$H" "$K" ls
grep -q note "$T/out"; ok "... named note" $?
H=$T/home4; mkdir -m 700 "$H"
expect_rc "ingest --local, XDG_STATE_HOME absolute and missing" 0 \
	env HOME="$H" XDG_STATE_HOME="$T/xdg2/s" "$K" ingest --local -t 2 --name note "$T/note.txt"
m=$(modes "$T/xdg2" "$T/xdg2/s" "$T/xdg2/s/kvsnap" 2>/dev/null)
[ "$m" = "700 700 700" ] && [ ! -e "$H/.local" ]; ok "... \$XDG_STATE_HOME/kvsnap, parents 0700 ($m)" $?
# a relative XDG_STATE_HOME is not a base directory (the spec: ignore it)
mkdir "$T/cwd"
(cd "$T/cwd" && HOME=$H XDG_STATE_HOME=rel "$OLDPWD/$K" ingest --local -t 2 --name note "$T/note.txt") \
	>"$T/out" 2>"$T/err"
ok "ingest --local, XDG_STATE_HOME relative (exit $?)" $?
[ -e "$H/.local/state/kvsnap/data.mdb" ] && [ ! -e "$T/cwd/rel" ]
ok "... ignored: the store is in ~/.local/state/kvsnap, nothing under ./rel" $?
finish
