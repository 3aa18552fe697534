#!/usr/bin/env bash
# The library bench (issue 29, item 5): 50 documents of four formats (3 of
# them longer than the model's window, stored in parts), questions that name
# no document (25 with the answer in exactly one, 12 with it in none), each
# asked of the whole library (`kvsnap query --all`, in-process: --local),
# of the same retrieved parts as text (the baseline) and of the right
# document's whole text (the oracle); bench/library/bench.py says exactly how.
#
#   usage: bench/library.sh [--model GGUF] [--state DIR] [--out FILE] [-- BENCH_OPTIONS]
#
# Makes the documents (bench/library/make_library.py: Debian 12's texts and
# bench/qa's, groff for HTML and PDF) under build/bench-library/docs,
# ingests them once into --state (default build/bench-library/state; reused
# by later runs, which skip what is stored by name), writes one JSON line per
# question and pass under build/bench-library/passes/, merged into --out
# FILE (default bench/results/library-bench.jsonl), then the table
# (bench/library/bench_table.py) with the command and the machine to
# FILE's .txt.  Ingest is the heavy step (~45K tokens).
# Options after -- go to bench.py (-n, --limit, --ways, --part-tokens).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
MODEL=models/SmolLM2-135M-Instruct.Q4_1.gguf
STATE=build/bench-library/state
OUT=bench/results/library-bench.jsonl
ARGS=()
while [ $# -gt 0 ]; do
	case $1 in
	--model) MODEL=$2; shift ;;
	--state) STATE=$2; shift ;;
	--out) OUT=$2; shift ;;
	--) shift; ARGS+=("$@"); break ;;
	*) echo "usage: bench/library.sh [--model GGUF] [--state DIR] [--out FILE] [-- OPTIONS]" >&2
	   exit 2 ;;
	esac
	shift
done
[ -x "$BUILD/kvsnap" ] || { echo "bench/library.sh: build first (make)" >&2; exit 1; }
{ echo | groff -Tpdf && echo | groff -Thtml; } >/dev/null 2>&1 ||
	{ echo "bench/library.sh: needs groff's PDF and HTML devices (apt-get install groff)" >&2; exit 1; }
python3 bench/library/make_library.py --check ||
	{ echo "bench/library.sh: questions.tsv differs from make_library.py's rule" >&2; exit 1; }
python3 bench/library/make_library.py --out build/bench-library
# three passes side by side: the oracle as documents come in, the library
# (after ingesting in 3 processes), the text baseline on the library's parts
B=(python3 bench/library/bench.py --build "$BUILD" --model "$MODEL" --state "$STATE"
   --docs build/bench-library/docs "${ARGS[@]}")
P=build/bench-library/passes # each pass's lines and log, merged into OUT at the end
rm -rf "$P" && mkdir -p "$P"
"${B[@]}" --wait --ways oracle --out $P/oracle.jsonl 2>$P/oracle.log &
ORACLE=$!
"${B[@]}" --jobs 3 --ways library --out $P/library.jsonl &
LIB=$!
sleep 5
TEXT=()
for i in 0 1 2; do # the text baseline's full prefills are the slowest: 3 processes
	"${B[@]}" --wait --ways text --lib-from $P/library.jsonl --shard $i/3 \
		--out $P/text$i.jsonl 2>$P/text$i.log &
	TEXT+=($!)
done
wait $LIB $ORACLE "${TEXT[@]}"
python3 bench/library/bench_table.py --merge "$OUT" $P/*.jsonl
{
	echo "command: bench/library.sh --model $MODEL ${ARGS[*]}"
	echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-), load $(cut -d' ' -f1-3 /proc/loadavg)"
	python3 bench/library/bench_table.py "$OUT"
} | tee "${OUT%.jsonl}.txt"
