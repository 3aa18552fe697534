#!/usr/bin/env bash
# The main job end to end (make demo): start kvsnapd with its embedded
# defaults and a local state directory, precompress a real multi-thousand-
# token document through it, ask it questions, and print the answers beside
# the compression ratio and the time to first token from the snapshot vs a
# full re-prefill of document + question.  Then stop the daemon (SIGTERM).
#
#   usage: scripts/demo.sh [DOC]   (default: the first 16 KB of the GPL-3)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
K=$BUILD/kvsnap
STATE=${DEMO_STATE:-$BUILD/demo-state}
SOCK=$BUILD/demo.sock
SRC=${1:-/usr/share/common-licenses/GPL-3}
DOC=$BUILD/demo-doc.txt
head -c 16000 "$SRC" > "$DOC"
# a fresh store each run, so the demo shows the ingest (not "already stored")
rm -rf "$STATE" "$SOCK"
mkdir -p "$STATE"

echo "== kvsnapd: embedded defaults (snapkv, budget 1024, fp16), state in $STATE"
$BUILD/kvsnapd --foreground --socket "$SOCK" --state "$STATE" --log-level warn &
pid=$!
trap 'kill -TERM $pid 2>/dev/null || true' EXIT
for _ in $(seq 1 300); do [ -S "$SOCK" ] && break; sleep 0.1; done
[ -S "$SOCK" ] || { echo "demo: kvsnapd did not start" >&2; exit 1; }

echo "== ingest $SRC (first 16 KB) through the daemon"
$K ingest -s "$SOCK" --name gpl "$DOC"
info=$($K info --state "$STATE" --json gpl)
read -r tokens units bytes < <(python3 -c '
import json, sys
lines = [json.loads(l) for l in sys.stdin if l.strip()]
snap = [l for l in lines if "units" in l][0]
print(snap["tokens"], snap["units"], snap["stored_bytes"])' <<<"$info")
# SmolLM2-135M: 30 layers x 3 KV heads, 64-dim heads; fp16 K and V
full=$((tokens * 30 * 3))
echo "   $tokens tokens: kept $units of $full cache units ($(python3 -c "print(f'{$full/$units:.1f}')")x fewer);" \
	"snapshot $((bytes / 1024)) KiB vs $((full * 64 * 2 * 2 / 1024)) KiB of full fp16 KV"

for q in "What is this document, and who publishes it?" \
	"Does this license let me sell copies of the program?"; do
	echo
	echo "== Q: $q"
	printf "   A (from the snapshot): "
	$K query -s "$SOCK" -n 48 -v gpl "$q" 2> "$BUILD/demo-q.err"
	ttft=$(sed -n 's/.*time to first token \([0-9.]*\) s.*/\1/p' "$BUILD/demo-q.err")
	# the baseline: the whole document + question read again from scratch
	full_s=$($K generate -n 1 -v -p "$(cat "$DOC")

$q" 2>&1 >/dev/null | sed -n 's/.* generated in \([0-9.]*\) s.*/\1/p')
	echo "   time to first token: ${ttft} s from the snapshot vs ${full_s} s re-reading the document" \
		"($(python3 -c "print(f'{$full_s/$ttft:.0f}')")x faster)"
done

echo
echo "== store"
$K ls --state "$STATE"
$K verify --state "$STATE"
kill -TERM $pid
wait $pid
trap - EXIT
echo "== kvsnapd stopped cleanly (exit 0)"
