#!/usr/bin/env bash
# The OpenAI-compatible HTTP endpoint (kvsnapd --http; docs/HTTP.md), driven
# by the official `openai` Python package (pinned, installed into
# $BUILD/openai-venv by scripts/openai-venv.sh) against a real daemon: on a
# Unix socket, document Q&A giving kvsnap query's own answer, streaming,
# sampling, finish reasons, errors as the package's exceptions, the
# documents endpoints; on a loopback TCP port, models and ownership (a
# second user, created here, cannot see root's document); a client leaving
# mid-answer cancels its job; malformed requests with curl, the daemon
# staying up; a non-loopback address refused at start.  Every wait is bounded.
set -u
. "$(dirname "$0")/lib.bash"
http_scratch openai 250 80
prose GPL-3 $words > "$T/doc.txt"
Q="What is this document about?"

start() { # http address, more flags
	local a=$1
	shift
	daemon_start "$KVSNAP_SOCKET" "$T/daemon.log" --state "$KVSNAP_STATE" --http "$a" -t 2 \
		--workers 2 --request-timeout 5 --log-level debug "$@"
}
models() { curl -sf --max-time 10 "${CURL[@]}" "$BASE/v1/models"; }

# ---- start-up: only loopback or a Unix socket
expect_rc "--http 0.0.0.0:8080 is refused at start" 1 "$D" --state "$KVSNAP_STATE" \
	--socket "$KVSNAP_SOCKET" --http 0.0.0.0:8080
grep -q "only a Unix socket or a loopback address" "$T/err"; ok "  naming what is allowed" $?
expect_rc "--http example.com:80 too" 1 "$D" --http example.com:80 --state "$KVSNAP_STATE"

# ---- on a Unix socket
start "unix:$H"
CURL=(--unix-socket "$H") BASE=http://localhost
wait_ready models; ok "daemon serving HTTP on unix:$H" $?
[ "$(stat -c %a "$H")" = 660 ]; ok "  the HTTP socket is mode 0660" $? || stat -c %a "$H"
# kvsnap query's own answer over the snapshot of the same bytes, to compare
expect_rc "kvsnap ingest --name gpl (socket protocol)" 0 "$K" ingest --name gpl "$T/doc.txt"
expect_rc "kvsnap query -n 24 gpl (greedy)" 0 "$K" query -n 24 gpl "$Q"
printf %s "$(cat "$T/out")" > "$T/expected"
[ -s "$T/expected" ]; ok "  an answer to compare with" $?
expect_rc "kvsnap rm gpl" 0 "$K" rm gpl
timeout 300 "$PY" "$CHECK" unix "$H" main "$T/doc.txt" "$T/expected" "$Q" > "$T/py.out" 2>&1
_s=$?; tap < "$T/py.out"; ok "  the openai package's main checks ran to their end" $_s

# ---- malformed requests (curl), the daemon stays up
code() { # expected-status json-code curl-args...: the status and the error's code
	local want=$1 wcode=$2 got; shift 2
	got=$(curl -s --max-time 30 "${CURL[@]}" -o "$T/body" -w '%{http_code}' "$@")
	[ "$got" = "$want" ] && { [ -z "$wcode" ] || grep -q "\"code\":\"$wcode\"" "$T/body"; }
}
code 400 bad_json -d '{"messages": [' "$BASE/v1/chat/completions"; ok "bad JSON: 400 bad_json" $?
code 400 bad_json -d '[1,2]' "$BASE/v1/chat/completions"; ok "a JSON array: 400 bad_json" $?
code 400 bad_request -d '{"messages":[{"role":"user","content":"hi"}],"max_tokens":"x"}' \
	"$BASE/v1/chat/completions"; ok "max_tokens a string: 400 bad_request" $?
grep -q 'max_tokens' "$T/body"; ok "  naming the field" $?
code 400 bad_request -d '{"messages":"hi"}' "$BASE/v1/chat/completions"; ok "messages a string: 400" $?
code 400 bad_request -d '{"messages":[{"role":"user","content":[{"type":"image_url"}]}]}' \
	"$BASE/v1/chat/completions"; ok "an image part: 400" $?
code 400 bad_request -d '{"prompt":[1,2,3]}' "$BASE/v1/completions"; ok "a token-array prompt: 400" $?
code 404 not_found "$BASE/v1/nothing"; ok "unknown endpoint: 404" $?
code 405 bad_request -X DELETE "$BASE/v1/models"; ok "DELETE /v1/models: 405" $?
head -c $((600 * 1024)) /dev/zero | tr '\0' 'a' > "$T/600k"
code 413 too_large -H 'Content-Type: text/plain' --data-binary @"$T/600k" "$BASE/v1/documents"
ok "a 600 KiB document: 413 too_large" $?
head -c $((3 * 1024 * 1024)) /dev/zero | tr '\0' 'a' > "$T/3m"
code 413 "" -H 'Content-Type: text/plain' --data-binary @"$T/3m" "$BASE/v1/documents"
ok "a 3 MiB body: 413" $?
code 400 bad_request -d '{"text":"x","name":"abcd"}' -H 'Content-Type: application/json' \
	"$BASE/v1/documents"; ok "a hex-only name: 400 before any work" $?
