#!/usr/bin/env bash
# Library questions (issue 29, items 3-4): `kvsnap query --docs A,B Q`
# through a real kvsnapd and with --local over the same real store, answered
# from the documents' snapshots (no text read again), side by side (the
# default) and part by part; the sources named in the result; abstention
# (the threshold forced both ways, so the test never rests on a 135M
# model's confidence); one document asked as a library answers exactly as
# the plain query of it (the same cache, re-laid and re-rotated, gives the
# same tokens); the protocol's checks of "docs", "mode" and "min_conf";
# and, as root with two real users, a document another user may not read
# is not found in a library question either.
set -u
. "$(dirname "$0")/lib.bash"
library_scratch library 250 80
{ prose GPL-3 $words; echo; echo "The password for the archive is avalanche."; echo; prose GPL-2 60; } > "$T/docs/alpha.txt"
{ prose Apache-2.0 $words; echo; echo "The mascot of the archive is a wombat."; echo; prose MPL-2.0 60; } > "$T/docs/beta.txt"
PROFILE=(--budget 64 --chunk 64)

proto_py # readable by the second user too
chmod 644 "$T/proto.py"
# the result line of a --json run ($T/out), checked by a Python expression over r
result_ok() {
	python3 - "$T/out" "$1" <<'PY'
import json, sys
r = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
toks = "".join(e.get("text", "") for e in r if e["event"] == "token")
r = [e for e in r if e["event"] == "result"][-1]
ok = eval(sys.argv[2], {"r": r, "toks": toks})
if not ok:
    print("#   result:", json.dumps(r)[:600]); print("#   text:", toks[:300])
sys.exit(0 if ok else 1)
PY
}

"$D" --foreground --state "$KVSNAP_STATE" --socket "$KVSNAP_SOCKET" "${PROFILE[@]}" -t 2 \
	--workers 2 --http "unix:$T/http.sock" --log-level debug 2>>"$T/daemon.log" &
DPID=$!
wait_ready python3 "$T/proto.py" "$KVSNAP_SOCKET" '{"id":0,"op":"hello"}' 300; [ -S "$KVSNAP_SOCKET" ]; ok "daemon listening" $?
chmod 755 "$T"; chmod 666 "$KVSNAP_SOCKET" # every local user may connect: ownership is the only gate

