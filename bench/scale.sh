#!/usr/bin/env bash
# Ingest speed and peak RSS against document length, one process per run
# (peak RSS only grows within a process).  Prints a markdown table.
#   usage: bench/scale.sh [MAX_TOKENS] [BUDGET] [CHUNK]
set -euo pipefail
cd "$(dirname "$0")/.."
MAX=${1:-65536}
BUDGET=${2:-1024}
CHUNK=${3:-512}
BUILD=${BUILD:-build}
[ -x "$BUILD/bench/bench_scale" ] || make --no-print-directory all
echo "| tokens | policy | ingest tok/s | peak RSS MiB | units per layer |"
echo "|---:|---|---:|---:|---:|"
row() { # tokens policy opts
	"$BUILD/bench/bench_scale" -n "$1" -p "$2" -o "$3" -b "$BUDGET" -c "$CHUNK" --json |
		python3 -c 'import json,sys; r=json.loads(sys.stdin.read()); print("| %d | %s | %.1f | %.1f | %d |" % (r["tokens"], r["policy"], r["tok_s"], r["peak_rss_mib"], r["units_layer0"]))'
}
n=2048
while [ "$n" -le "$MAX" ]; do
	[ "$n" -le 8192 ] && row "$n" snapkv ""
	# kvzip reads each segment twice (prefill + reconstruction); its ingest
	# cost against snapkv's at the same length is the ratio of these rows
	[ "$n" -le 8192 ] && row "$n" kvzip ""
	[ "$n" -le 8192 ] && row "$n" kvzip seg=1024
	# the shipped Locret heads (kvzip labels: alloc=global, original
	# positions, so the model's window bounds the document)
	[ "$n" -le 8192 ] && row "$n" locret ""
	row "$n" streaming positions=slot
	n=$((n * 2))
done
