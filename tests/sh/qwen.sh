#!/usr/bin/env bash
# Qwen2.5-Coder-1.5B-Instruct Q4_K_M (qwen2; `make model-qwen`, which make
# check runs; skipped when the file is absent) against llama.cpp, then end
# to end:
#  - token ids: test_tokenizer's fixture check over the tokenizer corpus,
#    tests/fixtures/qwen_tokens.txt (llama.cpp's ids for 771 texts and a
#    fingerprint of every token's piece; scripts/make-token-fixtures.py);
#  - logits and greedy decoding: test_forward on tests/fixtures/qwen_logits.bin
#    (llama.cpp's top-32 logits at every position of 5 prompts, 32 greedy
#    tokens each; scripts/make-fixtures.py ... qwen), with test_forward's
#    tolerances, measured from llama.cpp's own disagreement in the fixture;
#  - the same two on Qwen2.5-Coder-0.5B (the demo's model; `make
#    model-qwen05`), on tests/fixtures/qwen05_logits.bin;
#  - kvsnapd --model QWEN ingests a document and answers a question about
#    it through the socket protocol, kvsnap --local answers from the same
#    snapshot, and the OpenAI endpoint (curl) too;
#  - the profile names the model: a snapshot of the same document made
#    with SmolLM2 is not answered by the Qwen daemon, and the two live side
#    by side in one store.
set -u
. "$(dirname "$0")/lib.bash"
QWEN=models/Qwen2.5-Coder-1.5B-Instruct.Q4_K_M.gguf
need "$QWEN" "$BUILD/tests/test_forward" "$BUILD/tests/test_tokenizer" "$K"
daemon_scratch qwen
need command:curl
EXPECT_TIMEOUT=900

# tap_run NAME COMMAND...: a TAP program as one check; its report lines and
# failures are shown
tap_run() {
	local name=$1 rc; shift
	"$@" >"$T/tap.out" 2>&1
	rc=$?
	grep -E '^# report|^not ok|^#   ' "$T/tap.out" | head -40
	ok "$name" $rc
}

# against_llama MODEL LOGIT_FIXTURE LABEL: its token ids on the corpus (the
# 1.5B's and the 0.5B's vocabularies are one: the fixture fingerprints every
# piece) and its logits and greedy tokens.  The 1.5B is ~12x SmolLM2's work
# per token: an hour's watchdog, not tap.h's 20 min.
against_llama() {
	tap_run "$3token ids and pieces equal llama.cpp's (tokenizer corpus)" \
		env KVSNAP_MODEL="$1" KVSNAP_TOKEN_FIXTURES=tests/fixtures/qwen_tokens.txt \
		"$BUILD/tests/test_tokenizer" fixtures
	tap_run "$3logits within llama.cpp's measured disagreement, greedy equal up to near-ties" \
		env KVSNAP_MODEL="$1" KVSNAP_LOGIT_FIXTURES="$2" TAP_TIMEOUT=3600 \
		"$BUILD/tests/test_forward"
}
against_llama "$QWEN" tests/fixtures/qwen_logits.bin ""
# the demo's model, Qwen2.5-Coder-0.5B (make model-qwen05): Q5_0/Q8_0 weights
# where the 1.5B has Q4_K/Q6_K
QWEN05=models/Qwen2.5-Coder-0.5B-Instruct.gguf
[ ! -f "$QWEN05" ] || against_llama "$QWEN05" tests/fixtures/qwen05_logits.bin "0.5B: "

cat >"$T/doc.txt" <<'EOF'
Harbor Lights Festival: notes for volunteers. The festival takes place every
August in the fishing town of Port Kessel. The opening concert is on Friday
evening at the old lighthouse. The main stage is run by Marta Oyelaran, and
the food stalls by Jonas Brekke. Volunteers collect their badges at the blue
tent next to the ferry terminal. The fireworks start at ten o'clock on
Saturday night. In case of rain, the concert moves to the Kessel sports hall.
EOF
Q="Who runs the main stage? Answer with the name only."
# Whether the answer names Marta Oyelaran is reported, not asserted: what a
# model answers may turn on a near-tie that moves with the BLAS kernel
# (issue 25).  Asserted: the three paths give the same answer in one run
# (the same snapshot, the same greedy steps on any kernel).
answers() { # file, path: a report line
	if grep -q "Marta" "$1"; then echo "# report: $2: the answer names Marta Oyelaran"
	else echo "# report: $2: the answer misses Marta Oyelaran"; fi
}

