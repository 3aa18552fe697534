#!/usr/bin/env bash
# The main job end to end (make demo): start kvsnapd with its embedded
# defaults and a local state directory, precompress a real multi-thousand-
# token document through it, ask it questions, and print each answer from
# the snapshot beside the answer from a full re-read of document + question,
# with the compression and both times to the first token.  Then stop the
# daemon (SIGTERM).
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

echo "== kvsnapd: embedded defaults (kvzip, a quarter of the cache, fp16), state in $STATE"
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

# each question: the answer from the snapshot next to the answer from a full
# re-read of document + question (kvsnap ask --policy full: the same prompt,
# nothing evicted), with both times to the first token; MUST lists strings
# a right answer contains
right=0
ask() { # question, then the strings a right answer contains
	local q=$1; shift
	echo
	echo "== Q: $q"
	$K query -s "$SOCK" -n 48 -v gpl "$q" > "$BUILD/demo-a.txt" 2> "$BUILD/demo-q.err"
	ttft=$(sed -n 's/.*time to first token \([0-9.]*\) s.*/\1/p' "$BUILD/demo-q.err")
	$K ask --policy full -n 48 -v "$DOC" "$q" > "$BUILD/demo-full.txt" 2> "$BUILD/demo-full.err"
	read -r ingest_s full_ttft < <(sed -n 's/.*ingest \([0-9.]*\) s.*/\1/p; s/.*time to first token \([0-9.]*\) s.*/\1/p' \
		"$BUILD/demo-full.err" | paste -sd' ')
	full_s=$(python3 -c "print(f'{$ingest_s + $full_ttft:.2f}')")
	echo "   from the snapshot ($(python3 -c "print(f'{$full/$units:.1f}')")x smaller), first token after ${ttft} s:"
	fold -s -w 76 "$BUILD/demo-a.txt" | sed 's/^/     | /'
	echo "   from a full re-read of the document, first token after ${full_s} s:"
	fold -s -w 76 "$BUILD/demo-full.txt" | sed 's/^/     | /'
	local ok=1 m
	for m in "$@"; do grep -qi -- "$m" "$BUILD/demo-a.txt" || ok=0; done
	if [ $ok = 1 ]; then
		right=$((right + 1)); echo "   the snapshot's answer is right (names: $*)"
	else
		echo "   the snapshot's answer misses: $*"
	fi
}
ask "What is this document, and who publishes it?" "General Public License" "Free Software Foundation"
ask "Does this license let me sell copies of the program?" "sell"
echo
echo "== $right of 2 questions answered right from the snapshot"


# formats (issue 16): a PDF and an HTML page, read by content; a binary refused
echo
echo "== a PDF and an HTML page (tests/fixtures/docs/, scripts/make-doc-fixtures.py)"
for f in ship.pdf ship.html; do
	$K ingest -s "$SOCK" --name "${f%.*}-${f#*.}" "tests/fixtures/docs/$f"
done
for d in ship-pdf ship-html; do
	echo "   $d: $($K info --state "$STATE" "$d" | sed -n 's/^ *format  *//p'); Q: What is the name of the ship?"
	$K query -s "$SOCK" -n 24 "$d" "What is the name of the ship?" | fold -s -w 76 | sed 's/^/     | /'
done
echo "== head -c 3000 /bin/ls | kvsnap ingest -   (refused before any model work)"
rc=0; head -c 3000 /bin/ls | $K ingest -s "$SOCK" --name ls - || rc=$?
echo "   exit $rc"

echo
echo "== store"
$K ls --state "$STATE"
$K verify --state "$STATE"
kill -TERM $pid
wait $pid
trap - EXIT
echo "== kvsnapd stopped cleanly (exit 0)"