printf 'POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{"mess' \
	| timeout 20 python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.sendall(sys.stdin.buffer.read())
s.settimeout(15); print(len(s.recv(100)))' "$H" > "$T/slow" 2>&1
ok "a body that never completes is dropped (--request-timeout)" $?
models > /dev/null; ok "the daemon still answers" $?

# ---- a conversation about a document: turns in the model's chat template
# after the document (usage.prompt_tokens is the ids of exactly that text;
# the flattened "User: …" question this replaced gives another count)
expect_rc "kvsnap ingest --name mt" 0 "$K" ingest --name mt "$T/doc.txt"
curl -s --max-time 300 "${CURL[@]}" -o "$T/mt.json" -d '{"document":"mt","max_tokens":1,
	"messages":[{"role":"user","content":"Who wrote it?"},{"role":"assistant",
	"content":"The FSF."},{"role":"user","content":"When?"}]}' "$BASE/v1/chat/completions"
got=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["usage"]["prompt_tokens"])' \
	"$T/mt.json" 2>/dev/null)
want=$("$K" tokenize "$(printf '\n\nWho wrote it?<|im_end|>\n<|im_start|>assistant\nThe FSF.<|im_end|>\n<|im_start|>user\nWhen?<|im_end|>\n<|im_start|>assistant\n_')" | wc -w)
[ -n "$got" ] && [ "$got" = $((want - 1)) ]
_s=$?; ok "a document chat's earlier messages are turns ($got prompt tokens, want $((want - 1)))" $_s || cat "$T/mt.json"
# a system message first: the document's turn ends, the system message and
# the question are turns of their own (issue 30: was flattened into one question)
curl -s --max-time 300 "${CURL[@]}" -o "$T/mt.json" -d '{"document":"mt","max_tokens":1,
	"messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"When?"}]}' \
	"$BASE/v1/chat/completions"
got=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["usage"]["prompt_tokens"])' \
	"$T/mt.json" 2>/dev/null)
want=$("$K" tokenize "$(printf '<|im_end|>\n<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nWhen?<|im_end|>\n<|im_start|>assistant\n_')" | wc -w)
[ -n "$got" ] && [ "$got" = $((want - 1)) ]
_s=$?; ok "  a system message is a turn after the document's ($got prompt tokens, want $((want - 1)))" $_s || cat "$T/mt.json"
expect_rc "kvsnap rm mt" 0 "$K" rm mt

# ---- documents as models, stop sequences, conversations (issue 30): the
# `openai` package and LangChain's ChatOpenAI.  A short document (all of
# it kept at this budget) whose fact the answers name; the expected text is
# kvsnap query's own, from this run.
printf 'The archive code word is PELICAN. The vault opens on Tuesdays. Maria Lopez keeps the key.\n' \
	> "$T/facts.txt"
printf 'Notes from the vault: the archive code word is PELICAN. The vault opens on Tuesdays.\n' \
	> "$T/vault-notes.txt"
QF="What is the archive code word?"
expect_rc "kvsnap ingest --name facts" 0 "$K" ingest --name facts "$T/facts.txt"
expect_rc "kvsnap ingest vault-notes.txt (unnamed)" 0 "$K" ingest "$T/vault-notes.txt"
expect_rc "kvsnap query -n 24 facts (greedy)" 0 "$K" query -n 24 facts "$QF"
printf %s "$(cat "$T/out")" > "$T/facts.expected"
"$K" verify facts > "$T/verify0" 2>&1; v0=$?
timeout 300 "$PY" "$CHECK" unix "$H" models "$T/facts.expected" "$QF" vault-notes.txt > "$T/py.out" 2>&1; _s=$?; tap < "$T/py.out"
ok "  the documents-as-models checks ran to their end" $_s
timeout 300 "$PY" tests/sh/langchain_check.py "$H" "$T/facts.expected" "$QF" > "$T/py.out" 2>&1; _s=$?; tap < "$T/py.out"
ok "  the LangChain checks ran to their end" $_s
# the socket protocol and the CLI: --stop
expect_rc "kvsnap query --stop PELICAN --json" 0 "$K" query --json -n 24 --stop PELICAN facts "$QF"
tail -1 "$T/out" | grep -q '"stop":"stop_sequence".*"stop_sequence":"PELICAN"'
ok "  ends with stop: stop_sequence, naming it" $?
! grep -q '"text":"[^"]*PELICAN' "$T/out"; ok "  no token event carries it" $?
expect_rc "kvsnap query --stop PELICAN" 0 "$K" query -n 24 --stop PELICAN facts "$QF"
want=$(cat "$T/facts.expected"); want=${want%%PELICAN*}
[ "$(cat "$T/out")" = "$(printf '%s' "$want")" ]; ok "  prints the answer up to it" $? || cat "$T/out"
expect_rc "kvsnap query with five --stop: usage" 1 "$K" query --stop a --stop b --stop c \
	--stop d --stop e facts "$QF"
