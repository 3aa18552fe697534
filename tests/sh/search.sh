#!/usr/bin/env bash
# kvsnap search (issue 29, item 2): the text index beside a real store,
# built by real ingests of real texts.  --local: the first search builds
# the index; the right document comes first; --json lines; questions made
# of FTS5 syntax are plain words; an ingest into an index already there
# keeps it in step (verify clean); the index file deleted or damaged is
# rebuilt; verify catches an index left stale by a crash (a removal, an
# ingest) and the next search brings it in step.  Then kvsnapd: search
# through the socket, and ownership with two real users (root only): B
# never finds A's private document, finds A's shared one; rm through the
# daemon takes the rows out.  Every wait is bounded.
set -u
. "$(dirname "$0")/lib.bash"
need "$MODEL" "$K" "$D" command:python3
scratch search
S=$T/state
P=(--budget 32 --chunk 64 -t 2) # a small profile: quick ingests (the index sees the text)
EXPECT_TIMEOUT=300
words=150
is_san "$K" && words=60
for n in GPL-3 Apache-2.0 MPL-2.0 Artistic BSD; do prose "$n" $words > "$T/$n.txt"; done
L=("$K" search --local --state "$S")
# the name of hit N of the last --json search
hit() { python3 -c 'import json,sys; h=[json.loads(l) for l in open(sys.argv[1]) if l.strip()]; h=[x for x in h if x["event"]=="hit"]; print(h[int(sys.argv[2])-1]["name"] if len(h)>=int(sys.argv[2]) else "-")' "$T/out" "$1"; }
names_found() { python3 -c 'import json,sys; print(" ".join(sorted(json.loads(l)["name"] for l in open(sys.argv[1]) if json.loads(l)["event"]=="hit")))' "$T/out"; }

for n in GPL-3 Apache-2.0 MPL-2.0; do
	expect_rc "ingest --local $n" 0 "$K" ingest --local "${P[@]}" --state "$S" --name "$n" "$T/$n.txt"
done
[ ! -e "$S/index.sqlite" ]; ok "ingest --local makes no index (the first search does)" $?
expect_rc "search --local" 0 "${L[@]}" "Which license comes from Mozilla?"
head -1 "$T/out" | grep -q ' MPL-2.0 ('; ok "the Mozilla question: MPL-2.0 first" $? || cat "$T/out"
grep -q '^ *Mozilla Public License' "$T/out"; ok "  with a snippet of its text" $?
[ -f "$S/index.sqlite" ]; ok "the first search built $S/index.sqlite" $?

expect_rc "search --local --json -k 3" 0 "${L[@]}" --json -k 3 "Apache License terms"
python3 - "$T/out" <<'PY'; ok "  hit lines: rank, doc_id, name, part 0, score > 0, a snippet; then the result" $?
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
hits = [e for e in ev if e["event"] == "hit"]
assert ev[-1] == {"event": "result", "hits": len(hits)}, ev[-1]
assert 1 <= len(hits) <= 3 and hits[0]["name"] == "Apache-2.0", hits
for i, h in enumerate(hits):
    assert h["rank"] == i + 1 and len(h["doc_id"]) == 64 and h["part"] == 0
    assert h["score"] > 0 and h["snippet"], h
assert all(hits[i]["score"] >= hits[i + 1]["score"] for i in range(len(hits) - 1))
PY
expect_rc "GNU: GPL-3 first" 0 "${L[@]}" --json "the GNU General Public License"
[ "$(hit 1)" = GPL-3 ]; ok "  GPL-3 is hit 1" $?

# a question made of FTS5's syntax is words or nothing, never an error
for q in '"' '"unterminated quote' 'NEAR(a b, 3)' 'body:license' 'license*' '^GNU' \
	'AND OR NOT' '(((' "$(printf 'caf\xc3\xa9 \xff\xfe')" '- + : ; {}'; do
	expect_rc "question $(printf %q "$q")" 0 "${L[@]}" -- "$q"
