#!/usr/bin/env python3
"""The library bench (issue 29, item 5): bench/library/questions.tsv asked of
the library make_library.py writes, three ways, one JSON line per answer.

  bench.py [--build DIR] [--model GGUF] [--state DIR] [--docs DIR] [--jobs N]
           [--part-tokens N] [-n N] [--limit K] [--ways W,...] [--out FILE]
           [--wait] [--lib-from FILE] [--shard I/N]

1. ingest: `kvsnap ingest --local --part-tokens N FILES...` into --state (the
   default profile: kvzip 1/2, chunk 512, q8 since issue 28; the runs in
   bench/RESULTS.md before it were kvzip 1/4 fp16) in --jobs processes over
   disjoint sets of the files; a file whose name a whole document in a
   reused state has is not ingested again (ingest --local would).  --wait: no ingest, wait for each document
   another run is ingesting (the oracle pass can run beside the ingest).
2. per question:
   library  `kvsnap query --local --all --json --min-conf -1000 -n N Q`: the
            parts the text index ranks best (--top 3), answered from their
            snapshots (the default mode, pick); the confidence is recorded
            and the default threshold (-0.4) applied by bench_table.py to
            the judged first tokens' mean (judged_confidence; lines of
            before it: the whole answer's), so one run gives the answers
            with and without abstention; an abstention the grounding check
            made (no part holds the question's rare names: no model ran)
            is recorded as abstained whatever the threshold;
   text     the text baseline: the same consulted parts' text, read from the
            same FTS index (index.sqlite's passages, put together, in the order
            query lists them), joined by blank lines, then the question, as
            kvsnap's own prompt lays a document and a question out
            ([user: TEXT "\\n\\n" QUESTION]), prefilled in full by
            `kvsnap generate --json -n N -p ...` (every token attended: what
            --policy full keeps);
   oracle   (answerable questions) the text of the right document's part that
            holds the fact (a document of at most --part-tokens tokens is
            one part: the whole document) the same way: what the right
            snapshot's full cache answers.
   With --lib-from FILE a text pass takes the consulted parts from a library
   pass's lines (the two run side by side).
   generate reports no time to first token: it is taken here as the first
   token event's arrival after the process started, less the model load the
   result reports (so it holds tokenization and the whole prefill).

Times are wall-clock on whatever machine runs it: say how busy it was.
"""
import argparse
import json
import os
import re
import sqlite3
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))


def load_questions():
    out = []
    with open(os.path.join(HERE, "questions.tsv"), encoding="utf-8") as f:
        for i, line in enumerate(f):
            p = line.rstrip("\n").split("\t")
            if i and len(p) == 6:
                out.append(dict(split=p[0], kind=p[1], doc=p[2], depth=float(p[3]),
                                question=p[4], expected=p[5]))
    return out


def subject(q):
    """The question's coined subject: its one capitalised word after the first
    (make_library.py's templates; "Mount" is never in a question)."""
    w = re.findall(r"\b([A-Z][a-z]+)\b", q)[1:]
    return w[0] if w else None


def run_json(cmd):
    """Run a --json command; its token text, result event, rc, stderr and the
    seconds from start to the first token event."""
    t0 = time.time()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    text, res, t_first = "", None, None
    for line in p.stdout:
        try:
            ev = json.loads(line)
        except ValueError:
            continue
        if ev.get("event") == "token":
            if t_first is None:
                t_first = time.time() - t0
            text += ev.get("text", "")
        elif ev.get("event") == "result":
            res = ev
    err = p.stderr.read()
    p.wait()
    return text, res, p.returncode, err[-400:], t_first, time.time() - t0


def part_texts(kv, state, doc_id):
    """{part: text} of a document, from the FTS index (`kvsnap search --local`
    brings the index in step with the store first: ingest --local leaves it)."""
    path = os.path.join(state, "index.sqlite")
    for _ in range(2):
        if os.path.exists(path):
            db = sqlite3.connect("file:%s?mode=ro" % path, uri=True)
            rows = part_rows(db, doc_id)
            db.close()
            if rows:
                return rows
        subprocess.run([kv, "search", "--local", "--state", state, "-k", "1", "sync"],
                       capture_output=True)
    return {}


