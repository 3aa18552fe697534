#!/usr/bin/env bash
# Documents stay their owner's (issue 15, defect 7): two real users
# (created here, removed at the end) and a real daemon running as root
# with a socket every user may open.  A ingests a private file (0600) and
# a shared one; B cannot query, info or rm A's private document (not_found,
# exactly as for a missing one) and ls does not list it; B may query the
# shared one but not remove it (denied); B with its own copy of the same
# bytes passed by descriptor may query it; store-wide operations are
# denied to B; A and root see everything of A's; B ingesting the same bytes
# is not told they were stored (no `skipped`) and then owns them too.
# Needs root (useradd, runuser); skipped otherwise.  Every wait is bounded.
set -u
. "$(dirname "$0")/lib.bash"
need "$MODEL" "$D" command:python3 command:useradd command:runuser command:userdel
if [ "$(id -u)" -ne 0 ]; then
	echo "# SKIP: needs root (useradd, runuser)"; echo "0 passed, 0 failed"; exit 0
fi
scratch owner
chmod 755 "$T" # the users reach the socket and the protocol script inside
UA=kvsnap-a UB=kvsnap-b
test_users $UA $UB
id "$UA" >/dev/null 2>&1 && id "$UB" >/dev/null 2>&1; ok "users $UA and $UB exist" $? || { finish; exit; }
export KVSNAP_STATE=$T/state KVSNAP_SOCKET=$T/d.sock
EXPECT_TIMEOUT=120
words=200
is_san "$D" && words=60
mkdir -p "$T/a" "$T/b"
prose GPL-3 $words > "$T/a/private.txt"
prose Apache-2.0 $words > "$T/a/public.txt"
cp "$T/a/private.txt" "$T/b/copy.txt"
prose MPL-2.0 $words > "$T/b/other.txt"
chown -R "$UA" "$T/a"; chown -R "$UB" "$T/b"
chmod 700 "$T/a" "$T/b"; chmod 600 "$T/a"/* "$T/b"/*

proto_py # readable by the users too; every read bounded at 60 s below
chmod 644 "$T/proto.py"
# as A / as B: a command run by that user (an array: expect_rc runs it under timeout)
asA=(runuser -u "$UA" -- env KVSNAP_SOCKET="$KVSNAP_SOCKET")
asB=(runuser -u "$UB" -- env KVSNAP_SOCKET="$KVSNAP_SOCKET")
proto_as() { timeout 60 runuser -u "$1" -- python3 "$T/proto.py" "$KVSNAP_SOCKET" "$2" 60; }
names() { # the named documents an ls result lists
	python3 -c 'import json,sys; print(" ".join(sorted(d["name"] for d in json.loads(sys.stdin.read())["docs"] if d["name"])))'; }

"$D" --foreground --state "$KVSNAP_STATE" --socket "$KVSNAP_SOCKET" --budget 64 --chunk 64 \
	-t 2 --workers 2 --log-level debug 2>>"$T/daemon.log" &
DPID=$!
wait_ready python3 "$T/proto.py" "$KVSNAP_SOCKET" '{"id":0,"op":"hello"}' 60; [ -S "$KVSNAP_SOCKET" ]; ok "daemon (root) listening" $?
chmod 666 "$KVSNAP_SOCKET" # every local user may connect: ownership is the only gate now

Q="What is this document about?"
expect_rc "A ingests a private file" 0 "${asA[@]}" "$K" ingest --name a-private "$T/a/private.txt"
priv=$(python3 -c 'import hashlib,sys; print(hashlib.blake2b(open(sys.argv[1],"rb").read(), digest_size=32).hexdigest())' "$T/b/copy.txt")
expect_rc "A ingests a shared file (--share)" 0 "${asA[@]}" "$K" ingest --share --name a-public "$T/a/public.txt"

# ---- B: A's private document does not exist
expect_rc "B queries A's private one by name: not found" 2 "${asB[@]}" "$K" query -n 2 a-private "$Q"
grep -q "no document matches 'a-private'" "$T/err"; ok "  with a missing document's words" $?
expect_rc "B queries it by id prefix: not found" 2 "${asB[@]}" "$K" query -n 2 "${priv:0:8}" "$Q"
expect_rc "B queries it by full id: not found" 2 "${asB[@]}" "$K" query -n 2 "$priv" "$Q"
for op in info rm has verify; do
	proto_as $UB "{\"id\":1,\"op\":\"$op\",\"doc\":\"a-private\"}" > "$T/o"
	[ "$(json_field code < "$T/o")" = not_found ]; ok "B $op A's private one: not_found" $?
done
proto_as $UB '{"id":1,"op":"ls"}' > "$T/o"
[ "$(names < "$T/o")" = "a-public" ]; ok "B's ls lists the shared one only" $? || cat "$T/o"
for req in '{"id":1,"op":"stats"}' '{"id":1,"op":"verify"}' '{"id":1,"op":"prune","keep":0}'; do
	proto_as $UB "$req" > "$T/o"
	[ "$(json_field code < "$T/o")" = denied ]; ok "B: $req denied" $?
done
expect_rc "B cannot open the store itself (rename, rm)" 5 "${asB[@]}" "$K" rename --state "$KVSNAP_STATE" a-private x

# ---- a hex prefix is matched among the caller's documents: two texts whose
# ids share 4 digits, one A's, one B's (found by trying; 65536 to one)
python3 - "$T/pair" <<'PY'
import hashlib, sys
seen = {}
for i in range(1 << 20):
    t = "note %d for the prefix check" % i
    p = hashlib.blake2b(t.encode(), digest_size=32).hexdigest()[:4]
    if p in seen:
        open(sys.argv[1], "w").write("%s\n%s\n%s\n" % (p, seen[p], t)); break
    seen[p] = t
PY
pfx=$(sed -n 1p "$T/pair") tA=$(sed -n 2p "$T/pair") tB=$(sed -n 3p "$T/pair")
proto_as $UA "{\"id\":1,\"op\":\"ingest\",\"text\":\"$tA\"}" > "$T/o"
proto_as $UB "{\"id\":1,\"op\":\"ingest\",\"text\":\"$tB\"}" >> "$T/o"
[ "$(grep -c '"skipped":false' "$T/o")" -eq 2 ]; ok "A and B each ingest a text, ids sharing prefix $pfx" $?
proto_as root "{\"id\":1,\"op\":\"has\",\"doc\":\"$pfx\"}" > "$T/o"
[ "$(json_field code < "$T/o")" = ambiguous ]; ok "root: prefix $pfx is ambiguous" $?
proto_as $UB "{\"id\":1,\"op\":\"has\",\"doc\":\"$pfx\"}" > "$T/o"
want=$(python3 -c 'import hashlib,sys; print(hashlib.blake2b(sys.argv[1].encode(), digest_size=32).hexdigest())' "$tB")
[ "$(json_field doc_id < "$T/o")" = "$want" ]; ok "B: prefix $pfx is B's own document, A's is not shown" $?

# ---- B: the shared one is readable, not removable
expect_rc "B queries A's shared one" 0 "${asB[@]}" "$K" query -n 2 a-public "$Q"
proto_as $UB '{"id":1,"op":"rm","doc":"a-public"}' > "$T/o"
[ "$(json_field code < "$T/o")" = denied ]; ok "B rm A's shared one: denied" $?

# ---- B proves access with its own copy of the bytes
expect_rc "B queries A's private one with its copy (--file)" 0 "${asB[@]}" "$K" query -n 2 --file "$T/b/copy.txt" a-private "$Q"
[ -s "$T/out" ]; ok "  and gets an answer" $?
expect_rc "B with another file: still not found" 2 "${asB[@]}" "$K" query -n 2 --file "$T/b/other.txt" a-private "$Q"
expect_rc "a bad proof file, A's private one: bad_file" 5 "${asB[@]}" "$K" query -n 2 --file /dev/null a-private "$Q"
grep -q bad_file "$T/err"; ok "  (as for a missing document: nothing told)" $?
expect_rc "a bad proof file, a missing one: bad_file" 5 "${asB[@]}" "$K" query -n 2 --file /dev/null no-such-doc "$Q"
expect_rc "the proof was for that query only" 2 "${asB[@]}" "$K" query -n 2 a-private "$Q"

# ---- A and root see A's documents
expect_rc "A queries its private one" 0 "${asA[@]}" "$K" query -n 2 a-private "$Q"
proto_as $UA '{"id":1,"op":"ls"}' > "$T/o"
[ "$(names < "$T/o")" = "a-private a-public" ]; ok "A's ls lists both" $?
expect_rc "root queries A's private one" 0 "$K" query -n 2 a-private "$Q"
proto_as root '{"id":1,"op":"info","doc":"a-private"}' > "$T/o"
python3 -c 'import json,sys; d=json.loads(sys.stdin.read())["doc"]; sys.exit(not (d["shared"] is False and len(d["owners"]) == 1))' < "$T/o"
ok "root's info shows the owner, not shared" $?

# ---- B ingests the same bytes: no sign they were there, then B owns them too
expect_rc "B ingests its copy (with a name of its own)" 0 "${asB[@]}" "$K" ingest --json --name b-copy "$T/b/copy.txt"
grep -q '"skipped":true' "$T/out"; [ $? -ne 0 ]; ok "  not skipped: A's copy stays secret" $?
expect_rc "B now queries it by id" 0 "${asB[@]}" "$K" query -n 2 "$priv" "$Q"
expect_rc "A still queries it by its name (a claim keeps the owners' name)" 0 "${asA[@]}" "$K" query -n 2 a-private "$Q"

kill -TERM "$DPID"; wait_exit; ok "daemon stops cleanly" $?

# ---- single-user installs: `share = yes` in the config shares every ingest
printf 'share = maybe\n' > "$T/bad.conf"
expect_rc "share = maybe: a usage error" 1 "$D" --config "$T/bad.conf" --state "$KVSNAP_STATE" --socket "$KVSNAP_SOCKET"
printf 'share = yes\n' > "$T/share.conf"
"$D" --config "$T/share.conf" --state "$KVSNAP_STATE" --socket "$KVSNAP_SOCKET" --budget 64 \
	--chunk 64 -t 2 --workers 2 2>>"$T/daemon.log" &
DPID=$!
wait_ready python3 "$T/proto.py" "$KVSNAP_SOCKET" '{"id":0,"op":"hello"}' 60; ok "daemon with share = yes" $?
chmod 666 "$KVSNAP_SOCKET"
prose LGPL-2.1 $words > "$T/a/later.txt"; chown "$UA" "$T/a/later.txt"; chmod 600 "$T/a/later.txt"
expect_rc "A ingests without --share" 0 "${asA[@]}" "$K" ingest --name a-later "$T/a/later.txt"
expect_rc "B queries it: shared by the config" 0 "${asB[@]}" "$K" query -n 2 a-later "$Q"
kill -TERM "$DPID"; wait_exit; ok "daemon stops cleanly" $?
finish
