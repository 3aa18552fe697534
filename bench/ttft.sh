#!/usr/bin/env bash
# Time to first token of a question answered from a stored snapshot against
# re-reading the whole document (bench/bench_ttft.c), then llama.cpp's own
# state save/load of the same document at the same lengths
# (bench/llamacpp_state.py): its saved-state bytes, its TTFT from the state
# (load_state + question + argmax), its full re-prefill, and the two side by
# side.
#
#   usage: bench/ttft.sh [BENCH_TTFT_OPTIONS]
#          e.g. bench/ttft.sh --lengths 512,1024 --reps 1
#
# Options go to bench_ttft as they are (defaults: lengths 2048,4096,8192,
# snapkv at n/8, fp16, chunk 512, 2 threads, median of 3); -m, -t and
# --full-reps (else --reps) are passed on to llama.cpp too, which runs at
# the n bench_ttft really used (8192 → 8128 for the bundled model).
# KVSNAP_BACKEND=cuda runs kvsnap's side on the GPU (llama.cpp stays on the
# CPU).  llama.cpp's side needs .venv-fixtures (scripts/make-fixtures.sh);
# without it only kvsnap's table is printed.  Outputs are also kept in
# $BUILD/ttft/{kvsnap.txt,llamacpp.jsonl}.  Two cores: the defaults take
# about half an hour (llama.cpp's 8K re-prefill is the slow part).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
BIN=$BUILD/bench/bench_ttft
PY=.venv-fixtures/bin/python
MODEL=models/SmolLM2-135M-Instruct.Q4_1.gguf
THREADS=2 REPS=3 FULL_REPS=
args=("$@")
while [ $# -gt 0 ]; do
	case $1 in
	-m) MODEL=$2; shift ;;
	-t) THREADS=$2; shift ;;
	--reps) REPS=$2; shift ;;
	--full-reps) FULL_REPS=$2; shift ;;
	-h|--help) sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	esac
	shift
done
FULL_REPS=${FULL_REPS:-$REPS}
[ -x "$BIN" ] || make --no-print-directory "$BIN"
[ -f "$MODEL" ] || make --no-print-directory model
OUT=$BUILD/ttft
mkdir -p "$OUT"
: > "$OUT/llamacpp.jsonl"

echo "== kvsnap: TTFT from a stored snapshot vs re-prefill ($BIN ${args[*]})"
"$BIN" "${args[@]}" | tee "$OUT/kvsnap.txt"

if [ ! -x "$PY" ]; then
	echo "== llama.cpp: skipped ($PY missing: run scripts/make-fixtures.sh)"
	exit 0
fi
# the real document lengths: first column of the main table's rows (the
# load split table after it repeats them), or "n" of --json
mapfile -t NS < <(sed -n -e '/^load split/q' -e 's/^| \([0-9][0-9]*\) |.*/\1/p' \
    -e 's/^{"n":\([0-9][0-9]*\),.*/\1/p' "$OUT/kvsnap.txt")
echo
echo "== llama.cpp: save_state/load_state of the same document ($PY bench/llamacpp_state.py" \
    "$MODEL N $THREADS $FULL_REPS)"
for n in "${NS[@]}"; do
	"$PY" bench/llamacpp_state.py "$MODEL" "$n" "$THREADS" "$FULL_REPS" 2>/dev/null |
	    tee -a "$OUT/llamacpp.jsonl"
done
echo
python3 - "$OUT/kvsnap.txt" "$OUT/llamacpp.jsonl" <<'EOF'
import json, re, sys
kv, col = {}, {}
for line in open(sys.argv[1]):
    if line.startswith("load split"):  # the second table repeats n with other columns
        break
    c = [x.strip() for x in line.strip().strip("|").split("|")]
    if line.startswith("{"):
        r = json.loads(line)
        kv[r["n"]] = (r["stored_mb"], r["ttft_ms"], r["reprefill_ms"])
    elif line.startswith("| n |"):  # the header: columns by name
        col = {name: i for i, name in enumerate(c)}
    elif re.match(r"^\| \d+ \|", line):
        kv[int(c[0])] = tuple(float(c[col[k]]) for k in ("stored MiB", "TTFT ms", "re-prefill ms"))
print("| n | llama.cpp state MiB | load ms | question ms | TTFT ms | re-prefill ms | speedup "
      "| same first token | kvsnap MiB | kvsnap TTFT ms | state / kvsnap MiB "
      "| state TTFT / kvsnap TTFT |")
print("|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|")
for line in open(sys.argv[2]):
    r = json.loads(line)
    mib = r["state_bytes"] / 1048576
    k = kv.get(r["tokens"])
    print("| %d | %.2f | %.1f | %.1f | %.1f | %.0f | %.1fx | %s | %s | %s | %s | %s |" % (
        r["tokens"], mib, r["load_ms"], r["question_ms"], r["state_ttft_ms"],
        r["reprefill_ms"], r["reprefill_ms"] / r["state_ttft_ms"],
        "yes" if r["first_token_state"] == r["first_token_full"] else "no",
        "%.2f" % k[0] if k else "-", "%.1f" % k[1] if k else "-",
        "%.1fx" % (mib / k[0]) if k else "-",
        "%.1fx" % (r["state_ttft_ms"] / k[1]) if k else "-"))
EOF
