#!/usr/bin/env bash
# What kvsnap prints (issue 16, items 5-6), real model, real store, real
# daemon: a fresh machine's ls (an empty list, nothing created); ingest's
# last words ("N tokens -> X MiB snapshot (Y % kept, Z x smaller than the
# full cache)", figures checked against the model's shape); ls for people
# (names or base names, human sizes, relative times, aligned columns);
# info, rm, prune, verify naming documents; -v after the answer's newline;
# the one snapshot rule and its advice (daemon and --local alike, the
# advised commands run and work); and every command's --json lines checked
# against the schema in docs/JSON.md (read from it), errors included.
set -u
. "$(dirname "$0")/lib.bash"
daemon_scratch cli-output
words=300
is_san "$K" && words=100
prose GPL-3 $words > "$T/gpl.txt"
prose Apache-2.0 $words > "$T/apache.txt"
prose Artistic $words > "$T/artistic.txt"
prose BSD $words > "$T/bsd.txt"
P=(--budget 64 --chunk 128)
L=(--local "${P[@]}" -t 2)
J=$T/all.jsonl # every --json line, "COMMAND<TAB>LINE", for the schema check
: > "$J"
# jrun CMD...: run kvsnap CMD... --json, its stdout in $T/out (and into $J)
jrun() {
	local rc
	"$K" "$@" --json > "$T/out" 2> "$T/err"
	rc=$?
	sed "s/^/$1\t/" "$T/out" >> "$J"
	return $rc
}

# ---- a fresh machine: no store yet
expect_rc "ls on a fresh machine" 0 "$K" ls
grep -qx "no documents yet: kvsnap ingest FILE" "$T/out"; ok "... says there are no documents yet" $?
[ ! -e "$KVSNAP_STATE" ]; ok "... and creates nothing" $?
jrun ls; ok "ls --json on a fresh machine (exit $?)" $?
[ "$(cat "$T/out")" = '{"event":"result","docs":[]}' ]; ok "... is an empty result" $?
expect_rc "stats on a fresh machine" 0 "$K" stats
grep -q "^0 documents, 0 snapshots" "$T/out" && [ ! -e "$KVSNAP_STATE" ]
ok "... zero, nothing created" $?

# ---- ingest --local: its last words, and the figures behind them
expect_rc "ingest --local a named document" 0 "$K" ingest "${L[@]}" --name apache "$T/apache.txt"
t_apache=$SECONDS # its stamp: the relative times below count from here
re='^.*apache\.txt \([0-9a-f]{12}\), [0-9.]+ s: [^,]+, [0-9]+ tokens -> [0-9.]+ (KiB|MiB) snapshot \([0-9.]+ % kept, [0-9.]+x smaller than the full cache\)$'
grep -Eq "$re" "$T/out"; _s=$?; ok "ingest ends with tokens -> size snapshot (kept, smaller): $(cat "$T/out")" $_s
jrun ingest "${L[@]}" "$T/gpl.txt"; ok "ingest --local --json (exit $?)" $?
# the figures: SmolLM2-135M has 30 layers, 3 KV heads of 64 dims
python3 - "$T/out" <<'PY'; ok "full cache = tokens x 30 layers x 3 KV heads (x 64 dims x 2 x 2 bytes)" $?
import json, sys
r = json.loads(open(sys.argv[1]).readline())
assert r["full_units"] == r["tokens"] * 30 * 3, r
assert r["full_bytes"] == r["full_units"] * 64 * 2 * 2, r
assert 0 < r["units"] < r["full_units"] and 0 < r["snapshot_bytes"] < r["full_bytes"], r
PY
GPL=$(python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).readline())["doc_id"])' "$T/out")
# the human line of the same ingest says the same figures
expect_rc "ingest --local it again (replaces its snapshot)" 0 "$K" ingest "${L[@]}" "$T/gpl.txt"
python3 - "$T/out" "$J" <<'PY'; ok "the line's kept share and ratio are units/full_units and full/stored bytes" $?
import json, re, sys
line = open(sys.argv[1]).read()
r = [json.loads(l.split("\t", 1)[1]) for l in open(sys.argv[2]) if l.startswith("ingest\t")][-1]
m = re.search(r"(\d+) tokens -> .* snapshot \(([\d.]+) % kept, ([\d.]+)x smaller", line)
assert int(m.group(1)) == r["tokens"], line
assert abs(float(m.group(2)) - 100 * r["units"] / r["full_units"]) < 0.51, (line, r)
assert abs(float(m.group(3)) - r["full_bytes"] / r["snapshot_bytes"]) < 0.051, (line, r)
PY

