#!/usr/bin/env bash
# Answers from compressed caches (bench/bench_qa.c): every document of
# bench/qa read into a full cache and into each policy's cache at R = 1/2,
# 1/4, 1/8, 1/16 of its units, every question asked on each and scored
# (answered; ROUGE-L against the full cache's reply).
#
#   usage: bench/qa.sh [--out DIR] [--png FILE] [-- BENCH_QA_OPTIONS]
#
# Writes DIR/qa.json (every reply and the summary; default DIR bench/results),
# DIR/qa.txt (the table, with the command and the machine) and the plot
# (default bench/qa.png; needs python3-matplotlib).  The whole grid (13
# documents, 97 questions, the reference + full + 4 policies x 4 ratios)
# takes about an hour on an idle two-core machine (the 1.2K-token document
# ~80 s, the 7.3K-token one ~10 min): run it in the background and follow
# DIR/qa.log; the JSON is rewritten after every document, so a stopped run
# still has its results.
# Options after -- go to bench_qa (--docs N, --doc NAME, --policies,
# --ratios, --max-new, -t ...).  MODEL=GGUF picks another model (default SmolLM2).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
MODEL=${MODEL:-models/SmolLM2-135M-Instruct.Q4_1.gguf}
OUT=bench/results PNG=bench/qa.png
ARGS=()
while [ $# -gt 0 ]; do
	case $1 in
	--out) OUT=$2; shift ;;
	--png) PNG=$2; shift ;;
	--) shift; ARGS+=("$@"); break ;;
	*) ARGS+=("$1") ;;
	esac
	shift
done
make --no-print-directory all >&2
[ -f "$MODEL" ] || make --no-print-directory model >&2
mkdir -p "$OUT"
BIN=$BUILD/bench/bench_qa
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
rev=$(git describe --always --dirty 2>/dev/null || echo unknown)
{
	echo "# bench/qa.sh${ARGS[*]:+ ${ARGS[*]}}"
	echo "# engine $rev; machine: ${cpu:-?}, $(nproc) cores; $(date -u +%FT%TZ)"
} > "$OUT/qa.txt"
# progress to the log and, on a terminal, to the screen
"$BIN" -m "$MODEL" --json "$OUT/qa.json" "${ARGS[@]}" 2> >(tee "$OUT/qa.log" >&2) |
	tee -a "$OUT/qa.txt"
if /usr/bin/python3 -c "import matplotlib" 2>/dev/null; then
	/usr/bin/python3 bench/plot_qa.py "$OUT/qa.json" "$PNG" && echo "qa: plot in $PNG" >&2
else
	echo "qa: no plot (apt-get install python3-matplotlib)" >&2
fi
