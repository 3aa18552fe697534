#!/usr/bin/env bash
# Answers against stored bytes (issue 28): the QA bench's documents read
# once by kvzip at 1/2 of their units, kept as their fp16 snapshot would
# hold them, cut to each ratio by the stored scores (kvsnap shrink), and
# every cut put through the snapshot codec at each stored precision; every
# question asked on what comes back (bench/bench_qa.c, --quants).
#
#   usage: bench/qa_bytes.sh [--out DIR] [--model GGUF] [-- BENCH_QA_OPTIONS]
#
# Writes DIR/qa_bytes.json (every reply; rewritten after each document),
# DIR/qa_bytes.log (progress) and DIR/qa_bytes.txt (the command, the machine
# and the table of bench/qa_bytes_table.py: answered share of the full
# cache's answers with the held-out documents of bench/qa/heldout.txt apart,
# ROUGE-L against the full cache's replies, stored bytes per document token,
# load time).  Default DIR build/qa-bytes.  Options after -- go to bench_qa
# (e.g. --doc 01-,02- for a subset, --ratios, --quants).
#
# One thread (-t 1, OPENBLAS_NUM_THREADS=1): on a shared two-core machine
# two threads wait on each other and answer several times slower; run two
# of these side by side (different --out and --doc) to use both cores.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
MODEL=models/SmolLM2-135M-Instruct.Q4_1.gguf
OUT=build/qa-bytes
ARGS=()
while [ $# -gt 0 ]; do
	case $1 in
	--out) OUT=$2; shift ;;
	--model) MODEL=$2; shift ;;
	--) shift; ARGS+=("$@"); break ;;
	*) echo "usage: bench/qa_bytes.sh [--out DIR] [--model GGUF] [-- BENCH_QA_OPTIONS]" >&2
	   exit 2 ;;
	esac
	shift
done
make --no-print-directory "$BUILD/bench/bench_qa" >&2
[ -f "$MODEL" ] || { echo "qa_bytes: no model $MODEL (make model / make model-qwen)" >&2; exit 1; }
mkdir -p "$OUT"
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
rev=$(git describe --always --dirty 2>/dev/null || echo unknown)
QA=(-m "$MODEL" -t 1 --policies none --policy kvzip:from=0.5
	--ratios 0.5,0.25,0.125,0.0625 --quants fp16,q8,q4,q4kc,q4h,q4kch)
{
	echo "# bench/qa_bytes.sh --out $OUT --model $MODEL${ARGS[*]:+ -- ${ARGS[*]}}"
	echo "# bench_qa ${QA[*]} ${ARGS[*]}"
	echo "# engine $rev; machine: ${cpu:-?}, $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); $(date -u +%FT%TZ)"
} > "$OUT/qa_bytes.txt"
OPENBLAS_NUM_THREADS=1 "$BUILD/bench/bench_qa" "${QA[@]}" --json "$OUT/qa_bytes.json" "${ARGS[@]}" \
	2> "$OUT/qa_bytes.log" > "$OUT/bench_qa.out"
/usr/bin/python3 bench/qa_bytes_table.py "$OUT/qa_bytes.json" | tee -a "$OUT/qa_bytes.txt"
