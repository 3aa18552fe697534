# lib.bash: what every end-to-end script starts with (sourced by tests/sh/*.sh
# and not run itself): the project root as the working directory, the
# build's binaries and the model, a scratch directory removed on exit (with
# a daemon the script started killed), the TAP counters and the summary.
#
#   . "$(dirname "$0")/lib.bash"
#   need "$MODEL" "$D"            # else "# SKIP" and "0 passed, 0 failed"
#   scratch NAME                  # T=/tmp/kvsnap-NAME-XXXXXX
#   ok "description" $?           # counts and prints ok / not ok
#   expect_rc "description" RC command...   # stdout in $T/out, stderr in $T/err
#   tap < <(command)              # another program's TAP lines counted as checks
#   daemon_start SOCK LOG FLAGS...  # kvsnapd started ($DPID), waited for until loaded
#   proto_py                      # $T/proto.py SOCK REQUEST: the request's last event
#   proto_stream_py               # $T/proto_stream.py SOCK REQUEST...: every event
#   daemon_scratch / cli_scratch / library_scratch NAME ...  # a script's usual set-up
#   test_users U...               # real second users, deleted on exit (root)
#   openai_venv                   # curl and $PY, the pinned HTTP clients' python
#   wait_for FILE PATTERN; busy_jobs DOC   # a line awaited; an ingest + query running
#   finish                        # "N passed, N failed", status
cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 1
BUILD=${BUILD:-build}
K=$BUILD/kvsnap
D=$BUILD/kvsnapd
MODEL=models/SmolLM2-135M-Instruct.Q4_1.gguf
pass=0 fail=0
T= DPID=

# Skip the whole script unless every named path exists (a missing command
# is named with a leading "command:", e.g. need command:python3).
need() {
	local p
	for p; do
		case $p in
		command:*) command -v "${p#command:}" >/dev/null && continue ;;
		*) [ -e "$p" ] && continue ;;
		esac
		echo "# SKIP: needs ${p#command:} (make model / make all)"
		echo "0 passed, 0 failed"
		exit 0
	done
}

lib_cleanup() {
	[ -n "$DPID" ] && kill -KILL "$DPID" 2>/dev/null
	[ -n "$T" ] && rm -rf "$T"
}
trap lib_cleanup EXIT

scratch() { T=$(mktemp -d "/tmp/kvsnap-$1-XXXXXX"); }

# test_users USER...: real second users for the ownership checks (root
# only): each made (useradd, no home, no login shell) unless it exists; on
# exit $USERS_PRE_CLEANUP (a command, when set) runs, then lib_cleanup, then
# the users made here are deleted.
test_users() {
	local u
	made_users=()
	for u; do
		id "$u" >/dev/null 2>&1 || { useradd -M -N -s /usr/sbin/nologin "$u" && made_users+=("$u"); }
	done
	trap users_cleanup EXIT
}
users_cleanup() {
	local u
	[ -n "${USERS_PRE_CLEANUP:-}" ] && eval "$USERS_PRE_CLEANUP"
	lib_cleanup
	for u in "${made_users[@]}"; do userdel "$u" 2>/dev/null; done
}

# prose LICENSE WORDS: the first WORDS words of a license Debian ships
# (/usr/share/common-licenses; each is under 100 kB), on one line.
prose() {
	head -c 100000 "/usr/share/common-licenses/$1" | tr -s ' \n' ' ' | cut -d' ' -f1-"$2"
}

# daemon_scratch NAME: what a script that starts kvsnapd needs: the model,
# the daemon and python3 (else skip), a scratch directory, and the store
# and socket in it ($KVSNAP_STATE, $KVSNAP_SOCKET, which the CLI reads).
daemon_scratch() {
	need "$MODEL" "$D" command:python3
	scratch "$1"
	export KVSNAP_STATE=$T/state KVSNAP_SOCKET=$T/d.sock
}

