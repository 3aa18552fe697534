#!/usr/bin/env python3
"""Would ranking passages instead of whole parts find the long documents'
facts?  (issue 29: the library bench found BM25 over 2,000-token parts
ranks a long part below short documents that share the question's common
words.)  Reads a library's text index as kvsnap wrote it (the FTS5 table
`parts`, the `rows` table), asks every answerable question of
bench/library/questions.tsv with the same kind of MATCH as index/match.c
(any of the question's words, stop words dropped), and counts how often a
part holding the fact (its subject word and its answer) is among the 3
best: (a) the parts ranked by bm25 as kvsnap ranks them today; (b) the
parts ranked by their best passage, passages of W words (half overlapping)
in an in-memory FTS5 table of the same tokenizer.

  passages_recall.py INDEX.SQLITE [W ...]     (default W: 60 120 250)

Python's sqlite3 (FTS5).  A prototype to choose a design, not kvsnap's code.
"""
import csv
import os
import re
import sqlite3
import sys

STOP = set("a about an and are as at be by can could did do does for from had has have how i "
           "if in into is it its me my of on or our should so tell than that the their them "
           "then there these they this to was we were what when where which who whom whose why "
           "will with would you your".split())
QUESTIONS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "questions.tsv")


def match(q):
    return " OR ".join('"%s"' % w for w in re.findall(r"[A-Za-z0-9]+", q)
                       if w.lower() not in STOP)


def passages(rows, width):
    mem = sqlite3.connect(":memory:")
    mem.execute("create virtual table ps using fts5(body, tokenize='unicode61 remove_diacritics 2')")
    owner = {}
    for rid, (_, _, body) in rows.items():
        words = body.split()
        for i in range(0, max(1, len(words)), width // 2):
            cur = mem.execute("insert into ps(body) values (?)", (" ".join(words[i:i + width]),))
            owner[cur.lastrowid] = rid
            if i + width >= len(words):
                break
    return mem, owner


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    widths = [int(w) for w in sys.argv[2:]] or [60, 120, 250]
    db = sqlite3.connect(sys.argv[1])
    rows = {rid: (doc, part, body) for rid, doc, part, body in db.execute(
        "select r.id, r.doc, r.part, p.body from rows r join parts p on p.rowid = r.id")}
    qs = [q for q in csv.DictReader(open(QUESTIONS, encoding="utf-8"), delimiter="\t")
          if q["kind"] == "answer"]
    mems = {w: passages(rows, w) for w in widths}
    hits = {"parts": 0, **{w: 0 for w in widths}}
    print("| document | subject | parts (today) | " + " | ".join(f"passages of {w}" for w in widths) + " |")
    print("|---|---|---:|" + "---:|" * len(widths))
    for q in qs:
        caps = [w for w in re.findall(r"\b[A-Z][a-z]+\b", q["question"])
                if w not in ("How", "What", "Who", "Which", "Where", "When")]
        subj = max(caps, key=len, default="")
        exp = q["expected"].split("|")[0].lower()
        right = {rid for rid, (_, _, b) in rows.items() if subj in b and exp in b.lower()}
        m = match(q["question"])
        top = [r[0] for r in db.execute(
            "select rowid from parts where parts match ? order by bm25(parts) limit 3", (m,))]
        cells = [bool(right & set(top))]
        hits["parts"] += cells[0]
        for w in widths:
            mem, owner = mems[w]
            seen = []
            for (pid,) in mem.execute("select rowid from ps where ps match ? order by bm25(ps)", (m,)):
                if owner[pid] not in seen:
                    seen.append(owner[pid])
                if len(seen) == 3:
                    break
            hit = bool(right & set(seen))
            hits[w] += hit
            cells.append(hit)
        print(f"| {q['doc']} | {subj} | " + " | ".join("yes" if c else "no" for c in cells) + " |")
    n = len(qs)
    print(f"\nright part among the 3 best: parts {hits['parts']}/{n}; " +
          "; ".join(f"passages of {w} words {hits[w]}/{n}" for w in widths))
    return 0


if __name__ == "__main__":
    sys.exit(main())
