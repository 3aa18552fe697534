#!/usr/bin/env bash
# kvsnapd and SIGHUP (issue 15, defect 3): SIGHUP drains like SIGTERM
# (docs/PROTOCOL.md "Stopping").  With an ingest and a streamed query
# running, SIGHUP ends each with an event (the query its result, the
# ingest a shutting_down error), never a bare EOF; the daemon exits 0,
# its socket file is removed and nothing partial is stored.  A SIGHUP to
# an idle daemon stops it the same way.  Every wait has a deadline.
set -u
. "$(dirname "$0")/lib.bash"
daemon_scratch signals
words=3000
is_san "$D" && words=600 # sanitizer builds are ~10x slower
prose GPL-3 $words > "$T/long.txt"
prose Apache-2.0 80 > "$T/small.txt"

start_daemon() {
	# snapkv with a small budget: the signal handling does not depend on
	# the policy, and a long ingest stays cheap to start
	"$D" --foreground --state "$KVSNAP_STATE" --socket "$KVSNAP_SOCKET" --policy snapkv \
		--budget 64 --chunk 64 -t 1 --workers 2 --log-level info 2>>"$T/daemon.log" &
	DPID=$!
	wait_ready daemon_ready
}
# ended_with_event OUT ERR: the client saw a result or an error event: a
# bare EOF is what the CLI reports as "closed the connection" / "lost the
# connection"
ended_with_event() {
	! grep -q "closed the connection\|lost the connection" "$2" &&
		{ grep -q '"event":"result"\|"doc_id"' "$1" || grep -q '(shutting_down)\|shutting_down' "$2"; }
}

start_daemon; ok "daemon starts" $?
timeout 60 "$K" ingest --name small "$T/small.txt" >/dev/null 2>&1; ok "a document stored" $?

# ---- SIGHUP with an ingest and a streamed query running
busy_jobs small
kill -HUP "$DPID"
wait_exit; rc=$?
[ "$rc" -eq 0 ]; ok "SIGHUP during a query and an ingest: exit 0 (got $rc)" $?
wait "$qpid"; qrc=$?
ended_with_event "$T/q.out" "$T/q.err"; ok "the query ends with an event, not EOF (exit $qrc)" $? ||
	sed 's/^/#   /' "$T/q.err" | tail -3
wait "$ipid"; irc=$?
[ "$irc" -ne 0 ] && ended_with_event "$T/ing.out" "$T/ing.err"
ok "the ingest is told shutting_down (exit $irc)" $? || sed 's/^/#   /' "$T/ing.err" | tail -3
[ ! -e "$KVSNAP_SOCKET" ]; ok "socket removed" $?
"$K" ls > "$T/ls" 2>&1
grep -q small "$T/ls" && ! grep -q long "$T/ls"; ok "the abandoned ingest stored nothing" $?
timeout 120 "$K" verify >/dev/null 2>&1; ok "store verifies" $?

# ---- SIGHUP when idle
start_daemon; ok "restart" $?
kill -HUP "$DPID"
wait_exit; rc=$?
[ "$rc" -eq 0 ]; ok "SIGHUP when idle: exit 0 (got $rc)" $?
[ ! -e "$KVSNAP_SOCKET" ]; ok "socket removed" $?
grep -q "signal 1:" "$T/daemon.log"; ok "the daemon logs the signal" $?

if [ "$fail" -ne 0 ]; then echo "# daemon log (tail):"; tail -n 20 "$T/daemon.log" | sed 's/^/#   /'; fi
finish