done
expect_rc "a question of no words: no part matches" 0 "${L[@]}" '*** ???'
grep -qx "no part matches" "$T/out"; ok "  said so" $?
expect_rc "an empty question: usage" 1 "${L[@]}" "   "
expect_rc "-k 0: usage" 1 "${L[@]}" -k 0 GNU
expect_rc "-k 101: usage" 1 "${L[@]}" -k 101 GNU
expect_rc "--state without --local: usage" 1 "$K" search --state "$S" GNU

# an ingest into an index that is there keeps it in step
expect_rc "verify: the index in step" 0 "$K" verify --state "$S"
grep -q "text index: 3 rows, 3 text records, 0 problems" "$T/out"; ok "  3 rows, 3 records" $? || cat "$T/out"
expect_rc "ingest --local Artistic" 0 "$K" ingest --local "${P[@]}" --state "$S" --name Artistic "$T/Artistic.txt"
expect_rc "verify after it: in step (the ingest indexed it)" 0 "$K" verify --state "$S"
expect_rc "search finds it" 0 "${L[@]}" --json "artistic control"
[ "$(hit 1)" = Artistic ]; ok "  Artistic is hit 1" $?

# deleted: rebuilt
rm -f "$S"/index.sqlite*
expect_rc "index file deleted: search --local" 0 "${L[@]}" --json "Mozilla"
[ "$(hit 1)" = MPL-2.0 ] && [ -f "$S/index.sqlite" ]; ok "  rebuilt, MPL-2.0 first" $?
# damaged: rebuilt
dd if=/dev/urandom of="$S/index.sqlite" bs=1024 count=8 conv=notrunc 2>/dev/null
expect_rc "verify: a damaged index is a problem" 4 "$K" verify --state "$S"
grep -q "INDEX: " "$T/out"; ok "  named" $? || cat "$T/out"
expect_rc "index file damaged: search --local" 0 "${L[@]}" --json "Mozilla"
[ "$(hit 1)" = MPL-2.0 ]; ok "  rebuilt, MPL-2.0 first" $?
expect_rc "verify: in step again" 0 "$K" verify --state "$S"

# a crash between a removal and the index: the old index file back
cp "$S/index.sqlite" "$T/index.before"
expect_rc "rm GPL-3" 0 "$K" rm --state "$S" GPL-3
expect_rc "verify after rm: in step (rm took its rows out)" 0 "$K" verify --state "$S"
cp "$T/index.before" "$S/index.sqlite"
expect_rc "the index from before the rm: verify fails" 4 "$K" verify --state "$S"
grep -q "without a text record" "$T/out"; ok "  naming the row without its document" $? || cat "$T/out"
expect_rc "verify --json" 4 "$K" verify --state "$S" --json
grep -q '"event":"index".*"problem":true' "$T/out"; ok "  an index line with the problem" $?
expect_rc "search --local: GNU" 0 "${L[@]}" --json -k 10 "GNU General Public License"
names_found | grep -qw GPL-3; [ $? -ne 0 ]; ok "  never lists the removed document" $?
expect_rc "verify after the search: in step" 0 "$K" verify --state "$S"
# a crash between an ingest's commit and the index: the old file back
cp "$S/index.sqlite" "$T/index.before"
expect_rc "ingest --local BSD" 0 "$K" ingest --local "${P[@]}" --state "$S" --name BSD "$T/BSD.txt"
cp "$T/index.before" "$S/index.sqlite"
expect_rc "the index from before the ingest: verify fails" 4 "$K" verify --state "$S"
grep -q "not in the index" "$T/out"; ok "  naming the part without its row" $? || cat "$T/out"
expect_rc "search --local finds it (the record was kept)" 0 "${L[@]}" --json "Regents of the University of California"
[ "$(hit 1)" = BSD ]; ok "  BSD is hit 1" $?
expect_rc "verify: in step" 0 "$K" verify --state "$S"

# prune: the documents it drops leave the index too
expect_rc "prune --keep 3 (Apache-2.0, the least recently used, goes)" 0 "$K" prune --state "$S" --keep 3
grep -q "^dropped 1 snapshot, " "$T/out"; ok "  its summary" $? || cat "$T/out"
expect_rc "verify after prune: in step (prune took the rows out)" 0 "$K" verify --state "$S"
expect_rc "search --local: Apache" 0 "${L[@]}" --json -k 10 "Apache License"
names_found | grep -qw Apache-2.0; [ $? -ne 0 ]; ok "  the pruned document is not listed" $?

