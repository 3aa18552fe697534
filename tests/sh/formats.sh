#!/usr/bin/env bash
# Document formats end to end (issue 16, item 2): the committed PDF, HTML
# page and Markdown file (tests/fixtures/docs/, scripts/make-doc-fixtures.py)
# ingested through a real kvsnapd and with --local, `info` and the
# protocol's info/ls showing each format, a question answered from each
# naming a fact only the document holds; binary data refused before any
# model work (no progress event, exit 4), through the daemon, --local and
# stdin; scanned and encrypted PDFs refused; `ingest -` reading stdin with
# the same doc_id as the file; a UTF-16 file and its UTF-8 copy the same
# document; --encoding; a binary file as query --file's proof refused.
set -u
. "$(dirname "$0")/lib.bash"
daemon_scratch formats
F=tests/fixtures/docs
need "$F/ship.pdf" "$F/ship.html" "$F/ship.md"
EXPECT_TIMEOUT=300
L=(--local --state "$T/local" -t 2)

proto() { # one request line; its events
	timeout 60 python3 - "$KVSNAP_SOCKET" "$1" <<'PY'
import json, socket, sys
s = socket.socket(socket.AF_UNIX); s.settimeout(60); s.connect(sys.argv[1])
s.sendall(sys.argv[2].encode() + b"\n")
for l in s.makefile("rb"):
    sys.stdout.write(l.decode())
    if json.loads(l).get("event") in ("result", "error"): break
PY
}
field() { # KEY: the value of KEY in the JSON line(s) on stdin (first match)
	python3 -c '
import json, sys
for l in sys.stdin:
    o = json.loads(l)
    for src in (o, o.get("doc") or {}):
        if sys.argv[1] in src: print(src[sys.argv[1]]); sys.exit(0)' "$1"
}

"$D" --foreground --state "$KVSNAP_STATE" --socket "$KVSNAP_SOCKET" -t 2 --workers 1 \
	--log-level info 2>>"$T/daemon.log" &
DPID=$!
wait_ready proto '{"v":1,"id":0,"op":"hello"}'; ok "daemon starts" $?

# ---- each format through the daemon: its name, info, an answer from it
for f in pdf html md; do
	expect_rc "ingest ship.$f through the daemon" 0 "$K" ingest --name "ship-$f" "$F/ship.$f"
	cp "$T/out" "$T/ingest.$f"
done
grep -q "pdf (2 pages), [0-9]* tokens" "$T/ingest.pdf"; ok "the ingest line names the format: pdf (2 pages)" $?
grep -q ": html, [0-9]* tokens" "$T/ingest.html" && grep -q ": markdown, [0-9]* tokens" "$T/ingest.md"
ok "... html, markdown" $?
for f in "pdf:pdf (2 pages)" "html:html" "md:markdown"; do
	expect_rc "info ship-${f%%:*}" 0 "$K" info "ship-${f%%:*}"
	grep -qx "  format    ${f#*:}" "$T/out"; ok "info shows format: ${f#*:}" $?
done
proto '{"v":1,"id":1,"op":"info","doc":"ship-pdf"}' | field format > "$T/fmt"
[ "$(cat "$T/fmt")" = "pdf (2 pages)" ]; _s=$?; ok "protocol info: \"format\":\"pdf (2 pages)\" ($(cat "$T/fmt"))" $_s
proto '{"v":1,"id":2,"op":"ls"}' > "$T/ls"
python3 -c '
import json, sys
d = {x["name"]: x["format"] for x in json.loads(open(sys.argv[1]).readline())["docs"]}
sys.exit(d != {"ship-pdf": "pdf (2 pages)", "ship-html": "html", "ship-md": "markdown"})' "$T/ls"
ok "protocol ls: each document's format" $?
"$K" ls --json > "$T/lsj"; grep -q '"format":"markdown"' "$T/lsj"; ok "ls --json: format" $?

# A question answered from each rendering.  Whether the answer names the
# fact (Marigold Finch, Valparaiso) is reported, not asserted: SmolLM2-135M's
# greedy answer here is a near-tie that moves with the BLAS kernel (issue 25:
# "The ship is a three-masted schooner..." under OPENBLAS_CORETYPE=Haswell on
# an AMD EPYC).  What holds on any kernel, and is asserted: the facts are in
# each rendering's extracted text (tests/test_formats.c, facts()), the
# snapshot gives an answer, and that answer is, token for token, the one
# `kvsnap query --local` computes from the same stored snapshot in this run
# (the same kernel on the same bytes: equal on every machine).
answers() { # FORMAT QUESTION FACT: the daemon's answer, --local's, the same
	local f=$1 q=$2 fact=$3
	expect_rc "query ship-$f: $q" 0 "$K" query -n 24 "ship-$f" "$q"
	cp "$T/out" "$T/a.$f"
	expect_rc "... --local on the daemon's store" 0 "$K" query --local -t 2 -n 24 "ship-$f" "$q"
	[ -s "$T/a.$f" ] && cmp -s "$T/out" "$T/a.$f"
	_s=$?; ok "ship-$f: an answer, the same through the daemon and --local: $(head -c 70 "$T/a.$f" | tr '\n' ' ')" $_s
	grep -q "$fact" "$T/a.$f" && echo "# report: ship-$f names $fact" ||
		echo "# report: ship-$f does not name $fact (a near-tie on this kernel; information only)"
}
for f in pdf html md; do
	answers "$f" "What is the name of the ship?" Marigold
	answers "$f" "Where did the ship sail from?" Valparaiso
