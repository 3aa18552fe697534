#!/usr/bin/env bash
# The operator's side of kvsnapd's HTTP front end (issue 30, item 4;
# docs/HTTP.md "Operations"): GET /health (ready; 503 draining after a stop
# signal, on a connection kept alive from before it), GET /metrics read by
# prometheus_client's own text-format parser (pinned in $BUILD/openai-venv
# by scripts/openai-venv.sh) after known traffic: requests by route and
# status, latency histograms, token counters, queue depth, the store's
# documents and bytes, snapshot hits by tier, errors by code; and one log
# line per request with method, path, status, bytes and duration.
set -u
. "$(dirname "$0")/lib.bash"
http_scratch http_ops 250 80
long=3000
is_san "$D" && long=600
prose GPL-3 $words > "$T/doc.txt"
prose Apache-2.0 $long > "$T/long.txt"
head -c 4096 /dev/urandom > "$T/blob.bin"

hcurl() { curl -s --max-time 120 --unix-socket "$H" "$@"; }

daemon_start "$KVSNAP_SOCKET" "$T/daemon.log" --state "$KVSNAP_STATE" --http "unix:$H" -t 2 \
	--workers 2 --log-level info
wait_ready hcurl -f http://localhost/health; ok "daemon serving HTTP on unix:$H" $?

# ---- /health
hcurl -i http://localhost/health > "$T/h.out"
head -1 "$T/h.out" | grep -q "^HTTP/1.1 200" && grep -qx '{"status":"ready"}' <(tail -1 "$T/h.out")
ok "GET /health: 200 {\"status\":\"ready\"}" $? || cat "$T/h.out"
code=$(hcurl -o /dev/null -w '%{http_code}' -X POST http://localhost/health)
[ "$code" = 405 ]; ok "POST /health: 405 (got $code)" $?

# ---- known traffic, then /metrics
expect_rc "kvsnap ingest --name gpl (socket protocol)" 0 "$K" ingest --name gpl "$T/doc.txt"
expect_rc "a binary file's ingest fails (unsupported_format)" 4 "$K" ingest "$T/blob.bin"
expect_rc "a query of a missing document fails (not_found)" 2 "$K" query nosuchdoc "Why?"
tokens=0
for i in 1 2; do
	hcurl -o "$T/chat$i.json" -H 'Content-Type: application/json' \
		-d '{"document":"gpl","max_tokens":8,"messages":[{"role":"user","content":"What is this about?"}]}' \
		http://localhost/v1/chat/completions
	t=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["usage"]["completion_tokens"])' \
		"$T/chat$i.json" 2>/dev/null || echo 0)
	[ "$t" -gt 0 ]; ok "chat completion $i over the document ($t tokens)" $? || cat "$T/chat$i.json"
	tokens=$((tokens + t))
done
code=$(hcurl -o /dev/null -w '%{http_code}' http://localhost/v1/documents/nosuchdoc)
[ "$code" = 404 ]; ok "GET /v1/documents/nosuchdoc: 404 (got $code)" $?
# tap in this shell (not a pipeline's subshell), so its counts are kept
tap < <("$PY" "$CHECK" "$H" metrics "{\"chat_200\": 2, \"query_tokens_min\": $tokens, \"docs\": 1,
	\"local_hits\": 2, \"query_not_found\": 1}")

# ---- the request log line
grep -Eq "info: http: uid $(id -u): POST /v1/chat/completions 200, [1-9][0-9]* bytes, [0-9]+\.[0-9]{3} s$" \
	"$T/daemon.log"
ok "a log line per request: method, path, status, bytes, seconds" $? ||
	grep "http: uid" "$T/daemon.log" | tail -3 | sed 's/^/#   /'
grep -Eq "info: http: uid $(id -u): GET /v1/documents/nosuchdoc 404, [1-9][0-9]* bytes" "$T/daemon.log"
ok "  an error's too (404)" $?
[ "$(grep -c "POST /v1/chat/completions 200" "$T/daemon.log")" -eq 2 ]
ok "  exactly one per request" $?
hcurl -o /dev/null -H 'Content-Type: application/json' -d '{"document":"gpl","max_tokens":4,
	"stream":true,"messages":[{"role":"user","content":"Who?"}]}' http://localhost/v1/chat/completions
grep -Eq "POST /v1/chat/completions 200, [1-9][0-9]* bytes" <(tail -5 "$T/daemon.log")
ok "  a streamed reply's bytes counted" $?
! grep -q "GET /health\|GET /metrics" "$T/daemon.log"
ok "  probes (/health, /metrics) logged only at debug, as llama.cpp's server" $?

# ---- draining: /health on a connection opened before the stop signal
busy_jobs gpl
mkfifo "$T/go"
"$PY" "$CHECK" "$H" drain < "$T/go" > "$T/drain.out" 2>&1 &
pypid=$!
exec 7>"$T/go"
wait_for "$T/drain.out" READY-FOR-SIGNAL; ok "  /health asked before the signal" $?
kill -TERM "$DPID"
wait_for "$T/daemon.log" "signal 15:"; ok "  the daemon took the signal" $?
echo go >&7
exec 7>&-
wait "$pypid"
tap < <(grep -v READY-FOR-SIGNAL "$T/drain.out")
wait_exit; rc=$?
[ "$rc" -eq 0 ]; ok "the daemon drains and exits 0 (got $rc)" $?
wait "$ipid" "$qpid" 2>/dev/null

if [ "$fail" -ne 0 ]; then echo "# daemon log (tail):"; tail -n 20 "$T/daemon.log" | sed 's/^/#   /'; fi
finish
