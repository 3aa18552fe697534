#!/usr/bin/env bash
# Engine speed, kvsnap vs llama.cpp, one run, same machine, same GGUF, same
# thread count, same token stream.  Prints a table (paste it into
# bench/RESULTS.md with the command and the machine).
# The last line puts a whole kvzip ingest beside llama.cpp's plain prefill
# (issue 18's stretch): `kvsnap ingest --local --policy kvzip --ratio 1/4`
# of /usr/share/common-licenses/GPL-3 (~7.6K tokens) into a scratch store:
# tokenize, prefill, reconstruct, score, evict and store, model load
# excluded.
#   usage: [MODEL=GGUF] [MAX_LEN=N] [KVZIP=0] bench/engine.sh [THREADS] [REPS]
#   (MODEL: SmolLM2 by default; MAX_LEN skips longer prefills and KVZIP=0
#   the ingest line, for a big model on 2 cores; MAX_LEN=32768 adds a 32K
#   prefill, one rep each side, for a model whose window holds it)
set -euo pipefail
cd "$(dirname "$0")/.."
THREADS=${1:-2}
REPS=${2:-2}
MAX_LEN=${MAX_LEN:-8192}
MODEL=${MODEL:-models/SmolLM2-135M-Instruct.Q4_1.gguf}
BUILD=${BUILD:-build}
[ -x "$BUILD/bench/bench_engine" ] || make --no-print-directory all
ours=$("$BUILD/bench/bench_engine" -m "$MODEL" -t "$THREADS" -r "$REPS" -L "$MAX_LEN" --json)
if ! .venv-fixtures/bin/python -c "import llama_cpp" 2>/dev/null; then
	echo "bench: building llama-cpp-python for the comparison (scripts/make-fixtures.sh's venv)" >&2
	scripts/make-fixtures.sh --venv-only
fi
ref=$(.venv-fixtures/bin/python bench/llamacpp_bench.py "$MODEL" "$THREADS" "$REPS" "$MAX_LEN" 2>/dev/null)
kz="{}"
if [ "${KVZIP:-1}" != 0 ]; then
KZ_STATE=$(mktemp -d /tmp/kvsnap-engine-bench-XXXXXX)
kz=$(KVSNAP_STATE=$KZ_STATE "$BUILD/kvsnap" ingest --local --json -m "$MODEL" -t "$THREADS" --policy kvzip \
	--ratio 1/4 --chunk 512 /usr/share/common-licenses/GPL-3)
rm -rf "$KZ_STATE"
fi
python3 - "$ours" "$ref" "$THREADS" "$kz" "$MODEL" <<'PY'
import json, sys, platform, subprocess
ours = [json.loads(l) for l in sys.argv[1].splitlines() if l.strip()]
ref = [json.loads(l) for l in sys.argv[2].splitlines() if l.strip()]
threads = sys.argv[3]
def find(rows, what, tokens=None):
    for r in rows:
        if r["what"] == what and (tokens is None or r.get("tokens") == tokens):
            return r
cpu = "?"
for line in open("/proc/cpuinfo"):
    if line.startswith("model name"):
        cpu = line.split(":", 1)[1].strip(); break
sg = find(ours, "sgemm")
print(f"model: {sys.argv[5]}")
print(f"machine: {cpu}, {threads} threads; OpenBLAS sgemm {sg['gflops']} GFLOP/s")
print()
print("| test | tokens | kvsnap tok/s | llama.cpp tok/s | ratio |")
print("|---|---:|---:|---:|---:|")
for what, tokens in (("prefill", 512), ("prefill", 2048), ("prefill", 8192), ("prefill", 32768), ("decode", 128)):
    a, b = find(ours, what, tokens), find(ref, what, tokens)
    if not a or not b:
        continue
    print(f"| {what} | {tokens} | {a['tok_s']:.1f} | {b['tok_s']:.1f} | {a['tok_s'] / b['tok_s']:.2f} |")
kz = json.loads(sys.argv[4])
if not kz:
    sys.exit(0)
# against llama.cpp's prefill of the length nearest the document's (8192
# for GPL-3's ~7.6K tokens unless MAX_LEN cut it)
near = min((r for r in ref if r["what"] == "prefill"), key=lambda r: abs(r["tokens"] - kz["tokens"]))
rate = kz["tokens"] / kz["seconds"]
print(f"| kvzip ingest to a snapshot at 1/4 (GPL-3) vs llama.cpp prefill | {kz['tokens']} | "
      f"{rate:.1f} | {near['tok_s']:.1f} ({near['tokens']}) | {rate / near['tok_s']:.2f} |")
PY
