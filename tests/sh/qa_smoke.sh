#!/usr/bin/env bash
# The question-answering bench (bench/bench_qa.c) on the shortest document of
# bench/qa, three of its questions, full and snapkv at R = 0.5, with sanity
# checks rather than quality thresholds: bad input is refused with a reason;
# the run exits 0 and writes JSON with every row; how many questions the
# full cache answers is reported (a benchmark's number, not a check: a
# 135M model's greedy answer moves with the BLAS kernel); `full` run as a
# policy (questions in reverse order,
# each after a cut of the cache) replies exactly as the reference did (so a
# cut that leaves something behind fails); snapkv keeps about half the
# units and has a share in [0, 1].
set -u
. "$(dirname "$0")/lib.bash"
need "$MODEL"
BIN=$BUILD/bench/bench_qa
[ -x "$BIN" ] || { echo "not ok - $BIN is missing"; echo "0 passed, 1 failed"; exit 1; }
scratch qa-smoke
TMP=$T
check() { ok "$2" "$1"; } # status description
# refused: exits non-zero and the message holds the expected words
refused() { # description pattern args...
	local what=$1 pat=$2 out rc; shift 2
	out=$("$BIN" -m "$MODEL" "$@" 2>&1); rc=$?
	[ "$rc" -ne 0 ] && grep -q -- "$pat" <<<"$out"
	check $? "$what (exit $rc: $(head -n 1 <<<"$out"))"
}

# --- bad input ---
mkdir -p "$TMP/bad/docs"
echo "Some text." > "$TMP/bad/docs/a.txt"
printf 'doc\tkind\tdepth\tquestion\texpected\ndocs/a.txt\tfact\t0.5\tWhat?\n' > "$TMP/bad/questions.tsv"
refused "a TSV line with 4 fields" "questions.tsv:2: expected 5 tab-separated fields" --qa "$TMP/bad"
printf 'docs/a.txt\tnews\t0.5\tWhat?\tx\n' > "$TMP/bad/questions.tsv"
refused "an unknown kind" "questions.tsv:1: kind" --qa "$TMP/bad"
printf 'docs/a.txt\tfact\t1.5\tWhat?\tx\n' > "$TMP/bad/questions.tsv"
refused "a depth outside [0, 1]" "questions.tsv:1: depth" --qa "$TMP/bad"
printf 'docs/missing.txt\tfact\t0.5\tWhat?\tx\n' > "$TMP/bad/questions.tsv"
refused "a missing document" "missing.txt" --qa "$TMP/bad"
refused "a missing questions.tsv" "questions.tsv" --qa "$TMP/nowhere"
refused "a bad ratio" "usage" --ratios 0,2

# --- one short document ---
QA=bench/qa
DOC=01-txtvsbin Q=3,4,5 MAXNEW=24
if is_san "$BIN"; then
	# sanitizer builds run ~10x slower: the document up to its second fact
	# (~450 tokens) and that fact's question
	QA=$TMP/san
	mkdir -p "$QA/docs"
	python3 - "$QA" <<'PY'
import sys
out = sys.argv[1]
text = open("bench/qa/docs/01-txtvsbin.txt").read()
rows = [l.split("\t") for l in open("bench/qa/questions.tsv").read().splitlines()[1:]]
rows = [r for r in rows if r[0] == "docs/01-txtvsbin.txt"]
fact = "This copy was archived on "  # the second fact of the document
at = text.index(fact)
end = text.index("\n\n", at + len(fact))
open(out + "/docs/01-txtvsbin.txt", "w").write(text[:end] + "\n")
q = next(r for r in rows if r[3].startswith("On what date"))
open(out + "/questions.tsv", "w").write("\t".join(q) + "\n")
PY
	Q=1 MAXNEW=16
fi
t0=$SECONDS
timeout 600 "$BIN" -m "$MODEL" --qa "$QA" --doc "$DOC" --questions "$Q" --policies full,snapkv \
	--ratios 0.5 --max-new "$MAXNEW" --json "$TMP/qa.json" > "$TMP/qa.txt" 2> "$TMP/qa.err"
rc=$?
cat "$TMP/qa.txt"
[ "$rc" -eq 0 ] || tail -n 5 "$TMP/qa.err"
check $rc "bench_qa exits 0 ($((SECONDS - t0)) s)"
python3 - "$TMP/qa.json" "$pass" "$fail" <<'PY'
import json, sys
ok, fail = int(sys.argv[2]), int(sys.argv[3])
def check(cond, what):
    global ok, fail
    print(("ok - " if cond else "not ok - ") + what)
    ok, fail = ok + bool(cond), fail + (not cond)
try:
    d = json.load(open(sys.argv[1]))
except (OSError, ValueError) as e:
    d = None
    check(False, f"the JSON parses ({e})")
if d is not None:
    check(d.get("complete") is True and len(d["docs"]) == 1 and d["docs"][0]["tokens"] > 0,
          f"the JSON parses and is complete: {d['docs']}")
    qs = d["questions"]
    n_ok = sum(1 for q in qs if q.get("full_ok"))
    for q in qs:
        print(f"# full cache: {q['question']} -> {q.get('full_reply')!r} "
              f"({'right' if q.get('full_ok') else 'wrong'}, want {q['expected']})")
    # Not asserted (it was "at least one"): whether SmolLM2-135M's greedy
    # reply contains the expected string is a near-tie that can move with
    # the BLAS kernel (issue 25), so it is the bench's number (bench/qa.sh).
    # The checks below hold on any kernel: they compare replies computed in
    # this run, on this kernel.
    print(f"# metric: qa smoke full cache answers {n_ok}/{len(qs)} of the questions")
    rows = {(r["spec"], r["ratio"]): r for r in d["rows"]}
    full, snap = rows.get(("full", 1)), rows.get(("snapkv", 0.5))
    check(full is not None and snap is not None and len(d["rows"]) == 2,
          f"rows full at R=1 and snapkv at R=0.5: {sorted(rows)}")
    if full:
        same = all(x["reply"] == q.get("full_reply") for x, q in zip(full["replies"], qs))
        # any kernel: both replies are computed in this run on this kernel
        check(len(full["replies"]) == len(qs) and same,
              "full as a policy (reverse order, cut after each) replies exactly as the reference")
        check(full["all"]["rougeL"] == 1.0 and full["all"]["raw_answered"] == n_ok and
              full["all"]["answered"] == n_ok,
              f"full row: ROUGE-L {full['all']['rougeL']}, answered {full['all']['raw_answered']}"
              f" (reference {n_ok})")
    if snap:
        a = snap["all"]
        share = a.get("share")
        check(share is not None and 0 <= share <= 1 and len(snap["replies"]) == len(qs) and
              0 <= a["rougeL"] <= 1, f"snapkv R=0.5: share {share}, ROUGE-L {a['rougeL']}")
        check(0.45 <= snap["kept_share"] <= 0.55,
              f"snapkv R=0.5 keeps {snap['kept_share']:.3f} of the units")
        print(f"# metric: qa smoke snapkv R=0.5: answered {a['answered']}/{a['full_answered']} "
              f"ROUGE-L {a['rougeL']:.3f}")
print(f"{ok} passed, {fail} failed")
sys.exit(1 if fail else 0)
PY