# ---- ls for people
expect_rc "ls" 0 "$K" ls
head -1 "$T/out" | grep -Eq '^NAME +TOKENS +SNAPS +SIZE +B/TOKEN +KEPT +SMALLER +USED +ID$'; ok "ls has a header" $?
# the age shown is the time since the stamp, which a loaded machine's later
# ingests (gpl above) can push past a minute: the minutes expected are
# counted, either side of a minute's turn
age_min=$(((SECONDS - t_apache) / 60))
if [ "$age_min" -eq 0 ]; then used='(just now|[0-9]+ s ago|1 min ago)'
else used="($age_min|$((age_min + 1))) min ago"; fi
grep -Eq "^apache +[0-9]+ +1 +[0-9.]+ (KiB|MiB) +[0-9.]+ (B|KiB) +[0-9.]+ % +[0-9.]+x +$used +[0-9a-f]{12}\$" "$T/out"
ok "the named document: name, tokens, human size, bytes a token, kept, ratio, relative time, short id" $?
"$K" ls --json > "$T/ls.json" 2>&1
python3 - "$T/ls.json" "$T/out" <<'PY'; ok "ls: bytes_per_token is stored_bytes / tokens, and the B/TOKEN column shows it" $?
import json, re, sys
docs = json.loads(open(sys.argv[1]).readline().split("\t", 1)[-1])["docs"]
rows = open(sys.argv[2]).read().splitlines()
for d in docs:
    # --json writes reals to 6 significant digits (cli_json.c)
    assert abs(d["bytes_per_token"] - d["stored_bytes"] / d["tokens"]) <= 1e-5 * d["bytes_per_token"], d
    if d["name"] == "apache":
        row = [r for r in rows if r.startswith("apache ")][0].split()
        v, u = float(row[5]), row[6]
        shown = v * (1024 if u == "KiB" else 1)
        # people see 2 significant digits below 10 KiB ("5.1 KiB"), integers of B
        assert abs(shown - d["bytes_per_token"]) <= 0.06 * d["bytes_per_token"] + 1, (row, d)
PY
grep -Eq '^gpl\.txt +[0-9]+ ' "$T/out" && ! grep -q "$T" "$T/out"
ok "the unnamed one by its source's base name (the full path only in info)" $?
[ "$(awk '{ print length($0) - length($NF) }' "$T/out" | sort -u | wc -l)" -eq 1 ]
ok "columns aligned (the id column starts at one offset)" $?
! grep -qiE 'map|[0-9]{7,} B' "$T/out"; ok "no LMDB map size, no raw byte counts" $?
if command -v faketime >/dev/null; then
	# faketime shifts the clock this process reads (LD_PRELOAD): the
	# stamps stay, so they age (AddressSanitizer wants to be first: told not to mind)
	ago() { ASAN_OPTIONS=${ASAN_OPTIONS:-}:verify_asan_link_order=0 faketime -f "$1" "$K" ls | grep '^apache'; }
	m=$(((SECONDS - t_apache) / 60 + 5))
	ago +5m | grep -Eq " ($m|$((m + 1))) min ago "; _s=$?; ok "5 minutes later: $m min ago (or $((m + 1)))" $_s
	ago +2h | grep -q ' 2 h ago '; ok "2 hours later: 2 h ago" $?
	ago +1d | grep -Eq ' (yesterday|[0-9]+ h ago) '; ok "a day later: yesterday" $?
	ago +3d | grep -q ' 3 days ago '; ok "3 days later: 3 days ago" $?
	ago +40d | grep -q " $(date +%Y-%m-%d) "
	_s=$?; ok "40 days later: the date it was used ($(date +%Y-%m-%d))" $_s
else
	echo "# SKIP relative times: needs faketime (scripts/install-deps.sh)"
fi
expect_rc "info by id prefix" 0 "$K" info "${GPL:0:8}"
grep -q "^  source    $T/gpl.txt$" "$T/out"; ok "info shows the full source path" $?
grep -Eq '^  snapshot [0-9a-f]{12}  kvzip budget 64, chunk 128, q6h  [0-9.]+ (KiB|MiB)  used ' "$T/out"
ok "info names the snapshot's profile in words and its size" $?
grep -Eq '[0-9]+ tokens -> [0-9]+ units \([0-9.]+ % kept, [0-9.]+x smaller than the full cache; [0-9.]+ (B|KiB) a token' "$T/out"
ok "... with the kept share, the ratio and the bytes a token" $?
grep -Eq '^  1 snapshot, [0-9.]+ (KiB|MiB) \([0-9.]+ (B|KiB) per document token\)$' "$T/out"
ok "info: the document's stored bytes per token" $?