done

# ---- binary data: refused before any model work, exit 4
n_prog() { grep -c '"progress"' "$T/out"; }
head -c 3000 /bin/ls > "$T/ls.bin"
expect_rc "head -c 3000 /bin/ls | kvsnap ingest -: exit 4" 4 sh -c "head -c 3000 /bin/ls | '$K' ingest --json -"
grep -q "looks like binary data (an ELF executable), not a document" "$T/err" &&
	grep -q "unsupported_format" "$T/err"
_s=$?; ok "... names what it looks like and the code: $(head -c 200 "$T/err" | tail -1)" $_s
[ "$(n_prog)" = 0 ] && ! grep -q doc_id "$T/out"; ok "... no progress event, nothing stored" $?
expect_rc "a binary file through the daemon: exit 4" 4 "$K" ingest "$T/ls.bin"
expect_rc "a binary file with --local: exit 4" 4 "$K" ingest "${L[@]}" "$T/ls.bin"
grep -q "ls.bin looks like binary data (an ELF executable)" "$T/err"; ok "... FILE looks like binary data" $?
expect_rc "a binary on stdin with --local: exit 4" 4 sh -c "'$K' ingest ${L[*]} - < '$T/ls.bin'"
expect_rc "kvsnap ask on a binary: exit 4" 4 "$K" ask "$T/ls.bin" "What is this?"
grep -q "ls.bin looks like binary data" "$T/err"; ok "... before loading the model" $?
printf 'hello\0world' > "$T/nul.txt"
expect_rc "text with a NUL byte: exit 4" 4 "$K" ingest "$T/nul.txt"
grep -q "NUL bytes" "$T/err"; ok "... says NUL bytes" $?
expect_rc "a scanned PDF (no text layer): exit 4" 4 "$K" ingest "$F/scanned.pdf"
grep -q "no text layer" "$T/err"; ok "... says no text layer" $?
expect_rc "an encrypted PDF: exit 4" 4 "$K" ingest "$F/encrypted.pdf"
grep -q "encrypted PDF" "$T/err"; ok "... says encrypted" $?
expect_rc "a truncated PDF: exit 4" 4 "$K" ingest "$F/truncated.pdf"
"$K" ls --json > "$T/lsj"
[ "$(python3 -c 'import json,sys; print(len(json.loads(open(sys.argv[1]).readline())["docs"]))' "$T/lsj")" = 3 ]
ok "nothing refused was stored" $?
grep -q "ingested" "$T/daemon.log" && [ "$(grep -c "ingested" "$T/daemon.log")" = 3 ]
ok "the daemon ingested only the three documents" $?

# ---- stdin: works, named; the same text as a file and via stdin: one doc_id
cat > "$T/notes.md" <<'MD'
# Harbour notes

The lighthouse keeper was named **Oswin Marsh**. He kept a logbook of every ship.