WORD = re.compile(rb"[^ \t\n\v\f\r]+")
STEP = 60  # index/index.h: IDX_PASSAGE_STEP


def part_rows(db, doc_id):
    """{part: text} from the index's passages (schema 2, index/index.h): a
    part's passage j is its text from word j*60 to word j*60+120, so the
    text is every passage's first 60 words (up to the next passage, white
    space included) and the last passage whole."""
    rows = db.execute("SELECT r.part, p.rowid, p.body FROM rows r JOIN passages p ON "
                      "p.rowid >= r.id << 20 AND p.rowid < (r.id + 1) << 20 WHERE r.doc = ? "
                      "ORDER BY r.part, p.rowid", (bytes.fromhex(doc_id),)).fetchall()
    out = {}
    for part in sorted({int(r[0]) for r in rows}):
        ps = [b.encode() for a, _, b in rows if int(a) == part]
        text = b""
        for b in ps[:-1]:
            text += b[:[m.start() for m in WORD.finditer(b)][STEP]]
        out[part] = (text + ps[-1]).decode()
    return out


def wait_lib(path, question):
    """The library's answer to question from another run's --out (a text pass
    beside a library pass: the same consulted parts), once it is written."""
    while True:
        if os.path.exists(path):
            with open(path, encoding="utf-8") as f:
                for line in f:
                    try:
                        r = json.loads(line)
                    except ValueError:
                        continue  # being written
                    if r["question"] == question and "library" in r:
                        return r["library"]
        time.sleep(10)


def stored(kv, state):
    """{doc_id: file name} of the stored documents (ingest of a directory
    names them by their file's name)."""
    ls = subprocess.run([kv, "ls", "--state", state, "--json"], capture_output=True, text=True)
    docs = []
    for line in ls.stdout.splitlines():
        ev = json.loads(line)
        if ev.get("event") == "result":
            docs = ev.get("docs", [])
    # a document in parts is whole once every part is stored
    return {d["doc_id"]: os.path.basename(d.get("name") or d.get("source") or "") for d in docs
            if d.get("snapshots", 0) >= d.get("parts", 1)}