# ---- the one snapshot rule, --local: a mismatch names what is stored, the
# flags that answer from it, the command that re-ingests; both work
expect_rc "query --local with another budget: exit 4" 4 "$K" query --local --budget 32 --chunk 128 -t 2 -n 4 apache "What is it?"
grep -q 'apache ([0-9a-f]\{12\}): no snapshot of this profile (kvzip budget 32, chunk 128, q6h); stored: kvzip budget 64, chunk 128, q6h' "$T/err"
ok "... naming this profile and the stored one in words" $?
[ ! -s "$T/out" ]; ok "... and answering nothing (no silent fallback)" $?
cp "$T/err" "$T/advice"
flags=$(sed -n 's/.*Answer from the stored snapshot with: kvsnap query --local \(.*\) DOC QUESTION;.*/\1/p' "$T/advice")
[ "$flags" = "--policy kvzip --budget 64 --chunk 128 --quant q6h" ]; ok "... the flags that answer from it: $flags" $?
# shellcheck disable=SC2086 # the advised flags, word by word
expect_rc "... which do answer" 0 "$K" query --local $flags -t 2 -n 4 apache "What is it?"
cmd=$(sed -n 's/.*re-ingest for this profile: kvsnap ingest \(.*\)$/\1/p' "$T/advice")
[ "$cmd" = "--local --policy kvzip --budget 32 --chunk 128 --quant q6h $T/apache.txt" ]
ok "... and the re-ingest command for this profile: $cmd" $?

# ---- rm, prune, verify name documents
expect_rc "verify" 0 "$K" verify
grep -Eq "^apache \([0-9a-f]{12}\)  snapshot [0-9a-f]{12}  ok$" "$T/out" &&
	grep -Eq "^gpl\.txt \(${GPL:0:12}\)  snapshot [0-9a-f]{12}  ok$" "$T/out"
ok "verify reports each document by name" $?
grep -qx "2 snapshots checked, 0 corrupt" "$T/out"; ok "... and the totals" $?
expect_rc "prune --dry-run" 0 "$K" prune --keep 1 --dry-run
grep -Eq '^would drop (apache|gpl\.txt) \([0-9a-f]{12}\)  snapshot [0-9a-f]{12}  [0-9.]+ (KiB|MiB)  used ' "$T/out"
ok "prune names the document it would drop" $?
grep -Eq '^would drop 1 snapshot, [0-9.]+ (KiB|MiB)$' "$T/out"; ok "... and the total in human units" $?
expect_rc "rename" 0 "$K" rename "${GPL:0:8}" gpl
grep -qx "renamed ${GPL:0:12} to gpl" "$T/out"; ok "rename says what it did" $?

# ---- through the daemon: the same words, the same rule
"$D" --foreground --state "$KVSNAP_STATE" --socket "$KVSNAP_SOCKET" "${P[@]}" -t 2 \
	--workers 2 2>>"$T/daemon.log" &