# cli_scratch NAME WORDS SAN_WORDS: a scratch dir for a script over the
# CLI alone (no daemon), its store in $T/state; $words is WORDS, or
# SAN_WORDS when kvsnap was built with AddressSanitizer (~10x slower).
cli_scratch() {
	need "$MODEL"
	scratch "$1"
	export KVSNAP_STATE=$T/state
	words=$2
	is_san "$K" && words=$3
}

# library_scratch NAME WORDS SAN_WORDS: daemon_scratch NAME for a script
# over a library of documents written into $T/docs, each $words words of
# prose (SAN_WORDS under AddressSanitizer), its commands bounded at 300 s.
library_scratch() {
	daemon_scratch "$1"
	EXPECT_TIMEOUT=300
	words=$2
	is_san "$D" && words=$3
	mkdir -p "$T/docs"
}

# http_scratch NAME WORDS SAN_WORDS: daemon_scratch NAME for a script over
# kvsnapd's HTTP front end: the pinned clients (openai_venv), its Python
# checks tests/sh/NAME_check.py ($CHECK), the HTTP socket $H, commands
# bounded at 300 s, $words WORDS (SAN_WORDS under AddressSanitizer).
http_scratch() {
	daemon_scratch "$1"
	openai_venv
	CHECK=tests/sh/$1_check.py
	H=$T/h.sock
	EXPECT_TIMEOUT=300
	words=$2
	is_san "$D" && words=$3
}

# openai_venv: curl and the pinned Python clients ($BUILD/openai-venv, made
# by scripts/openai-venv.sh) the HTTP scripts drive kvsnapd with; $PY is its
# python.
openai_venv() {
	need command:curl
	scripts/openai-venv.sh "$BUILD" >"$T/venv.log" 2>&1 || { sed 's/^/# /' "$T/venv.log" | tail -3; }
	PY=$BUILD/openai-venv/bin/python
	need "$PY"
}

# 1 when binary $1 was built with AddressSanitizer (~10x slower: scripts
# shorten their documents there).
is_san() { grep -q __asan_init "$1" 2>/dev/null; }

# Take the status first when the description holds a $(...): bash sets $? to
# the substitution's status before a later $? on the same line is expanded,
# so `test; ok "x $(cat f)" $?` always passed: write
# `test; _s=$?; ok "x $(cat f)" $_s`.  tests/sh/lint_ok.sh checks every script.
ok() { # description, then a status; returns it, so `ok ... || diagnostics` works
	if [ "$2" -eq 0 ]; then pass=$((pass + 1)); echo "ok - $1"
	else fail=$((fail + 1)); echo "not ok - $1"; fi
	return "$2"
}

# tap: reads the TAP lines another program prints ("ok - ...", "not ok -
# ...") on stdin and counts each as this script's own check (through ok);
# other lines pass through.  Run it in this shell: `tap < FILE` or
# `tap < <(command)`.
tap() {
	local line
	while IFS= read -r line; do
		case $line in
		"ok - "*) ok "${line#ok - }" 0 ;;
		"not ok - "*) ok "${line#not ok - }" 1 ;;
		*) echo "$line" ;;
		esac
	done
}

# expect_rc description want command...: the command's exit status must be
# want; on a mismatch the tail of its stderr is shown.  EXPECT_TIMEOUT (s)
# bounds the command (0, the default: no bound).
expect_rc() {
	local d=$1 want=$2 rc; shift 2
	timeout "${EXPECT_TIMEOUT:-0}" "$@" >"$T/out" 2>"$T/err"
	rc=$?
	[ "$rc" -eq "$want" ]; ok "$d (exit $rc, want $want)" $?
	[ "$rc" -eq "$want" ] || { sed 's/^/#   /' "$T/err" | tail -5; }
}

# wait_ready command...: wait up to 30 s for the command to succeed while
# the daemon ($DPID) is alive; status 1 if it died or never got ready.
# kvsnapd listens before it has loaded its model and answers every request
# with the error `loading` until then (docs/PROTOCOL.md "Starting"): a
# command whose output carries that code (a raw hello printing the event)
# has not seen it ready either.
wait_ready() {
	local i out
	for i in $(seq 1 300); do
		out=$("$@" 2>&1) && [[ $out != *'"code":"loading"'* ]] && return 0
		kill -0 "$DPID" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}

