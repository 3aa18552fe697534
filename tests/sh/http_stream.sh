#!/usr/bin/env bash
# Streamed replies over HTTP are whole however long the job is silent
# between two events (docs/HTTP.md): a streamed ingest
# (POST /v1/documents?stream=true) read raw (tests/sh/http_stream_check.py
# parses the chunked framing), against a real daemon with
# --request-timeout 1.  The old daemon left evhttp's read timeout on while
# it wrote a stream, so a job silent for longer than --request-timeout (an
# ingest scoring after its last progress event; any step on a busy machine)
# had its reply cut mid-stream and its job cancelled as if the client had
# left.  Made certain here by holding the daemon (SIGSTOP, 2.5 s) once the
# first event has come.  After each stream the connection, kept alive and
# idle, is still closed by --request-timeout.  Every wait is bounded.
set -u
. "$(dirname "$0")/lib.bash"
daemon_scratch httpstream
need command:curl
H=$T/h.sock
EXPECT_TIMEOUT=120
CHECK=tests/sh/http_stream_check.py
"$D" -m "$MODEL" --state "$KVSNAP_STATE" --socket "$KVSNAP_SOCKET" --http "unix:$H" --budget 64 --chunk 16 \
	-t 2 --workers 2 --request-timeout 1 --log-level debug 2>>"$T/daemon.log" &
DPID=$!
wait_ready curl -sf --max-time 10 --unix-socket "$H" http://localhost/v1/models
ok "daemon serving HTTP on unix:$H (--request-timeout 1)" $? || { finish; exit; }

# stream NAME LICENSE [STOP_S]: one streamed ingest, whole, then closed idle
stream() {
	local name=$1 lic=$2 stop=${3:-} out
	prose "$lic" 40 > "$T/$name.txt"
	out=$(timeout 120 python3 "$CHECK" "$H" "$T/$name.txt" "$name" ${stop:+"$DPID" "$stop"} 2>&1)
	_s=$?; echo "# $name: $out"
	ok "streamed ingest of $name${stop:+, the daemon held $stop s mid-stream}: whole" $_s
	case $out in *idle-closed) _s=0 ;; *) _s=1 ;; esac
	ok "  then its idle kept-alive connection is closed (--request-timeout)" $_s
}
stream held1 GPL-3 2.5
stream plain Apache-2.0
stream held2 MPL-2.0 2.5
! grep -q "client left" "$T/daemon.log"; ok "no stream taken for a client that left" $? ||
	grep "client left" "$T/daemon.log" | sed 's/^/#   /'
expect_rc "kvsnap ls" 0 "$K" ls
for n in held1 plain held2; do
	grep -qw "$n" "$T/out"; ok "  $n is stored (its ingest ran to its end)" $?
done
kill -TERM "$DPID"; wait_exit; ok "SIGTERM: exit 0" $?
finish