# the snapshot stays as stored: conversations ran in scratch caches
"$K" verify facts > "$T/verify1" 2>&1; ok "  the snapshot verifies after the conversations" $(( $? | v0 ))
expect_rc "kvsnap query -n 24 facts again" 0 "$K" query -n 24 facts "$QF"
[ "$(cat "$T/out")" = "$(cat "$T/facts.expected")" ]; ok "  the same answer as before them" $?
expect_rc "kvsnap rm facts" 0 "$K" rm facts
vid=$(curl -s --max-time 30 "${CURL[@]}" "$BASE/v1/models/vault-notes.txt" |
	python3 -c 'import json,sys; print(json.load(sys.stdin)["doc_id"])')
expect_rc "kvsnap rm the unnamed document (GET /v1/models/vault-notes.txt's doc_id)" 0 "$K" rm "$vid"

# ---- leaving mid-answer cancels the job
n0=$(log_count "client left; cancelling")
timeout 120 "$PY" "$CHECK" unix "$H" hangup stream > "$T/py.out" 2>&1; _s=$?; tap < "$T/py.out"
wait_log "client left; cancelling" $((n0 + 1)); ok "  the daemon saw it leave" $?
wait_log "chat: cancelled: chat cancelled" 1; ok "  and cancelled the answer" $?
timeout 120 "$PY" "$CHECK" unix "$H" hangup whole > "$T/py.out" 2>&1; _s=$?; tap < "$T/py.out"
wait_log "client left; cancelling" $((n0 + 2)); ok "  a non-streamed one too (seen within seconds)" $?
wait_log "chat: cancelled: chat cancelled" 2; ok "  and cancelled" $?
models > /dev/null; ok "the daemon still answers" $?
kill -TERM "$DPID"; wait_exit; ok "SIGTERM: exit 0" $?
[ ! -e "$H" ]; ok "  the HTTP socket is removed" $?

# ---- on a loopback TCP port, with a second user (outside the socket's
# group: let in by --http-allow any; tests/sh/http_hostile.sh checks the
# default, the socket's group)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
start "127.0.0.1:$port" --http-allow any
CURL=() BASE=http://127.0.0.1:$port
wait_ready models; ok "daemon serving HTTP on 127.0.0.1:$port" $?
timeout 120 "$PY" "$CHECK" tcp "$BASE" tcp "$(prose Apache-2.0 120)" > "$T/py.out" 2>&1; _s=$?; tap < "$T/py.out"
if [ "$(id -u)" -eq 0 ] && command -v useradd >/dev/null && command -v runuser >/dev/null; then
	UB=kvsnap-http made=
	id "$UB" >/dev/null 2>&1 || { useradd -M -N -s /usr/sbin/nologin "$UB" && made=1; }
	chmod 755 "$T"
	# where the user can read (the check imports tap_check from its folder)
	cp -r "$BUILD/openai-venv" "$T/venv" && cp "$CHECK" "$T/check.py" &&
		cp tests/sh/tap_check.py "$T/tap_check.py"
	chmod -R a+rX "$T/venv" "$T/check.py" "$T/tap_check.py"
	timeout 120 runuser -u "$UB" -- "$T/venv/bin/python" "$T/check.py" tcp "$BASE" private \
		private-doc > "$T/py.out" 2>&1
	[ "$(grep -c '^ok - ' "$T/py.out")" -eq 5 ]; ok "five checks as $UB" $? || cat "$T/py.out"
	tap < "$T/py.out"
	grep -q "http: uid $(id -u "$UB"): GET /v1/documents" "$T/daemon.log"
	ok "  the daemon knew $UB's uid from the TCP connection (sock_diag)" $?
	[ -n "$made" ] && userdel "$UB"
else
	echo "# SKIP: the second-user checks need root (useradd, runuser)"
fi
kill -TERM "$DPID"; wait_exit; ok "SIGTERM: exit 0" $?
finish