DPID=$!
wait_ready daemon_ready; ok "kvsnapd starts" $?
expect_rc "ingest through the daemon" 0 "$K" ingest "$T/artistic.txt"
grep -Eq "$(echo "$re" | sed 's/apache/artistic/')" "$T/out"; _s=$?; ok "the daemon's ingest ends alike: $(cat "$T/out")" $_s
expect_rc "ingest a stored one" 0 "$K" ingest "$T/apache.txt"
grep -Eq 'apache\.txt \([0-9a-f]{12}\): already stored \(skipped\): [0-9]+ tokens -> [0-9.]+ (KiB|MiB) snapshot \([0-9.]+ % kept, [0-9.]+x smaller than the full cache\)$' "$T/out"
ok "already stored: says so, with the stored snapshot's figures" $?
jrun ingest "$T/apache.txt"; ok "ingest --json of a stored one (exit $?)" $?
jrun ingest "$T/artistic.txt" --force; ok "ingest --json --force (exit $?)" $?
grep -q '"event":"progress"' "$T/out" && tail -1 "$T/out" | grep -q '"event":"result"'
ok "... progress lines, then the result" $?
"$K" query -v -n 6 apache "What is this about?" > "$T/v" 2>&1; ok "query -v (exit $?)" $?
python3 - "$T/v" <<'PY'; ok "-v: the answer ends with a newline, the statistics on their own line" $?
import sys
lines = open(sys.argv[1]).read().split("\n")
stats = [i for i, l in enumerate(lines) if "time to first token" in l]
assert len(stats) == 1 and lines[stats[0]].startswith("kvsnap: time to first token"), lines
assert stats[0] >= 1 and lines[stats[0] - 1].strip(), lines
PY
jrun query -n 4 apache "What is this about?"; ok "query --json through the daemon (exit $?)" $?
tail -1 "$T/out" | grep -q '"stop":"length"'; ok "... its last line has stop: length" $?
jrun query --local "${P[@]}" -t 2 -n 4 apache "What is this about?"; ok "query --local --json (exit $?)" $?
tail -1 "$T/out" | grep -q '"stop":"length"'; ok "... its last line has stop: length too" $?
jrun query --local "${P[@]}" -t 2 -n 200 apache "Say yes."; ok "a short answer (exit $?)" $?
tail -1 "$T/out" | grep -q '"stop":"eos"'; ok "... stops with eos" $?
expect_rc "ingest --local under another budget" 0 "$K" ingest --local --budget 48 --chunk 128 -t 2 --name other "$T/artistic.txt"
expect_rc "ingest --local a document the daemon's profile lacks" 0 "$K" ingest --local --budget 48 --chunk 64 -t 2 --name lone "$T/bsd.txt"
expect_rc "the daemon's query of it: exit 4" 4 "$K" query -n 4 lone "Why?"
grep -q "lone ([0-9a-f]\{12\}): no snapshot of the daemon's profile (kvzip budget 64, chunk 128, q6h); stored: kvzip budget 48, chunk 64, q6h; re-ingest it for this profile: kvsnap ingest --force $T/bsd.txt (profile_mismatch)" "$T/err"
ok "... naming both profiles and the command that re-ingests" $?
# shellcheck disable=SC2046 # the advised command, word by word
expect_rc "... which works" 0 "$K" ingest $(sed -n 's/.*re-ingest it for this profile: kvsnap ingest \(.*\) (profile_mismatch)$/\1/p' "$T/err")
expect_rc "... and then it answers" 0 "$K" query -n 4 lone "Why?"
jrun query -n 4 nope "Why?"; [ $? -eq 2 ]; ok "--json: an unknown document: exit 2" $?
[ "$(tail -1 "$T/out" | python3 -c 'import json,sys; e=json.load(sys.stdin); print(e["code"], e["exit"])')" = "not_found 2" ]
ok "... is an error event on stdout: not_found, exit 2" $?
jrun query -s "$T/none.sock" -n 4 gpl "Why?"; [ $? -eq 3 ]; ok "--json: the daemon unreachable: exit 3" $?
grep -q '"code":"unreachable","message":".*","exit":3' "$T/out"; ok "... an error event: unreachable, exit 3" $?
kill -TERM "$DPID"; wait_exit; ok "kvsnapd stops" $?

# ---- every other command's --json
jrun ls; ok "ls --json (exit $?)" $?
jrun info gpl; ok "info --json (exit $?)" $?
[ "$(wc -l < "$T/out")" -eq 1 ]; ok "info --json is one line (one shape)" $?
jrun stats; ok "stats --json (exit $?)" $?
jrun verify; ok "verify --json (exit $?)" $?
jrun search --local GNU General Public License; ok "search --local --json (exit $?)" $?
jrun prune --keep 2 --dry-run; ok "prune --json --dry-run (exit $?)" $?
jrun rename gpl gnu; ok "rename --json (exit $?)" $?
grep -q '"name":"gnu","old_name":"gpl"' "$T/out"; ok "rename --json prints its result" $?
# 1/16: a cut below the budget-64 snapshot (kvzip's ratio is of the
# document's ~430 tokens, its 24 template sinks kept on top: 1/8 is ~75)
jrun shrink gnu --ratio 1/16; ok "shrink --json (exit $?)" $?
jrun rm other; ok "rm --json (exit $?)" $?
jrun rm other; [ $? -eq 2 ]; ok "rm --json of a removed one: exit 2" $?
jrun info nope; [ $? -eq 2 ]; ok "info --json of a missing one: exit 2" $?
jrun prune; [ $? -eq 1 ]; ok "prune --json without a limit: exit 1" $?
grep -q '"code":"usage".*"exit":1' "$T/out"; ok "... an error event: usage, exit 1" $?
jrun query --local --budget 32 --chunk 128 -t 2 -n 4 gnu "Why?"; [ $? -eq 4 ]; ok "query --local --json of another profile: exit 4" $?
grep -q '"code":"profile_mismatch"' "$T/out" && [ "$(wc -l < "$T/out")" -eq 1 ]; ok "... one error event: profile_mismatch" $?
jrun generate -p "Hi" -n 4 -t 2; ok "generate --json (exit $?)" $?
tail -1 "$T/out" | grep -q '"stop":"length"'; ok "... its result has stop" $?
jrun tokenize "Hello world"; ok "tokenize --json (exit $?)" $?
if [ -d /usr/share/games/fortunes ]; then
	jrun train-heads --labels cis --examples 1 --eval 1 --max-tokens 160 --min-tokens 96 -t 2 -o "$T/h.gguf"
	ok "train-heads --json (exit $?)" $?
