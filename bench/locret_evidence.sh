#!/usr/bin/env bash
# Evidence for the trained retaining heads (issue 6, spec/locret.md §8):
# held-out label error and top-10 % overlap of trained vs random-init heads,
# then the quality bench at equal budgets (1/8, 1/20 of a 2K document):
# trained locret, locret with adakv allocation over its CIS, random-init
# heads, n_s = 0 (no stabilizers), and the heuristic baselines.
#
#   usage: bench/locret_evidence.sh [OUT_DIR]     (default build/locret-evidence)
#
# Needs a sidecar trained on CIS labels and its checkpoint: HEADS=FILE
# (its recipe is in the Makefile's comment above `heads`; the recorded
# table is of those heads; the shipped sidecar now holds kvzip-label heads,
# whose evidence is bench/qa.sh's).  Takes ~30 min on two cores.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
OUT=${1:-$BUILD/locret-evidence}
MODEL=models/SmolLM2-135M-Instruct.Q4_1.gguf
HEADS=${HEADS:-models/SmolLM2-135M-Instruct.Q4_1.locret.gguf}
EVAL=30
[ -f "$HEADS" ] || { echo "locret_evidence: $HEADS missing (make heads)" >&2; exit 2; }
mkdir -p "$OUT"
# Random-init heads: the recipe's initialisation with no training step.
# Held-out examples are the ones after the 500 training examples.
$BUILD/kvsnap train-heads -m "$MODEL" -o "$OUT/random.gguf" --examples 500 --d-r 256 \
	--seed 0 --max-tokens 1536 --gen-max 48 -t 2 --eval $EVAL --eval-only 2>&1 |
	tee "$OUT/eval-random.txt"
# the trained heads: the checkpoint `make heads` leaves, evaluated as it is
$BUILD/kvsnap train-heads -m "$MODEL" -o "$OUT/trained.gguf" --checkpoint "$HEADS.ckpt" --resume \
	--examples 500 \
	--d-r 256 --seed 0 --max-tokens 1536 --gen-max 48 -t 2 --eval $EVAL --eval-only 2>&1 |
	tee "$OUT/eval-trained.txt"
$BUILD/bench/bench_quality -m "$MODEL" -t 2 --lengths 2048 --fractions 8,20 --heads "$HEADS" \
	--policy full --policy locret --policy "locret:heads=$OUT/random.gguf" \
	--policy locret:n_s=0 --policy locret:positions=original \
	--policy locret:positions=original,alloc=adakv --policy locret:positions=original,n_s=0 \
	--policy snapkv --policy h2o --policy streaming --resume "$OUT/quality.jsonl" 2>&1 |
	tee "$OUT/quality.txt"