# a planted link as the index file: refused before SQLite opens it
rm -f "$S"/index.sqlite*
echo keep > "$T/victim"
ln -s "$T/victim" "$S/index.sqlite"
expect_rc "an index.sqlite symlink: search refused" 5 "${L[@]}" GNU
grep -q "symbolic link" "$T/err"; ok "  the link named" $?
[ "$(cat "$T/victim")" = keep ]; ok "  its target untouched" $?
rm "$S/index.sqlite"

# ---- through kvsnapd
export KVSNAP_SOCKET=$T/d.sock
"$D" --foreground --state "$S" --socket "$KVSNAP_SOCKET" "${P[@]}" --workers 1 \
	2>>"$T/daemon.log" &
DPID=$!
wait_ready "$K" search -k 1 GNU; ok "daemon answers search" $?
expect_rc "search through kvsnapd" 0 "$K" search --json "Which license comes from Mozilla?"
[ "$(hit 1)" = MPL-2.0 ]; ok "  MPL-2.0 first" $?
expect_rc "--local with -s: usage" 1 "$K" search --local -s "$KVSNAP_SOCKET" GNU
proto_py # readable by the second user too
chmod 644 "$T/proto.py"
python3 "$T/proto.py" "$KVSNAP_SOCKET" '{"id":1,"op":"search","question":"x","k":0}' > "$T/o"
grep -q '"code":"bad_request"' "$T/o"; ok "op search with k 0: bad_request" $?
python3 "$T/proto.py" "$KVSNAP_SOCKET" '{"id":1,"op":"search"}' > "$T/o"
grep -q '"code":"bad_request"' "$T/o"; ok "op search without a question: bad_request" $?

if [ "$(id -u)" -eq 0 ] && command -v useradd >/dev/null && command -v runuser >/dev/null; then
	UA=kvsnap-sa UB=kvsnap-sb
	test_users $UA $UB
	chmod 755 "$T"
	chmod 666 "$KVSNAP_SOCKET"
	as() { timeout 60 runuser -u "$1" -- python3 "$T/proto.py" "$KVSNAP_SOCKET" "$2"; }
	found() { python3 -c 'import json,sys; print(" ".join(sorted(h["name"] for h in json.loads(sys.stdin.read())["hits"])))'; }
	as $UA '{"id":1,"op":"ingest","name":"a-secret","text":"The zebrafish quarterly ledger of Alice: private numbers."}' > "$T/o"
	as $UA '{"id":1,"op":"ingest","name":"a-open","share":true,"text":"The zebrafish handbook of Alice, shared with everyone."}' >> "$T/o"
	[ "$(grep -c '"event":"result"' "$T/o")" -eq 2 ]; ok "A ingests a private and a shared text" $? || cat "$T/o"
	as $UA '{"id":1,"op":"search","question":"zebrafish","k":10}' > "$T/o"
	[ "$(found < "$T/o")" = "a-open a-secret" ]; ok "A finds both" $? || cat "$T/o"
	as $UB '{"id":1,"op":"search","question":"zebrafish quarterly ledger private","k":10}' > "$T/o"
	[ "$(found < "$T/o")" = "a-open" ]; ok "B finds the shared one only, never A's private one" $? || cat "$T/o"
	as $UB '{"id":1,"op":"rm","doc":"a-open"}' > "$T/o"
	grep -q '"code":"denied"' "$T/o"; ok "B may not remove it" $?
	as $UA '{"id":1,"op":"rm","doc":"a-secret"}' > "$T/o"
	grep -q '"removed":true' "$T/o"; ok "A removes its private one through kvsnapd" $?
	expect_rc "verify (the daemon running): in step, its rows gone" 0 "$K" verify --state "$S"
else
	echo "# SKIP: the two-user checks need root (useradd, runuser)"
fi
kill -TERM "$DPID"; wait_exit; ok "daemon stops cleanly" $?
finish
