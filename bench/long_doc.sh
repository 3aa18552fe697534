#!/usr/bin/env bash
# One long real document read once and answered (issue 27 item 8): the
# first BYTES of bash's manual as groff renders it on this machine (about
# 30,000 tokens of Qwen2.5 at the default 142,000 bytes) ingested with the
# default profile (kvzip 1/2 q6h) into a fresh store, its peak RSS and time,
# then questions whose answers stand at depths 3 % to 93 % of the text,
# each answered from the snapshot and checked for its expected words.
# Each question is also put to the model with no document (closed-book), a
# control: a manual this well known is partly in the model's own memory.
# POLICY=full QUANT=fp16 makes the snapshot the whole cache (the re-read's
# answers: the other control, of what compression loses).
#
#   usage: MODEL=GGUF [POLICY=NAME] [QUANT=FORM] bench/long_doc.sh [BYTES]
#
# Prints a markdown table; keeps the text, the answers and /usr/bin/time's
# reports in $BUILD/long_doc/.  Nothing is tuned on these questions (no
# parameter is chosen from them): they are held out by construction.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
MODEL=${MODEL:-models/Qwen2.5-Coder-1.5B-Instruct.Q4_K_M.gguf}
BYTES=${1:-142000}
POLICY=${POLICY:-kvzip} QUANT=${QUANT:-q6h} # the default profile's (kvzip 1/2 q6h)
PROFILE=(--policy "$POLICY" --quant "$QUANT")
OUT=$BUILD/long_doc
[ "$POLICY/$QUANT" = kvzip/q6h ] || OUT=$BUILD/long_doc-$POLICY-$QUANT
KV=$BUILD/kvsnap
[ -x "$KV" ] || make --no-print-directory all
command -v groff >/dev/null || { echo "long_doc.sh: needs groff (apt-get install groff-base)" >&2; exit 1; }
[ -r /usr/share/man/man1/bash.1.gz ] || { echo "long_doc.sh: needs bash's manual page" >&2; exit 1; }
rm -rf "$OUT"
mkdir -p "$OUT"

# The text: no hyphenation, 100 columns, runs of blanks squeezed (justified
# lines' padding would only cost tokens).
zcat /usr/share/man/man1/bash.1.gz | groff -t -man -Tascii -rHY=0 -rLL=100n 2>/dev/null |
	col -bx | tr -s ' ' | cat -s >"$OUT/bash-manual-all.txt"
head -c "$BYTES" "$OUT/bash-manual-all.txt" >"$OUT/bash-manual.txt"

# question | what a right answer contains (case-insensitive) | where the
# text says it (its depth is printed)
cat >"$OUT/questions.txt" <<'EOF'
When bash is invoked as an interactive login shell, which file does it read and execute first?|/etc/profile|/etc/profile
Which shopt option decides whether an interactive shell treats a word beginning with # as a comment?|interactive_comments|interactive_comments option
What is the default value of the HISTFILE variable?|bash_history|default value is ~/.bash_history
To what value does the shell set HISTSIZE by default after reading any startup files?|500|default value to 500
The command substitution $(cat file) can be replaced by what equivalent but faster form?|< file|$(< file)
In a bash arithmetic constant written as [base#]n, which base is used when base# is omitted?|10|base 10 is used
In a conditional expression, what does the primary -b file test?|block special|block special file
EOF

ts=$OUT/time-ingest.txt
/usr/bin/time -v "$KV" ingest --local --state "$OUT/state" -m "$MODEL" "${PROFILE[@]}" --name manual --json \
	"$OUT/bash-manual.txt" >"$OUT/ingest.json" 2>"$ts"
tokens=$(python3 -c 'import json,sys
for l in open(sys.argv[1]):
    o=json.loads(l)
    if "tokens" in o: print(o["tokens"]); break' "$OUT/ingest.json")
rss=$(awk -F': ' '/Maximum resident/ {printf "%.0f", $2/1024}' "$ts")
wall=$(awk -F': ' '/Elapsed \(wall/ {print $2}' "$ts")
echo "model: $MODEL"
echo "document: bash's manual, first $BYTES bytes, $tokens tokens; ingest ($POLICY$([ "$POLICY" = full ] || echo ' 1/2') $QUANT) $wall wall, peak RSS $rss MiB"
echo
echo "| # | depth | question | expected | from the snapshot | closed-book | query peak RSS MiB |"
echo "|---:|---:|---|---|---|---|---:|"
i=0 right=0 closed=0
while IFS='|' read -r q want anchor; do
	i=$((i + 1))
	at=$(python3 -c 'import sys
t=open(sys.argv[1],encoding="utf-8").read(); p=t.find(sys.argv[2])
print("%d %%" % round(100*p/len(t)) if p >= 0 else "not in the text")' "$OUT/bash-manual.txt" "$anchor")
	/usr/bin/time -v "$KV" query --local --state "$OUT/state" -m "$MODEL" "${PROFILE[@]}" -n 48 manual "$q" \
		>"$OUT/answer-$i.txt" 2>"$OUT/time-query-$i.txt" || true
	"$KV" generate -m "$MODEL" -n 48 -p "$q" >"$OUT/closed-$i.txt" 2>/dev/null || true
	qrss=$(awk -F': ' '/Maximum resident/ {printf "%.0f", $2/1024}' "$OUT/time-query-$i.txt")
	ok() { grep -qiF -- "$want" "$1" && echo yes || echo no; }
	a=$(ok "$OUT/answer-$i.txt") c=$(ok "$OUT/closed-$i.txt")
	[ "$a" = yes ] && right=$((right + 1))
	[ "$c" = yes ] && closed=$((closed + 1))
	echo "| $i | $at | $q | \`$want\` | $a | $c | $qrss |"
done <"$OUT/questions.txt"
echo
echo "answered from the snapshot: $right of $i; closed-book: $closed of $i"