# json_field KEY: the value of KEY in the JSON object on stdin, "-" if it
# has none (a protocol event, a --json answer).
json_field() { python3 -c 'import json,sys; e=json.loads(sys.stdin.read()); print(e.get(sys.argv[1], "-"))' "$1"; }

# req_code CODE DESCRIPTION REQUEST: REQUEST sent with the script's own
# req function is answered with an error event of code CODE; the line says
# DESCRIPTION and the code that came.
req_code() {
	local r c
	r=$(req "$3")
	c=$(json_field code <<<"$r")
	[ "$c" = "$1" ]; ok "$2: $c" $?
}

# proto_py: writes $T/proto.py, the scripts' one-request client:
#   python3 "$T/proto.py" SOCK REQUEST [TIMEOUT_S]
# sends one request line to kvsnapd at SOCK and prints the event that ends
# it (its result or error event); "EOF" and status 1 if the connection ends
# first.  TIMEOUT_S (default 120) bounds each read.
proto_py() {
	cat > "$T/proto.py" <<'PY'
import json, socket, sys
s = socket.socket(socket.AF_UNIX)
s.settimeout(float(sys.argv[3]) if len(sys.argv) > 3 else 120)
s.connect(sys.argv[1])
s.sendall(sys.argv[2].encode() + b"\n")
f = s.makefile("rb")
while True:
    l = f.readline()
    if not l: print("EOF"); sys.exit(1)
    if json.loads(l).get("event") in ("result", "error"): print(l.decode().strip()); break
PY
}

# proto_stream_py: writes $T/proto_stream.py, the streaming client:
#   python3 "$T/proto_stream.py" SOCK REQUEST...
# one request per argument, every event line printed until each one's
# result or error; "@fd:PATH" passes PATH's descriptor with the next
# request; "@wait" stops at the first progress event and leaves
# (disconnect); "@big:N" sends a line of N bytes; "@inline:PATH,JSON" sends
# JSON with PATH's text as "text".
proto_stream_py() {
	cat > "$T/proto_stream.py" <<'PY'
import json, os, socket, sys, time
s = socket.socket(socket.AF_UNIX)
s.settimeout(120)
s.connect(sys.argv[1])
f = s.makefile("rb")
fd = None
for a in sys.argv[2:]:
    if a.startswith("@fd:"):
        fd = os.open(a[4:], os.O_RDONLY); continue
    if a == "@wait":
        while True:
            l = f.readline()
            if not l: sys.exit(0)
            sys.stdout.write(l.decode()); sys.stdout.flush()
            if b'"progress"' in l and b'"prefill"' in l: os._exit(0)
    if a.startswith("@big:"):
        n = int(a[5:]); data = b'{"id":9,' + b'x' * n + b'\n'
    elif a.startswith("@inline:"):
        p, _, rest = a[8:].partition(",")
        req = json.loads(rest); req["text"] = open(p).read(); data = (json.dumps(req) + "\n").encode()
    else:
        data = a.encode() + b"\n"
    if a.startswith("@inline:") and "@wait" in sys.argv: s.sendall(data); continue
    if fd is not None:
        socket.send_fds(s, [data], [fd]); os.close(fd); fd = None
    else:
        s.sendall(data)
    while True:
        l = f.readline()
        if not l: print("EOF"); sys.exit(1)
        sys.stdout.write(l.decode()); sys.stdout.flush()
        e = json.loads(l)
        if e.get("event") in ("result", "error"): break
PY
}

