#!/usr/bin/env bash
# Training-free PoD against its share of layers (spec/pod.md §3.1, §7
# "Quality"): one calibration, then block maps regrouped for several target
# key savings S (f ≈ 2S non-anchor (layer, head) pairs), each measured with
# bench_quality at one length and budget:
#   pod:base=full   layer sharing alone (no eviction): the cost of sharing
#   pod             sharing over nacl (ρ = 0), at the budget
# next to nacl:rho=0 (the same base without sharing) and the full cache.
#
#   usage: bench/pod_sweep.sh [--length N] [--fraction F] [--savings "0.05 0.1 …"]
#
# Output: build/pod-sweep/{map-*.json,rows.jsonl,sweep.md}; the table goes to
# stdout (for bench/RESULTS.md).  Deterministic: same model, same numbers.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
MODEL=models/SmolLM2-135M-Instruct.Q4_1.gguf
LEN=2048 FRAC=4 SAVINGS="0.05 0.1 0.2 0.3 0.35"
while [ $# -gt 0 ]; do
	case $1 in
	--length) LEN=$2; shift ;;
	--fraction) FRAC=$2; shift ;;
	--savings) SAVINGS=$2; shift ;;
	*) echo "usage: bench/pod_sweep.sh [--length N] [--fraction F] [--savings LIST]" >&2; exit 1 ;;
	esac
	shift
done
[ -x "$BUILD/kvsnap" ] && [ -x "$BUILD/bench/bench_quality" ] || make --no-print-directory all
[ -f "$MODEL" ] || make --no-print-directory model
OUT=$BUILD/pod-sweep
mkdir -p "$OUT"
BASE=$OUT/map-calibrated.json
[ -f "$BASE" ] || "$BUILD/kvsnap" pod-calibrate -m "$MODEL" -o "$BASE" >&2
pol=(--policy full --policy nacl:rho=0)
for S in $SAVINGS; do
	"$BUILD/kvsnap" pod-calibrate --regroup "$BASE" --target-saving "$S" -o "$OUT/map-$S.json" >&2
	pol+=(--policy "pod:base=full,map=$OUT/map-$S.json" --policy "pod:map=$OUT/map-$S.json")
done
ROWS=$OUT/rows.jsonl
"$BUILD/bench/bench_quality" -m "$MODEL" --lengths "$LEN" --fractions "$FRAC" \
	--tasks passkey,fidelity "${pol[@]}" --json > "$ROWS"
python3 - "$ROWS" "$OUT" "$LEN" "$FRAC" <<'PY' | tee "$OUT/sweep.md"
import json, re, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{") and "skip" not in l]
out, length, frac = sys.argv[2], sys.argv[3], sys.argv[4]
def row(spec):
    r = [x for x in rows if x["spec"] == spec]
    return r[0] if r else None
print(f"PoD δ sweep at {length} tokens, budget 1/{frac} (`bench/pod_sweep.sh --length {length} --fraction {frac}`)\n")
print("| target S | δ | f | pod:base=full KL | top-1 | pod (nacl ρ=0) KL | top-1 | passkey |")
print("|---:|---:|---:|---:|---:|---:|---:|---:|")
for spec in sorted({x["spec"] for x in rows}):
    m = re.match(r"pod:map=(.*map-([0-9.]+)\.json)$", spec)
    if not m:
        continue
    mp = json.load(open(m.group(1)))
    a, b = row(f"pod:base=full,map={m.group(1)}"), row(spec)
    fmt = lambda r, k: f"{r[k]:.4f}" if r and k in r else "–"
    pk = f"{b['passkey_hits']}/{b['passkey_n']}" if b else "–"
    print(f"| {m.group(2)} | {mp['delta']:.3f} | {mp['f']:.3f} | {fmt(a,'kl')} | "
          f"{fmt(a,'top1')} | {fmt(b,'kl')} | {fmt(b,'top1')} | {pk} |")
for base in ("nacl:rho=0", "full"):
    r = row(base)
    if r:
        print(f"| {base} (no sharing) | – | 0 | – | – | {r.get('kl', 0):.4f} | "
              f"{r.get('top1', 1):.4f} | {r['passkey_hits']}/{r['passkey_n']} |")
PY