- the lamp was lit at dusk
- the fog bell rang every [thirty seconds](https://example.org/fog)
MD
expect_rc "cat notes.md | kvsnap ingest - --name notes" 0 sh -c "cat '$T/notes.md' | '$K' ingest --json - --name notes"
id_stdin=$(field doc_id < "$T/out")
expect_rc "info notes" 0 "$K" info --json notes
[ "$(field source < "$T/out")" = stdin ] && [ "$(field format < "$T/out")" = markdown ]
ok "stdin's document: source stdin, format markdown" $?
expect_rc "the same file ingested by path" 0 "$K" ingest --json "$T/notes.md"
[ -n "$id_stdin" ] && [ "$(field doc_id < "$T/out")" = "$id_stdin" ] && grep -q '"skipped":true' "$T/out"
ok "the same text as a file and via stdin: the same doc_id ($id_stdin), skipped" $?
expect_rc "stdin with --local" 0 sh -c "'$K' ingest ${L[*]} --json --name notes - < '$T/notes.md'"
[ "$(field doc_id < "$T/out")" = "$id_stdin" ]; ok "--local from stdin: the same doc_id" $?
grep -q "stdin has no name" "$T/err"; [ $? -ne 0 ]; ok "named stdin: no note about a name" $?
# stdin is read before connecting: a pipe slower than the idle timeout is fine
kill -TERM "$DPID"; wait_exit
"$D" --foreground --state "$KVSNAP_STATE" --socket "$KVSNAP_SOCKET" -t 2 --workers 1 \
	--idle-timeout 1 --log-level info 2>>"$T/daemon.log" &
DPID=$!
wait_ready proto '{"v":1,"id":0,"op":"hello"}'; ok "daemon restarts with --idle-timeout 1" $?
printf 'The harbour master was Ines Calloway.\n' > "$T/slow.txt"
expect_rc "a pipe slower than the idle timeout" 0 sh -c "(sleep 2; cat '$T/slow.txt') | '$K' ingest --name slow -"
expect_rc "- given twice: the second refused" 1 sh -c "'$K' ingest - - < '$T/slow.txt'"
grep -q "read once" "$T/err"; ok "... stdin is read once" $?
expect_rc "stdin without --name" 0 sh -c "'$K' ingest - < '$T/notes.md'"
grep -q "give it one with --name" "$T/err"; ok "unnamed stdin: a note suggests --name" $?
expect_rc "empty stdin: refused as an empty file is (bad_file)" 5 sh -c "'$K' ingest - < /dev/null"
grep -q "empty" "$T/err"; ok "... says empty" $?

# ---- encodings: a UTF-16 file is the same document as its UTF-8 copy
expect_rc "ingest a UTF-16LE file" 0 "$K" ingest --json "$F/ship-utf16.txt"
id16=$(field doc_id < "$T/out")
[ "$(field format < "$T/out")" = "text (UTF-16LE)" ]; ok "format: text (UTF-16LE)" $?
iconv -f UTF-16 -t UTF-8 "$F/ship-utf16.txt" > "$T/ship8.txt"
expect_rc "its UTF-8 copy" 0 "$K" ingest --json "$T/ship8.txt"
[ -n "$id16" ] && [ "$(field doc_id < "$T/out")" = "$id16" ]; ok "the same text, the same doc_id" $?
iconv -f UTF-8 -t ISO-8859-15 "$T/ship8.txt" > "$T/ship15.txt"
expect_rc "--encoding ISO-8859-15 names the encoding" 0 "$K" ingest --json --encoding ISO-8859-15 "$T/ship15.txt"
[ "$(field doc_id < "$T/out")" = "$id16" ]; ok "... decoded to the same text" $?
expect_rc "an unknown --encoding: exit 1" 1 "$K" ingest --encoding NO-SUCH "$T/ship8.txt"
grep -q 'unknown encoding "NO-SUCH"' "$T/err"; ok "... names it" $?
proto '{"v":1,"id":5,"op":"ingest","text":"caf\u00e9","encoding":"UTF-16LE"}' > "$T/o"
grep -q '"code":"bad_request"' "$T/o" && ! grep -q progress "$T/o"; ok "encoding with inline text: bad_request" $?
expect_rc "--local: an unknown --encoding: exit 1" 1 "$K" ingest "${L[@]}" --encoding NO-SUCH "$T/ship8.txt"

# ---- query --file: the proof hashes the extracted text; a binary is refused
expect_rc "query --file with the PDF" 0 "$K" query -n 4 --file "$F/ship.pdf" ship-pdf "Who was the captain?"
expect_rc "query --file with a binary: exit 4" 4 "$K" query -n 4 --file "$T/ls.bin" ship-pdf "Who?"

# ---- --local: each format into its own store, info, an answer
for f in pdf html md; do
	expect_rc "ingest --local ship.$f" 0 "$K" ingest "${L[@]}" --name "ship-$f" "$F/ship.$f"
done
expect_rc "info (local store)" 0 "$K" info --state "$T/local" ship-html
grep -qx "  format    html" "$T/out"; ok "--local: info shows format: html" $?
# the answer itself is not asserted (a near-tie, above): that the local
# store holds the same text as the daemon's (the same doc_id, the hash of
# the extracted text) and answers from it
python3 -c '
import json, sys
ids = [{d["name"]: d["doc_id"] for d in json.loads(open(p).readline())["docs"]} for p in sys.argv[1:]]
sys.exit(not all(ids[0].get("ship-" + f) == ids[1].get("ship-" + f) is not None for f in ("pdf", "html", "md")))' \
	<("$K" ls --json) <("$K" ls --json --state "$T/local")
ok "--local: each rendering stored under the doc_id the daemon gave it (the same text)" $?
expect_rc "query --local ship-pdf" 0 "$K" query "${L[@]}" -n 24 ship-pdf "Where did the ship sail from?"
[ -s "$T/out" ]; _s=$?; ok "--local: an answer from the PDF: $(head -c 70 "$T/out" | tr '\n' ' ')" $_s

kill -TERM "$DPID"; wait_exit; ok "daemon stops cleanly" $?
finish
