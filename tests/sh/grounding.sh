#!/usr/bin/env bash
# The library's grounding check and its judged, streamed answer (issue 29):
# a real library of 3 short documents (each a fact of the same kind about a
# different place, in license prose), a real kvsnapd and --local over the
# same store.  A question about a place none of them names is abstained on
# by the grounding check before any model runs (so the result rests on no
# model's confidence: judged_tokens 0, no model time), naming the documents
# consulted; the same question about a place one names answers from that
# document alone (the only grounded part), the others reported as not
# consulted and why; --judge-tokens N judges N tokens (the end of turn, if
# sooner), and --min-conf 0 abstains after them without handing any on.
set -u
. "$(dirname "$0")/lib.bash"
library_scratch grounding 120 50
{ prose GPL-3 $words; echo; echo "The river that flows through Torombe is called Ulvethe."; } > "$T/docs/torombe.txt"
{ prose Apache-2.0 $words; echo; echo "The river that flows through Velakin is called Dreoria."; } > "$T/docs/velakin.txt"
{ prose MPL-2.0 $words; echo; echo "The lighthouse keeper of Corholt is Anselm Ashcombe."; } > "$T/docs/corholt.txt"
PROFILE=(--budget 64 --chunk 64)
proto_py
result_ok() { # the result line of a --json run ($T/out), checked by a Python expression over r
	python3 - "$T/out" "$1" <<'PY'
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
toks = "".join(e.get("text", "") for e in ev if e["event"] == "token")
n_tok = sum(1 for e in ev if e["event"] == "token")
r = [e for e in ev if e["event"] == "result"][-1]
src = {s["label"]: s for s in r["sources"]}
ok = eval(sys.argv[2], {"r": r, "toks": toks, "n_tok": n_tok, "src": src})
if not ok:
    print("#   result:", json.dumps(r)[:900]); print("#   text:", toks[:300])
sys.exit(0 if ok else 1)
PY
}

"$D" --foreground --state "$KVSNAP_STATE" --socket "$KVSNAP_SOCKET" "${PROFILE[@]}" -t 2 \
	--workers 1 --http "unix:$T/http.sock" 2>>"$T/daemon.log" &
DPID=$!
wait_ready python3 "$T/proto.py" "$KVSNAP_SOCKET" '{"id":0,"op":"hello"}' 300; [ -S "$KVSNAP_SOCKET" ]; ok "daemon listening" $?
for n in torombe velakin corholt; do
	expect_rc "ingest $n" 0 "$K" ingest --name "$n" "$T/docs/$n.txt"
done

QX="What is the river that flows through Halwick called?"
expect_rc "query --all, a place no document names (kvsnapd)" 0 "$K" query --json -n 16 --min-conf -1000 --all "$QX"
result_ok "r['abstained'] and r['answered_from'] is None and r['judged_tokens'] == 0 and r['ttft_model_s'] == 0 and r['confidence'] is None and 'does not contain' in toks and 'halwick' in toks and 'torombe' in toks and 'velakin' in toks and all(not s['consulted'] and 'does not name halwick' in s['why'] for s in r['sources'])"
ok "  abstained by the grounding check at -1000 (no model ran), naming the documents consulted" $?
expect_rc "the same with --local" 0 "$K" query --local --state "$KVSNAP_STATE" "${PROFILE[@]}" -t 2 --json -n 16 --min-conf -1000 --all "$QX"
result_ok "r['abstained'] and r['judged_tokens'] == 0 and 'torombe' in toks and 'velakin' in toks"
ok "  --local: the same abstention" $?

QT="What is the river that flows through Torombe called?"
expect_rc "query --all, a place one document names (kvsnapd)" 0 "$K" query --json -n 16 --min-conf -1000 --all "$QT"
result_ok "not r['abstained'] and src['torombe']['consulted'] and r['answered_from'] == src['torombe']['doc_id'] and all(not s['consulted'] and 'does not name torombe' in s['why'] for l, s in src.items() if l != 'torombe') and n_tok >= 1 and isinstance(r['confidence'], float) and isinstance(r['judged_confidence'], float)"
ok "  answered from torombe, the only part naming it; the others not consulted, and why" $?
expect_rc "--judge-tokens 2 (--local)" 0 "$K" query --local --state "$KVSNAP_STATE" "${PROFILE[@]}" -t 2 --json -n 16 --min-conf -1000 --judge-tokens 2 --all "$QT"
result_ok "not r['abstained'] and r['judged_tokens'] == min(2, r['tokens'] + 1) and r['tokens'] == n_tok"
ok "  2 tokens judged, then the answer streamed" $?
expect_rc "--min-conf 0: the judged tokens fall short (kvsnapd)" 0 "$K" query --json -n 16 --min-conf 0 --judge-tokens 3 --all "$QT"
result_ok "r['abstained'] and 1 <= r['judged_tokens'] <= 3 and r['judged_confidence'] < 0 and n_tok == 1 and toks.startswith('The library does not contain') and 'torombe' in toks"
ok "  abstained after at most 3 tokens, none of them handed on" $?
expect_rc "--judge-tokens 0: usage" 1 "$K" query --all --judge-tokens 0 "$QT"
expect_rc "--judge-tokens without a library question: usage" 1 "$K" query --judge-tokens 4 torombe "$QT"
python3 "$T/proto.py" "$KVSNAP_SOCKET" '{"id":1,"op":"query","doc":"torombe","judge_tokens":4,"question":"q"}' 300 > "$T/o"
grep -q '"code": *"bad_request"' "$T/o"; ok "protocol: judge_tokens without docs or all: bad_request" $? || sed 's/^/#   /' "$T/o"
kill -TERM "$DPID"; wait_exit; ok "daemon stops cleanly" $?
finish