# daemon_start SOCK LOG FLAGS...: kvsnapd on SOCK, its stderr appended to
# LOG, with the scripts' small profile (--budget 64 --chunk 64) and FLAGS
# (--state DIR among them); $DPID set; then waits until it has loaded
# (daemon_ready): status 1 if it died or never got ready.  With
# DAEMON_NOFILE=N it runs under `ulimit -n N`.
daemon_start() {
	local sock=$1 log=$2
	shift 2
	if [ -n "${DAEMON_NOFILE:-}" ]; then
		(ulimit -n "$DAEMON_NOFILE" &&
			exec "$D" --socket "$sock" --budget 64 --chunk 64 "$@" 2>>"$log") &
	else
		"$D" --socket "$sock" --budget 64 --chunk 64 "$@" 2>>"$log" &
	fi
	DPID=$!
	wait_ready daemon_ready "$sock"
}

# daemon_ready [SOCK]: kvsnapd at SOCK (default $KVSNAP_SOCKET) has loaded:
# its hello is a result, not the error `loading`.  `wait_ready daemon_ready`.
daemon_ready() {
	timeout 10 python3 - "${1:-$KVSNAP_SOCKET}" <<'PY'
import json, socket, sys
s = socket.socket(socket.AF_UNIX); s.settimeout(10); s.connect(sys.argv[1])
s.sendall(b'{"v":1,"id":0,"op":"hello"}\n')
sys.exit(json.loads(s.makefile().readline()).get("event") != "result")
PY
}

# wait_exit: the daemon's exit status once it has stopped (waits up to
# 60 s after it was signalled); DPID is cleared.
wait_exit() {
	local i rc
	for i in $(seq 1 600); do kill -0 "$DPID" 2>/dev/null || break; sleep 0.1; done
	wait "$DPID"
	rc=$?
	DPID=
	return $rc
}

# flip_record_byte STATE DOC_ID: flip one byte in the middle of the first
# stored record of DOC_ID (whose key's profile part is not all zeros) in the
# LMDB store at STATE, rewritten through lmdb-utils' dump/load so the byte
# is in a live record.  Status 1 if the dump or the load failed (the load's
# stderr in $T/load.err).
flip_record_byte() {
	mdb_dump -s snaps "$1" > "$T/dump" || return 1
	python3 - "$T/dump" "$2" <<'PY'
import sys
path, doc = sys.argv[1], sys.argv[2]
lines = open(path).read().split("\n")
for i, l in enumerate(lines):
    if l.startswith(" " + doc) and not l.startswith(" " + doc + "0" * 64):
        v = lines[i + 1]
        j = 1 + 2 * (len(v) // 4)          # a byte in the middle of the value
        lines[i + 1] = v[:j] + "%02x" % (int(v[j:j + 2], 16) ^ 0x55) + v[j + 2:]
        break
open(path, "w").write("\n".join(lines))
PY
	mdb_load -s snaps "$1" < "$T/dump" 2>"$T/load.err"
}

# The log of a daemon the script started, kept in $T/daemon.log: the lines
# matching PATTERN; wait_log PATTERN N waits (up to 30 s) until there are N.
# wait_for FILE PATTERN: up to 60 s for FILE to have a line matching PATTERN
wait_for() {
	local i
	for i in $(seq 1 600); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done
	return 1
}

# busy_jobs DOC: an ingest of $T/long.txt (named long) and a streamed query
# of DOC running in the background ($ipid, $qpid; their output in
# $T/ing.{out,err} and $T/q.{out,err}), each checked to be under way.
busy_jobs() {
	timeout 300 "$K" ingest --json --name long "$T/long.txt" > "$T/ing.out" 2> "$T/ing.err" &
	ipid=$!
	wait_for "$T/ing.out" '"progress"'; ok "an ingest under way" $?
	timeout 300 "$K" query --json -n 400 "$1" "Repeat the document word for word." \
		> "$T/q.out" 2> "$T/q.err" &
	qpid=$!
	wait_for "$T/q.out" '"token"'; ok "a query streaming" $?
}

log_count() { grep -c "$1" "$T/daemon.log"; }
wait_log() {
	local i
	for i in $(seq 1 300); do
		[ "$(log_count "$1")" -ge "$2" ] && return 0
		sleep 0.1
	done
	return 1
}

finish() {
	echo "$pass passed, $fail failed"
	[ "$fail" -eq 0 ]
}
