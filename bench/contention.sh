#!/usr/bin/env bash
# Decode when threads outnumber cores: kvsnapd runs each of its workers
# (two by default) on a pool of every core, so two busy workers, or one on a
# busy machine, put two threads on each core.  Runs bench_engine's decode
# row alone, then JOBS copies at once, for each build given; prints a table
# (paste it into bench/RESULTS.md with the command and the machine).
#   usage: [MODEL=GGUF] [JOBS=2] [THREADS=nproc] bench/contention.sh BUILD_DIR...
#   (each BUILD_DIR holds bench/bench_engine; e.g. an older build beside build)
set -euo pipefail
cd "$(dirname "$0")/.."
MODEL=${MODEL:-models/SmolLM2-135M-Instruct.Q4_1.gguf}
JOBS=${JOBS:-2}
THREADS=${THREADS:-$(nproc)}
[ $# -gt 0 ] || set -- build
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
decode() { # bench_engine: its decode row's tokens per second
	"$1" -m "$MODEL" -t "$THREADS" -r 3 -L 512 --json | python3 -c '
import json, sys
print(next(json.loads(l)["tok_s"] for l in sys.stdin if "\"decode\"" in l))'
}
echo "model: $MODEL; $THREADS threads per process; $(nproc) cores; $(uptime | sed 's/.*average: //') load before"
echo
echo "| build | alone tok/s | $JOBS at once, tok/s each | sum |"
echo "|---|---:|---:|---:|"
for b in "$@"; do
	alone=$(decode "$b/bench/bench_engine")
	for j in $(seq 1 "$JOBS"); do decode "$b/bench/bench_engine" > "$W/$j" & done
	wait
	each=$(cat "$W"/* | paste -sd/)
	sum=$(cat "$W"/* | paste -sd+ | bc)
	echo "| $b | $alone | $each | $sum |"
done