fi
python3 - docs/JSON.md "$J" <<'PY'; ok "every --json line matches docs/JSON.md's schema" $?
import json, re, sys
md, lines = open(sys.argv[1]).read(), open(sys.argv[2]).read().splitlines()
# the schema: "## `kvsnap CMD...`" sections of | event | member | type |
# rows, "## Every command" for all, "## Type `NAME`" of | member | type |
cmds, types, cur = {}, {}, None
for l in md.splitlines():
    m = re.match(r"## (?:`kvsnap ([\w-]+)|(Every command)|Type `(\w+)`)", l)
    if m:
        cur = ("cmd", m.group(1)) if m.group(1) else ("all", None) if m.group(2) else ("type", m.group(3))
        continue
    cells = [c.strip() for c in l.strip().strip("|").split("|")] if l.startswith("|") else []
    if not cur or len(cells) < 3 or cells[0] in ("event", "member") or set(cells[0]) <= set("-"):
        continue
    if cur[0] == "type":
        types.setdefault(cur[1], {})[cells[0]] = cells[1]
    else:
        cmds.setdefault(cur[1], {}).setdefault(cells[0], {})[cells[1]] = cells[2]
def check(v, t, where):
    opt = t.endswith("?")
    t = t.rstrip("?")
    if t.startswith("array of "):
        assert isinstance(v, list), where
        for i, x in enumerate(v):
            check(x, t[9:], "%s[%d]" % (where, i))
    elif t in types:
        assert isinstance(v, dict), where
        members(v, types[t], where)
    else:
        ok = {"string": lambda x: isinstance(x, str), "integer": lambda x: type(x) is int,
              "number": lambda x: type(x) in (int, float), "boolean": lambda x: type(x) is bool,
              "array": lambda x: isinstance(x, list),
              "stop": lambda x: x in ("length", "eos", "stop_sequence", "cancelled")}[t](v)
        assert ok, "%s: %r is not %s" % (where, v, t)
def members(o, spec, where):
    extra = set(o) - set(spec)
    assert not extra, "%s: members not in the schema: %s" % (where, extra)
    for k, t in spec.items():
        if k in o:
            check(o[k], t, where + "." + k)
        else:
            assert t.endswith("?"), "%s: %s missing" % (where, k)
seen, bad = set(), 0
for l in lines:
    cmd, text = l.split("\t", 1)
    try:
        o = json.loads(text)
        assert isinstance(o, dict) and list(o)[0] == "event", "event is not the first member"
        ev = o.pop("event")
        spec = cmds[None].get(ev) or cmds[cmd].get(ev)
        assert spec, "no event %r for %s" % (ev, cmd)
        members(o, spec, "%s %s" % (cmd, ev))
        seen.add((cmd, ev))
    except Exception as e:
        bad += 1
        print("#   %s: %s\n#     %s" % (cmd, e, text[:300]))
print("#   %d lines checked, %d commands/events seen: %s" % (len(lines), len(seen), " ".join(sorted("%s:%s" % x for x in seen))))
want = {("ingest", "result"), ("ingest", "progress"), ("query", "token"), ("query", "result"),
        ("query", "error"), ("ls", "result"), ("info", "result"), ("stats", "result"),
        ("verify", "snapshot"), ("verify", "result"), ("prune", "snapshot"), ("prune", "result"),
        ("prune", "error"), ("rename", "result"), ("rm", "result"), ("rm", "error"),
        ("info", "error"), ("generate", "token"), ("generate", "result"), ("tokenize", "result"),
        ("search", "hit"), ("search", "result")}
assert not want - seen, "not exercised: %s" % (want - seen)
sys.exit(1 if bad else 0)
PY
finish