# ---- kvsnapd with the Qwen model: the socket protocol.  The full cache
# (--policy full): this checks the model end to end through every path,
# exactly; what compression costs in answers is bench/qa.sh's question (at
# kvzip 1/4, the default before issue 28, this 129-token note's answer lost
# the name).
"$D" --state "$KVSNAP_STATE" --socket "$KVSNAP_SOCKET" --model "$QWEN" --http "unix:$T/h.sock" \
	--policy full -t 2 --workers 2 --log-level info 2>>"$T/daemon.log" &
DPID=$!
# up to 5 minutes: loading hashes the 1.1 GB file (a busy machine is slow)
up() {
	local i
	for i in $(seq 1 600); do
		curl -sf --max-time 5 --unix-socket "$T/h.sock" http://localhost/v1/models \
			>"$T/models.json" 2>/dev/null && return 0
		kill -0 "$DPID" 2>/dev/null || return 1
		sleep 0.5
	done
	return 1
}
up; ok "kvsnapd --model $QWEN is up" $? || tail -5 "$T/daemon.log"
expect_rc "kvsnap ingest --name fest (through kvsnapd)" 0 "$K" ingest --name fest "$T/doc.txt"
expect_rc "kvsnap query fest (through kvsnapd)" 0 "$K" query -n 12 fest "$Q"
echo "# answer: $(tr '\n' ' ' <"$T/out")"
answers "$T/out" "kvsnapd"; cp "$T/out" "$T/a.sock"
[ -s "$T/a.sock" ]; ok "  an answer" $?

# ---- the OpenAI endpoint of the same daemon
curl -s --max-time 600 --unix-socket "$T/h.sock" -o "$T/http.json" \
	-H 'Content-Type: application/json' -d "{\"document\":\"fest\",\"max_tokens\":12,
	\"messages\":[{\"role\":\"user\",\"content\":\"$Q\"}]}" \
	http://localhost/v1/chat/completions
python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["choices"][0]["message"]["content"])' \
	"$T/http.json" >"$T/http.txt" 2>&1
echo "# answer: $(tr '\n' ' ' <"$T/http.txt")"
answers "$T/http.txt" "the OpenAI endpoint"
[ "$(cat "$T/http.txt")" = "$(cat "$T/a.sock")" ]
ok "POST /v1/chat/completions over fest: the same answer as kvsnap query" $?
grep -q '"id":"Qwen2' "$T/models.json"; ok "GET /v1/models names the Qwen model" $?
kill -TERM "$DPID"
wait_exit; ok "kvsnapd stops cleanly" $?

# ---- in-process, from the snapshot the daemon stored
expect_rc "kvsnap query --local -m QWEN fest" 0 "$K" query --local -m "$QWEN" --policy full \
	-n 12 fest "$Q"
echo "# answer: $(tr '\n' ' ' <"$T/out")"
answers "$T/out" "--local"
cmp -s "$T/out" "$T/a.sock"; ok "  the same answer as through kvsnapd" $?

# ---- the profile names the model: SmolLM2's snapshot of the same text is another
expect_rc "kvsnap ingest --local (SmolLM2) of the same text" 0 "$K" ingest --local -m "$MODEL" \
	--policy full "$T/doc.txt"
! grep -qi skipped "$T/out"; ok "  not skipped as already stored" $? || cat "$T/out"
expect_rc "kvsnap info --json fest" 0 "$K" info --json fest
python3 -c 'import json,sys
d = [json.loads(l) for l in open(sys.argv[1]) if "snapshots" in l][0]
sys.exit(0 if len({s["profile_id"] for s in d["snapshots"]}) == 2 else 1)' \
	"$T/out"; ok "  two snapshots, under two profiles" $? || head -c 600 "$T/out"
finish
