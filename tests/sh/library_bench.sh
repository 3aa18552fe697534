#!/usr/bin/env bash
# The library bench's inputs (bench/library/make_library.py, issue 29 item 5):
# questions.tsv is what the generator's rule makes; the library it writes
# holds 50 documents in the four formats kvsnap reads, the same bytes each
# time; its long text and Markdown documents are longer than SmolLM2's
# window (so stored in parts); an answerable question's subject is named in
# its document and in no other, an unanswerable one's in none (checked in
# the text, Markdown and HTML documents: a PDF's text is compressed).
set -u
. "$(dirname "$0")/lib.bash"
need "$K" "$MODEL" command:python3 command:groff
# groff-base alone has neither device (Debian's groff package brings them)
for dev in pdf html; do
	echo | groff -T$dev >/dev/null 2>&1 ||
		{ echo "# SKIP: needs groff -T$dev (apt-get install groff)"; echo "0 passed, 0 failed"; exit 0; }
done
# the long documents' sources are Debian packages' own files (make_library.py's LONG)
for src in /usr/share/doc/python3.11/NEWS.gz /usr/share/doc/gnupg/NEWS.gz /usr/share/doc/make/NEWS.gz; do
	[ -f "$src" ] || { echo "# SKIP: no $src on this machine"; echo "0 passed, 0 failed"; exit 0; }
done
scratch library-bench
python3 bench/library/make_library.py --check
ok "questions.tsv follows make_library.py's rule" $?
python3 bench/library/make_library.py --out "$T/a" 2>/dev/null
ok "the library is made" $?
python3 bench/library/make_library.py --out "$T/b" 2>/dev/null && diff -r "$T/a/docs" "$T/b/docs"
ok "the same bytes twice (the PDFs' dates fixed)" $?
n=$(find "$T/a/docs" -type f | wc -l)
[ "$n" -eq 50 ]; ok "50 documents ($n)" $?
for e in txt md html pdf; do
	n=$(find "$T/a/docs" -name "*.$e" | wc -l)
	[ "$n" -ge 10 ]; ok "$n .$e documents" $?
done
for f in "$T"/a/docs/01-*.txt "$T"/a/docs/02-*.md; do
	n=$("$K" tokenize -m "$MODEL" --json "$(cat "$f")" | python3 -c \
	    'import json,sys; print(json.loads(sys.stdin.readlines()[-1])["count"])')
	[ "$n" -gt 8192 ]; _s=$?; ok "${f##*/}: $n tokens, past the 8,192-token window" $_s
done
python3 - "$T/a/docs" <<'PY'
import os, re, sys
d = sys.argv[1]
texts = {f: open(os.path.join(d, f), encoding="utf-8", errors="replace").read()
         for f in os.listdir(d) if not f.endswith(".pdf")}
bad = []
for i, line in enumerate(open("bench/library/questions.tsv", encoding="utf-8")):
    p = line.rstrip("\n").split("\t")
    if i == 0:
        continue
    subj = re.findall(r"\b([A-Z][a-z]+)\b", p[4])[1]
    where = sorted(f for f, t in texts.items() if subj in t)
    want = [p[2]] if p[1] == "answer" and not p[2].endswith(".pdf") else []
    if where != want:
        bad.append("%s: in %s, expected %s" % (subj, where, want))
for b in bad:
    print("# " + b)
sys.exit(1 if bad else 0)
PY
ok "each question's subject is in its document only, or in none" $?
finish