def generate(kv, model, text, q, n):
    cmd = [kv, "generate", "-m", model, "--json", "-n", str(n), "-p", text + "\n\n" + q]
    ans, res, rc, err, t_first, wall = run_json(cmd)
    ttft = None
    if res and t_first is not None:
        ttft = t_first - res.get("load_s", 0.0)
    return dict(answer=ans, rc=rc, stderr=err, ttft_s=ttft, wall=wall,
                prompt_tokens=res and res.get("prompt_tokens"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.environ.get("BUILD", "build"))
    ap.add_argument("--model", default="models/SmolLM2-135M-Instruct.Q4_1.gguf")
    ap.add_argument("--state", default="build/bench-library/state")
    ap.add_argument("--docs", default="build/bench-library/docs")
    ap.add_argument("--part-tokens", type=int, default=2000)
    ap.add_argument("--jobs", type=int, default=1, help="ingest processes")
    ap.add_argument("--only-docs", default=None, help="REGEX: the questions about these documents")
    ap.add_argument("--shard", default=None, help="I/N: only every N-th question from the I-th")
    ap.add_argument("-n", type=int, default=32)
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--ways", default="library,text,oracle")
    ap.add_argument("--lib-from", default=None,
                    help="text pass: the consulted parts from this library run's --out")
    ap.add_argument("--wait", action="store_true",
                    help="no ingest: wait for each document another run is ingesting")
    ap.add_argument("--out", default="bench/results/library-bench.jsonl")
    a = ap.parse_args()
    os.chdir(ROOT)
    kv = os.path.join(a.build, "kvsnap")
    ways = a.ways.split(",")
    t0 = time.time()
    if not a.wait:
        # --jobs processes over disjoint sets of files (LMDB serializes their
        # writes): the machine's other users' load is shared per process group
        # `ingest --local` ingests again what is stored (only kvsnapd skips):
        # a file whose name a whole stored document has is left out
        have = set(stored(kv, a.state).values())
        files = sorted(os.path.join(a.docs, f) for f in os.listdir(a.docs) if f not in have)
        cmd = [kv, "ingest", "--local", "--state", a.state, "-m", a.model, "--part-tokens",
               str(a.part_tokens)]
        procs = [subprocess.Popen(cmd + files[j::a.jobs], start_new_session=True)
                 for j in range(min(a.jobs, len(files)))]
        rcs = [p.wait() for p in procs]
        if any(rcs):
            sys.exit("ingest failed (exit %s)" % rcs)
        print("ingest: %.0f s" % (time.time() - t0), file=sys.stderr)
    names = stored(kv, a.state)
    by_name = {v: k for k, v in names.items()}
    qs = load_questions()
    if a.limit:
        qs = qs[:a.limit]
    if a.only_docs:  # the questions whose answer is in these documents
        qs = [q for q in qs if re.search(a.only_docs, q["doc"])]
    if a.shard:  # i/n: every n-th question from the i-th (passes split over processes)
        i, n = (int(x) for x in a.shard.split("/"))
        qs = qs[i::n]
    os.makedirs(os.path.dirname(a.out) or ".", exist_ok=True)
    with open(a.out, "w", encoding="utf-8") as out:
        for k, q in enumerate(qs):
            rec = dict(q)
            lib = None
            if "library" in ways or ("text" in ways and not a.lib_from):
                cmd = [kv, "query", "--local", "--state", a.state, "-m", a.model, "--json",
                       "--all", "--min-conf", "-1000", "-n", str(a.n), q["question"]]
                ans, res, rc, err, _, wall = run_json(cmd)
                srcs = [dict(doc=names.get(s["doc_id"], s["doc_id"]), doc_id=s["doc_id"],
                             part=s.get("part"), parts=s.get("parts"),
                             consulted=s.get("consulted")) for s in (res or {}).get("sources", [])]
                lib = dict(answer=ans, rc=rc, stderr=err, wall=wall, sources=srcs,
                           answered_from=names.get((res or {}).get("answered_from")),
                           answered_part=(res or {}).get("answered_part"),
                           confidence=(res or {}).get("confidence"),
                           judged_confidence=(res or {}).get("judged_confidence"),
                           judged_tokens=(res or {}).get("judged_tokens"),
                           abstained=(res or {}).get("abstained"),
                           ttft_s=(res or {}).get("ttft_s"),
                           ttft_model_s=(res or {}).get("ttft_model_s"),
                           seconds=(res or {}).get("seconds"))
                rec["library"] = lib
            if "text" in ways and not lib and a.lib_from:
                lib = wait_lib(a.lib_from, q["question"])
            if "text" in ways and lib:
                texts = []
                for s in lib["sources"]:
                    if s["consulted"]:
                        t = part_texts(kv, a.state, s["doc_id"]).get(s["part"] or 0)
                        if t:
                            texts.append(t)
                rec["text"] = generate(kv, a.model, "\n\n".join(texts), q["question"], a.n) \
                    if texts else dict(answer="", rc=-1, ttft_s=None, stderr="no part")
                rec["text"]["n_parts"] = len(texts)
            if "oracle" in ways and q["kind"] == "answer":
                while a.wait and q["doc"] not in by_name:  # ingest still running
                    time.sleep(20)
                    names = stored(kv, a.state)
                    by_name = {v: k for k, v in names.items()}
                pt = part_texts(kv, a.state, by_name.get(q["doc"], "00"))
                s = subject(q["question"])
                part = next((p for p in sorted(pt) if s and s in pt[p]), None)
                rec["oracle"] = generate(kv, a.model, pt[part], q["question"], a.n) \
                    if part is not None else dict(answer="", rc=-1, ttft_s=None, stderr="no text")
                rec["oracle"]["part"] = part
                rec["oracle"]["parts"] = len(pt)
            out.write(json.dumps(rec) + "\n")
            out.flush()
            print("%d/%d %s %s lib=%r text=%r oracle=%r" % (
                k + 1, len(qs), q["kind"], q["expected"][:20],
                (lib or {}).get("answer", "")[:50], rec.get("text", {}).get("answer", "")[:50],
                rec.get("oracle", {}).get("answer", "")[:50]), file=sys.stderr)


if __name__ == "__main__":
    main()