expect_rc "ingest alpha" 0 "$K" ingest --share --name alpha "$T/docs/alpha.txt"
expect_rc "ingest beta" 0 "$K" ingest --share --name beta "$T/docs/beta.txt"
A=$("$K" info --json alpha | python3 -c 'import json,sys; print(json.loads(sys.stdin.readline())["doc"]["doc_id"])')
B=$("$K" info --json beta | python3 -c 'import json,sys; print(json.loads(sys.stdin.readline())["doc"]["doc_id"])')
[ ${#A} -eq 64 ] && [ ${#B} -eq 64 ]; ok "both doc_ids known" $?

Q="What is the password for the archive?"
# ---- side by side (the default), through kvsnapd
expect_rc "query --docs alpha,beta (kvsnapd)" 0 "$K" query --json -n 24 --mode side --docs alpha,beta "$Q"
result_ok "r['mode'] == 'side' and [s['doc_id'] for s in r['sources']] == ['$A', '$B'] and all(s['consulted'] for s in r['sources']) and [s['label'] for s in r['sources']] == ['alpha', 'beta'] and isinstance(r['confidence'], float) and r['answered_from'] is None and r['abstained'] in (True, False) and r['prompt_tokens'] > 0"
ok "  side by side: both documents consulted and named, a confidence, no single source" $?
# ---- part by part
expect_rc "query --docs alpha,beta --mode parts (kvsnapd)" 0 "$K" query --json -n 24 --mode parts --min-conf -1000 --docs alpha,beta "$Q"
result_ok "r['mode'] == 'parts' and all(isinstance(s['score'], float) for s in r['sources']) and r['answered_from'] in ('$A', '$B') and r['confidence'] == max(s['score'] for s in r['sources']) and not r['abstained'] and len(toks) > 0"
ok "  part by part: each document scored, the answer from the best scored, not abstained at -1000" $?
# ---- the question scored by each, the likeliest answering
expect_rc "query --docs alpha,beta --mode pick (kvsnapd)" 0 "$K" query --json -n 24 --mode pick --min-conf -1000 --docs alpha,beta "$Q"
result_ok "r['mode'] == 'pick' and all(isinstance(s['score'], float) and s['score'] < 0 for s in r['sources']) and r['answered_from'] == [s for s in r['sources'] if s['score'] == max(x['score'] for x in r['sources'])][0]['doc_id'] and not r['abstained'] and len(toks) > 0"
ok "  pick: the question scored by each, the answer from the likeliest" $?
expect_rc "query --docs alpha,beta, no mode (kvsnapd)" 0 "$K" query --json -n 8 --min-conf -1000 --docs alpha,beta "$Q"
result_ok "r['mode'] == 'pick'"; ok "  the default mode is pick (bench/RESULTS.md)" $?
# ---- the people's output: the answer, then its sources
expect_rc "query --docs (text)" 0 "$K" query -n 24 --min-conf -1000 --mode parts --docs alpha,beta "$Q"
grep -q '^sources: .*alpha.*beta\|^sources: .*beta.*alpha' "$T/out" && grep -q "answered from" "$T/out"; ok "  a sources line naming both and the one answered from" $?

# ---- abstention, forced: min_conf 0 is above any answer's mean log-probability
# below 0 (an answer the model is entirely sure of may reach 0: not with 24 tokens here)
expect_rc "query --docs --min-conf 0 (abstains)" 0 "$K" query --json -n 24 --min-conf 0 --docs alpha,beta "$Q"
result_ok "r['abstained'] and r['answered_from'] is None and 'does not contain' in toks and 'alpha' in toks and 'beta' in toks"
ok "  the reply says the library does not contain it, naming alpha and beta" $?
expect_rc "  the same in parts mode" 0 "$K" query --json -n 24 --mode parts --min-conf 0 --docs alpha,beta "$Q"
result_ok "r['abstained'] and r['answered_from'] is None and 'does not contain' in toks"
ok "  abstained, no source answered from" $?

# ---- one document as a library: the very tokens of the plain query
"$K" query -n 24 alpha "$Q" > "$T/plain.txt" 2>"$T/err"; ok "plain query of alpha" $?
for m in side parts; do
	"$K" query -n 24 --mode $m --min-conf -1000 --docs alpha "$Q" > "$T/lib.txt" 2>"$T/err"
	head -n 1 "$T/lib.txt" > "$T/lib1.txt"
	head -n 1 "$T/plain.txt" > "$T/plain1.txt"
	cmp -s "$T/lib1.txt" "$T/plain1.txt"; _s=$?
	ok "  --docs alpha --mode $m answers with the plain query's tokens" $_s || { head -c 300 "$T/lib1.txt" "$T/plain1.txt" | sed 's/^/#   /'; }
done

# ---- --local over the same store and profile
expect_rc "query --local --docs alpha,beta" 0 "$K" query --local "${PROFILE[@]}" -t 2 --json -n 24 --mode side --min-conf -1000 --docs alpha,beta "$Q"
result_ok "r['mode'] == 'side' and [s['label'] for s in r['sources']] == ['alpha', 'beta'] and all(s['consulted'] for s in r['sources']) and not r['abstained']"
ok "  --local: the same sources" $?
"$K" query -n 24 --min-conf -1000 --docs alpha,beta "$Q" > "$T/d.txt" 2>/dev/null
"$K" query --local "${PROFILE[@]}" -t 2 -n 24 --min-conf -1000 --docs alpha,beta "$Q" > "$T/l.txt" 2>/dev/null
cmp -s "$T/d.txt" "$T/l.txt"; ok "  --local and kvsnapd give the same answer and sources" $?
expect_rc "--local: a document of another profile is not consulted" 2 "$K" query --local --budget 32 --chunk 64 -n 4 --docs alpha,beta "$Q"
grep -q "none of the 2 documents" "$T/err"; ok "  said so" $?

# ---- --all: the documents the full-text index finds for the question
expect_rc "query --all (kvsnapd)" 0 "$K" query --json -n 16 --min-conf -1000 --all "What is the password for the archive?"
result_ok "len(r['sources']) >= 1 and r['sources'][0]['doc_id'] == '$A' and all(isinstance(s['bm25'], float) and s['bm25'] > 0 for s in r['sources']) and not r['abstained']"
ok "  the document holding 'password' retrieved first, each source with its BM25 score" $?
expect_rc "query --all, words no document holds" 0 "$K" query --json -n 16 --all "xylophone quokka zeppelin"
result_ok "r['sources'] == [] and r['abstained'] and 'no document matches' in toks"
ok "  nothing retrieved: the abstention, no source" $?
expect_rc "query --local --all" 0 "$K" query --local "${PROFILE[@]}" -t 2 --json -n 16 --min-conf -1000 --all "What is the password for the archive?"
result_ok "r['sources'][0]['label'] == 'alpha'"
ok "  --local: alpha first too" $?
expect_rc "--all with --docs" 1 "$K" query --all --docs alpha "$Q"
if command -v curl >/dev/null; then
	curl -s --max-time 300 --unix-socket "$T/http.sock" -o "$T/out" -H 'Content-Type: application/json' \
		http://localhost/v1/chat/completions -d '{"model":"library","min_conf":-1000,"max_tokens":16,"messages":[{"role":"user","content":"What is the password for the archive?"}]}'
	python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); sys.exit(0 if r["sources"][0]["label"]=="alpha" and r["choices"][0]["message"]["content"] else 1)' "$T/out"
	ok "HTTP model library: answered over what search finds, alpha first" $? || head -c 400 "$T/out"
fi

# ---- the CLI's and the protocol's checks
expect_rc "--docs missing its documents" 1 "$K" query --docs , "$Q"
expect_rc "--mode without --docs" 1 "$K" query --mode parts alpha "$Q"
expect_rc "--mode other" 1 "$K" query --docs alpha --mode all "$Q"
expect_rc "--docs with an unknown document" 2 "$K" query --docs alpha,nosuch "$Q"
chk() { # description, request, expected code
	python3 "$T/proto.py" "$KVSNAP_SOCKET" "$2" 300 > "$T/o"
	grep -q "\"code\": *\"$3\"" "$T/o"; ok "$1: $3" $? || sed 's/^/#   /' "$T/o"
}
chk "doc and docs" '{"id":1,"op":"query","doc":"alpha","docs":["beta"],"question":"q"}' bad_request
chk "docs empty" '{"id":1,"op":"query","docs":[],"question":"q"}' bad_request
chk "docs of 17" '{"id":1,"op":"query","docs":["a","a","a","a","a","a","a","a","a","a","a","a","a","a","a","a","a"],"question":"q"}' bad_request
chk "docs not strings" '{"id":1,"op":"query","docs":[1],"question":"q"}' bad_request
chk "mode unknown" '{"id":1,"op":"query","docs":["alpha"],"mode":"x","question":"q"}' bad_request
chk "min_conf above 0" '{"id":1,"op":"query","docs":["alpha"],"min_conf":0.5,"question":"q"}' bad_request
chk "mode without docs" '{"id":1,"op":"query","doc":"alpha","mode":"side","question":"q"}' bad_request
chk "all and doc" '{"id":1,"op":"query","doc":"alpha","all":true,"question":"q"}' bad_request
chk "docs with fd" '{"id":1,"op":"query","docs":["alpha"],"fd":true,"question":"q"}' bad_request
python3 "$T/proto.py" "$KVSNAP_SOCKET" '{"id":1,"op":"query","docs":["alpha","alpha"],"question":"What is the password?","max_tokens":4,"min_conf":-1000}' 300 > "$T/o"
python3 -c 'import json,sys; r=json.loads(open(sys.argv[1]).read()); sys.exit(0 if r["event"]=="result" and len(r["sources"])==1 else 1)' "$T/o"
ok "a document named twice is consulted once" $? || sed 's/^/#   /' "$T/o"

# ---- the OpenAI endpoint: "documents", the sources beside the choices
if command -v curl >/dev/null; then
	post() { curl -s --max-time 300 --unix-socket "$T/http.sock" -o "$T/out" -w '%{http_code}' \
		-H 'Content-Type: application/json' http://localhost/v1/chat/completions -d "$1"; }
	st=$(post '{"model":"kvsnap","documents":["alpha","beta"],"min_conf":-1000,"max_tokens":16,"messages":[{"role":"user","content":"What is the password for the archive?"}]}')
	[ "$st" = 200 ] && python3 - "$T/out" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
ok = [s["label"] for s in r["sources"]] == ["alpha", "beta"] and all(s["consulted"] for s in r["sources"]) \
    and r["abstained"] is False and r["choices"][0]["message"]["content"] and r["usage"]["prompt_tokens"] > 0
sys.exit(0 if ok else 1)
PY
	ok "HTTP documents: 200, the answer, sources alpha and beta beside choices" $? || head -c 400 "$T/out"
	st=$(post '{"model":"kvsnap","documents":["alpha","beta"],"library_mode":"parts","min_conf":-1000,"max_tokens":16,"stream":true,"messages":[{"role":"user","content":"What is the password for the archive?"}]}')
	[ "$st" = 200 ] && python3 - "$T/out" <<'PY'
import json, sys
ev = [json.loads(l[6:]) for l in open(sys.argv[1]) if l.startswith("data: {")]
last = [e for e in ev if e.get("choices") and e["choices"][0].get("finish_reason")]
ok = len(last) == 1 and len(last[0]["sources"]) == 2 and last[0]["answered_from"] in [s["doc_id"] for s in last[0]["sources"]] \
    and "".join(e["choices"][0]["delta"].get("content", "") for e in ev if e.get("choices"))
sys.exit(0 if ok else 1)
PY
	ok "HTTP documents, streamed (parts): the finishing chunk names the sources and the one answered from" $? || head -c 600 "$T/out"
	st=$(post '{"model":"kvsnap","documents":["alpha"],"document":"beta","messages":[{"role":"user","content":"q"}]}')
	[ "$st" = 400 ]; ok "HTTP document and documents: 400" $?
	st=$(post '{"model":"kvsnap","documents":["alpha"],"messages":[{"role":"user","content":"q"},{"role":"assistant","content":"a"},{"role":"user","content":"q2"}]}')
	[ "$st" = 400 ]; ok "HTTP documents with a conversation: 400" $?
	st=$(post '{"model":"kvsnap","documents":["nosuch"],"messages":[{"role":"user","content":"q"}]}')
	[ "$st" = 404 ]; ok "HTTP documents naming an unknown document: 404" $?
else
	echo "# HTTP part skipped: needs curl"
fi

# ---- ownership, with two real users (root only)
if command -v useradd >/dev/null && command -v runuser >/dev/null && [ "$(id -u)" -eq 0 ]; then
	UA=kvsnap-a UB=kvsnap-b
	test_users $UA $UB
	mkdir -p "$T/a"; cp "$T/docs/alpha.txt" "$T/a/private.txt"; echo "The codeword is marzipan." >> "$T/a/private.txt"
	chown -R "$UA" "$T/a"; chmod 700 "$T/a"
	asA=(runuser -u "$UA" -- env KVSNAP_SOCKET="$KVSNAP_SOCKET")
	asB=(runuser -u "$UB" -- env KVSNAP_SOCKET="$KVSNAP_SOCKET")
	expect_rc "A ingests a private document" 0 "${asA[@]}" "$K" ingest --name a-private "$T/a/private.txt"
	expect_rc "A asks a library question over it and beta" 0 "${asA[@]}" "$K" query -n 4 --min-conf -1000 --docs a-private,beta "$Q"
	expect_rc "B asks over A's private one: not found" 2 "${asB[@]}" "$K" query -n 4 --docs a-private,beta "$Q"
	grep -q "no document matches 'a-private'" "$T/err"; ok "  in a missing document's words" $?
	expect_rc "B asks over the shared ones: answered" 0 "${asB[@]}" "$K" query -n 4 --min-conf -1000 --docs alpha,beta "$Q"
	P=$("$K" info --json a-private | python3 -c 'import json,sys; print(json.loads(sys.stdin.readline())["doc"]["doc_id"])')
	expect_rc "A asks the whole library about marzipan" 0 "${asA[@]}" "$K" query --json -n 4 --min-conf -1000 --all "What is the codeword marzipan?"
	result_ok "r['sources'][0]['doc_id'] == '$P'"; ok "  A's private document retrieved first" $?
	expect_rc "B asks the whole library about marzipan" 0 "${asB[@]}" "$K" query --json -n 4 --min-conf -1000 --all "What is the codeword marzipan?"
	result_ok "'$P' not in [s['doc_id'] for s in r['sources']]"; ok "  A's private document is never a source for B" $?
else
	echo "# ownership part skipped: needs root, useradd and runuser"
fi
kill -TERM "$DPID"; wait_exit; ok "daemon stops cleanly" $?
finish
