#!/usr/bin/env bash
# Two tiers (issue 17): two kvsnapd processes, hosts A and B, each with its
# own local state and socket, sharing one snapshot tier.  A document
# ingested through A is answered by B without a model pass over it (B's
# log and stats show a shared-tier hit; its time to first token is a
# snapshot load, well under A's measured read of the document), B's ingest
# of a file A stored skips (no prefill), flipped bytes in the shared copy
# are reported as corruption and never copied, the shared tier unreachable
# leaves both hosts answering from their local tier (one warning, ingest
# still stores locally) until it is back, a credentials file others may
# read is refused at start, and `kvsnap ls/info/verify/prune/rm --shared`
# act on the shared tier.
#
# The shared tier is a store address: SHARED ($KVSNAP_TEST_SHARED, default
# an LMDB store in the scratch directory, which both daemons open like a
# network tier; it must start empty).  What breaks and mends it depends on
# the backend: tier_flip, tier_break and tier_mend below (LMDB here; a Redis
# Cluster run supplies its own through $KVSNAP_TEST_TIER_HOOKS).
set -u
. "$(dirname "$0")/lib.bash"
daemon_scratch tiers
need command:mdb_dump
SHARED=${KVSNAP_TEST_SHARED:-lmdb:$T/shared}
P=(--budget 64 --chunk 64)
EXPECT_TIMEOUT=120
words=400 n=8
is_san "$D" && words=150 n=4
prose GPL-3 $words > "$T/doc1.txt"
prose Apache-2.0 120 > "$T/doc2.txt"
prose LGPL-2.1 120 > "$T/doc3.txt"
prose MPL-2.0 120 > "$T/doc4.txt"
prose GFDL-1.3 120 > "$T/doc5.txt"
unset KVSNAP_STATE KVSNAP_SOCKET

# the backend's faults (LMDB: the directory behind "lmdb:"): tier_flip
# DOC_ID flips a byte of one of its stored records; tier_break makes the
# tier unreachable (the daemons are stopped then), tier_mend undoes it.
# Another backend's run names a file defining its own three in
# KVSNAP_TEST_TIER_HOOKS (sourced here, with SHARED and T set), and its
# TIER_USER and TIER_PASS.
tier_flip() { flip_record_byte "${SHARED#lmdb:}" "$1"; }
tier_break() { mv "${SHARED#lmdb:}" "$T/shared.away" && : > "${SHARED#lmdb:}"; }
tier_mend() { rm -f "${SHARED#lmdb:}" && mv "$T/shared.away" "${SHARED#lmdb:}"; }
# the credentials the tier takes (LMDB takes any; a hooks file sets its own)
TIER_USER=kvsnap TIER_PASS=s3cret
if [ -n "${KVSNAP_TEST_TIER_HOOKS:-}" ]; then . "$KVSNAP_TEST_TIER_HOOKS" || exit 1; fi

proto_stream_py
# proto HOST REQUEST...; field FILE KEY: KEY of the last event (a.b: nested)
proto() { local h=$1; shift; timeout 120 python3 "$T/proto_stream.py" "$T/$h.sock" "$@"; }
field() {
	python3 - "$1" "$2" <<'PY'
import json, sys
e = json.loads([l for l in open(sys.argv[1]) if l.strip()][-1])
for k in sys.argv[2].split("."):
    e = e.get(k) if isinstance(e, dict) else None
print(json.dumps(e) if isinstance(e, (dict, list, bool)) or e is None else e)
PY
}
ingest() { proto "$1" "@fd:$2" "{\"id\":1,\"op\":\"ingest\",\"fd\":true${3:+,\"name\":\"$3\"}}"; }
ask() { proto "$1" "{\"id\":2,\"op\":\"query\",\"doc\":\"$2\",\"question\":\"What is this document about?\",\"max_tokens\":$n}"; }
texts() { python3 -c 'import json,sys; print("".join(json.loads(l).get("text","") for l in open(sys.argv[1]) if "\"token\"" in l))' "$1"; }

declare -A PIDS=()
cleanup_hosts() { local p; for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null; done; lib_cleanup; }
trap cleanup_hosts EXIT
# start HOST [flags...]: kvsnapd with HOST's state, socket and log
start() {
	local h=$1; shift
	"$D" --state "$T/$h" --socket "$T/$h.sock" "${P[@]}" -t 1 --workers 2 \
		--log-level info "$@" 2>>"$T/$h.log" &
	PIDS[$h]=$!
	DPID=$!
	wait_ready proto "$h" '{"id":0,"op":"hello"}'
}
# stop HOST: SIGTERM; it must exit 0 (under the sanitizers: no leak, no error)
stop() {
	local rc
	kill -TERM "${PIDS[$1]}"; DPID=${PIDS[$1]}; wait_exit; rc=$?; unset "PIDS[$1]"
	ok "host ${1^^} stops cleanly (exit $rc)" $rc
}
count() { grep -c "$2" "$T/$1.log"; }

start a --shared "$SHARED"; ok "host A starts with a shared tier" $?
start b --shared "$SHARED"; ok "host B starts with the same shared tier" $?
proto a '{"id":0,"op":"hello"}' > "$T/o"
[ "$(field "$T/o" shared.up)" = true ] && [ "$(field "$T/o" shared.addr)" = "$SHARED" ]
ok "hello names the shared tier, up" $?

# ---- A ingests; B answers from the shared copy, no model pass
ingest a "$T/doc1.txt" doc1 > "$T/ia"
[ "$(field "$T/ia" skipped)" = false ] && [ "$(field "$T/ia" shared)" = true ]
ok "A ingests doc1: stored locally and in the shared tier" $?
read_s=$(field "$T/ia" seconds)
DOC1=$(field "$T/ia" doc_id)
expect_rc "kvsnap ls --shared lists what A stored" 0 "$K" ls --shared "$SHARED"
grep -q doc1 "$T/out"; ok "  ... doc1 among them" $?
expect_rc "B's local tier does not hold doc1 yet" 2 "$K" info --state "$T/b" doc1
ask a doc1 > "$T/qa"
ask b doc1 > "$T/qb"
[ "$(field "$T/qb" event)" = result ] && [ "$(field "$T/qb" tier)" = shared ]
ok "B answers doc1 from the shared tier (tier: shared)" $? || tail -2 "$T/qb"
[ -n "$(texts "$T/qa")" ] && [ "$(texts "$T/qa")" = "$(texts "$T/qb")" ]
ok "B's answer equals A's token for token" $? || { tail -2 "$T/qa"; tail -2 "$T/qb"; }
[ "$(count b "shared-tier hit")" -ge 1 ] && [ "$(count b "ingested")" -eq 0 ] &&
	! grep -q '"prefill"' "$T/qb"
ok "B's log shows a shared-tier hit and no model pass over the document" $?
grep -q "copied the snapshot of ${DOC1:0:12} out ([1-9][0-9]* bytes in .* MB/s)" "$T/a.log" &&
	grep -q "copied the snapshot of ${DOC1:0:12} in ([1-9][0-9]* bytes in .* MB/s)" "$T/b.log"
ok "the copies' sizes and rates in the logs (A's out, B's in)" $?
ttft_b=$(field "$T/qb" ttft_s)
python3 -c "import sys; sys.exit(0 if $ttft_b < 0.5 * $read_s else 1)"
ok "B's time to first token ($ttft_b s) is a snapshot load, well under A's read of doc1 ($read_s s)" $?
ask b doc1 > "$T/qb2"
[ "$(field "$T/qb2" tier)" = local ]; ok "B's next query of doc1 is a local hit" $? || tail -2 "$T/qb2"
echo "# ttft: shared-tier miss then local copy $ttft_b s, local hit $(field "$T/qb2" ttft_s) s, re-read (ingest) $read_s s"
proto b '{"id":3,"op":"stats"}' > "$T/sb"
[ "$(field "$T/sb" shared.hits)" = 1 ] && [ "$(field "$T/sb" shared.errors)" = 0 ]
ok "B's stats: one shared-tier hit, no errors" $?
expect_rc "kvsnap stats shows B's shared-tier counters" 0 "$K" stats --state "$T/b" -s "$T/b.sock"
grep -q "shared tier.*1 hit" "$T/out"; ok "  ... 1 hit" $? || cat "$T/out"
expect_rc "kvsnap stats --json through B" 0 "$K" stats --json --state "$T/b" -s "$T/b.sock"
python3 - docs/JSON.md "$T/out" <<'PY'; ok "  ... its shared member as docs/JSON.md's shared_tier says" $?
import json, re, sys
# the shared_tier section only: the types after it have tables of their own
md = open(sys.argv[1]).read().split("## Type `shared_tier`", 1)[1].split("\n## ", 1)[0]
spec = dict(re.findall(r"^\| (\w+) \| ([\w?]+) \|", md, re.M))
spec.pop("member", None)
o = json.loads(open(sys.argv[2]).read().splitlines()[-1])["shared"]
py = {"string": str, "integer": int, "boolean": bool}
assert set(o) <= set(spec), set(o) - set(spec)
for k, t in spec.items():
    assert k in o or t.endswith("?"), k
    assert k not in o or type(o[k]) is py[t.rstrip("?")], k
assert o["hits"] == 1 and o["up"] is True
PY

# ---- B ingests what A stored: skipped, copied in, no prefill
ingest a "$T/doc2.txt" doc2 > /dev/null
ingest b "$T/doc2.txt" > "$T/ib"
[ "$(field "$T/ib" skipped)" = true ] && [ "$(field "$T/ib" tier)" = shared ] &&
	! grep -q '"prefill"' "$T/ib"
ok "B's ingest of doc2 skips: a shared-tier hit, no prefill progress" $? || cat "$T/ib"
expect_rc "doc2 is in B's local tier now" 0 "$K" info --state "$T/b" doc2
ingest a "$T/doc5.txt" doc5 > /dev/null
expect_rc "kvsnap ingest through B of a file A stored" 0 "$K" ingest -s "$T/b.sock" "$T/doc5.txt"
grep -q "already stored in the shared tier, copied here" "$T/out"; ok "  ... says it came from the shared tier" $? || cat "$T/out"

# ---- corruption in the shared tier: reported, never answered, never copied
ingest a "$T/doc3.txt" doc3 > "$T/i3"
DOC3=$(field "$T/i3" doc_id)
tier_flip "$DOC3"; ok "flip a byte in the shared copy of doc3" $?
expect_rc "kvsnap verify --shared finds it" 4 "$K" verify --shared "$SHARED"
ask b doc3 > "$T/q3"
[ "$(field "$T/q3" code)" = corrupt ] && ! grep -q '"token"' "$T/q3"
ok "B's query of doc3: error corrupt, no token" $? || tail -1 "$T/q3"
expect_rc "nothing of doc3 copied into B's local tier" 2 "$K" info --state "$T/b" "$DOC3"
proto b '{"id":3,"op":"stats"}' > "$T/sb"
[ "$(field "$T/sb" shared.errors)" -ge 1 ]; ok "B's stats count the error" $?
misses=$(field "$T/sb" shared.misses)
ask b no-such-doc > "$T/qn"
proto b '{"id":3,"op":"stats"}' > "$T/sb"
[ "$(field "$T/qn" code)" = not_found ] && [ "$(field "$T/sb" shared.misses)" -eq $((misses + 1)) ]
ok "a document neither tier holds: not_found, one shared-tier miss more" $?
ingest b "$T/doc3.txt" > "$T/i3b"
[ "$(field "$T/i3b" skipped)" = false ] && [ "$(field "$T/i3b" shared)" = true ]
ok "B's ingest of doc3 reads it again and replaces the corrupt shared copy" $?
expect_rc "kvsnap verify --shared: sound again" 0 "$K" verify --shared "$SHARED"

# ---- the shared tier unreachable: both hosts go on from their local tier
stop a; stop b
tier_break
start a --shared "$SHARED"; ok "A starts with the shared tier unreachable" $?
cat > "$T/b.conf" <<EOF
shared = $SHARED
EOF
start b --config "$T/b.conf"; ok "B starts too (shared = in its config file)" $?
proto a '{"id":0,"op":"hello"}' > "$T/o"
[ "$(field "$T/o" shared.up)" = false ] && [ -n "$(field "$T/o" shared.error)" ]
ok "hello: shared tier down, with the reason" $?
ask b doc1 > "$T/qd"
[ "$(field "$T/qd" event)" = result ] && [ "$(field "$T/qd" tier)" = local ]
ok "B answers doc1 from its local tier" $?
ask a doc2 > "$T/qd"
[ "$(field "$T/qd" event)" = result ]; ok "A answers doc2 from its local tier" $?
ingest a "$T/doc4.txt" doc4 > "$T/i4"
[ "$(field "$T/i4" skipped)" = false ] && [ "$(field "$T/i4" shared)" = false ] &&
	grep -q unreachable "$T/i4"
ok "A's ingest of doc4 stores locally; the result says shared: false, and why" $?
expect_rc "kvsnap ingest through B while the tier is down" 0 "$K" ingest -s "$T/b.sock" --force "$T/doc3.txt"
grep -q "warning: .*not in its shared tier: shared tier unreachable" "$T/err"; ok "  ... warns: stored locally only" $? || cat "$T/err"
ask b doc2 > /dev/null; ask b doc2 > /dev/null
[ "$(count a "shared tier .* unreachable")" -eq 1 ] && [ "$(count b "shared tier .* unreachable")" -eq 1 ]
ok "one warning per host for the outage, not one per request" $?
proto a '{"id":3,"op":"stats"}' > "$T/sa"
[ "$(field "$T/sa" shared.up)" = false ] && [ "$(field "$T/sa" shared.errors)" -ge 1 ]
ok "A's stats: down, errors counted" $?
tier_mend
for i in $(seq 1 30); do
	sleep 0.5
	ingest a "$T/doc4.txt" > "$T/i4b"
	[ "$(field "$T/i4b" shared)" = true ] && break
done
[ "$(field "$T/i4b" skipped)" = true ] && [ "$(field "$T/i4b" shared)" = true ]
ok "the tier back: A's ingest of doc4 skips locally and copies it to the tier" $?
grep -q "reachable again" "$T/a.log"; ok "A's log says the tier is back" $?
# B finds it back through its own prober (backoff up to 8 s: until then a
# document only the tier holds is tier_unavailable there, never not_found)
for i in $(seq 1 40); do
	proto b '{"id":0,"op":"hello"}' > "$T/o"
	[ "$(field "$T/o" shared.up)" = true ] && break
	sleep 0.5
done
[ "$(field "$T/o" shared.up)" = true ]; ok "B's prober finds the tier back (hello: up)" $?
expect_rc "B answers doc4 (ingested during the outage)" 0 "$K" query -v -s "$T/b.sock" -n 2 doc4 "Who?"
grep -q "fetched from the shared tier" "$T/err"; ok "  ... from the shared tier (query -v says so)" $? || cat "$T/err"
stop a; stop b

# ---- credentials: a file others may read is refused at start
printf 'user = %s\npassword = %s\n' "$TIER_USER" "$TIER_PASS" > "$T/auth"
chmod 644 "$T/auth"
timeout 60 "$D" --state "$T/a" --socket "$T/a.sock" "${P[@]}" --shared "$SHARED" \
	--shared-auth "$T/auth" 2> "$T/auth.err"
rc=$?
[ $rc -ne 0 ] && grep -q "open to group or others.*chmod 600" "$T/auth.err"
ok "credentials file of mode 0644 refused at start (exit $rc)" $? || cat "$T/auth.err"
chmod 600 "$T/auth"
start a --shared "$SHARED" --shared-auth "$T/auth"; ok "mode 0600: starts" $?
grep -qF "$TIER_PASS" "$T/a.log"; [ $? -ne 0 ]; ok "the password is never logged" $?
stop a
expect_rc "kvsnap ls --shared-auth with a 0600 file" 0 "$K" ls --shared "$SHARED" --shared-auth "$T/auth"
chmod 640 "$T/auth"
expect_rc "kvsnap ls --shared-auth with a 0640 file: usage error" 1 "$K" ls --shared "$SHARED" --shared-auth "$T/auth"
grep -q "chmod 600" "$T/err"; ok "  ... naming the fix" $?
printf '# the tier\n\n\tuser =  %s \r\n  password=%s\t\n' "$TIER_USER" "$TIER_PASS" > "$T/auth2"
chmod 600 "$T/auth2"
expect_rc "comments, blank lines, blanks around the values and CRLF will do" 0 "$K" ls --shared "$SHARED" --shared-auth "$T/auth2"
printf 'kvsnap s3cret\n' > "$T/auth3"; chmod 600 "$T/auth3"
expect_rc "a line without '=': refused" 1 "$K" ls --shared "$SHARED" --shared-auth "$T/auth3"
grep -q "line 1: want 'user = NAME' or 'password = SECRET'" "$T/err"; ok "  ... saying what it must hold" $? || cat "$T/err"

# ---- the CLI on the shared tier
expect_rc "kvsnap info --shared doc1" 0 "$K" info --shared "$SHARED" doc1
expect_rc "kvsnap prune --shared --keep 3 --dry-run" 0 "$K" prune --shared "$SHARED" --keep 3 --dry-run
grep -q "would drop 2 snapshots" "$T/out"; ok "  ... would drop two of five" $? || cat "$T/out"
expect_rc "kvsnap rm --shared doc2" 0 "$K" rm --shared "$SHARED" doc2
expect_rc "doc2 is gone from the shared tier" 2 "$K" info --shared "$SHARED" doc2
expect_rc "doc2 is still in B's local tier" 0 "$K" info --state "$T/b" doc2
expect_rc "--state and --shared together: usage" 1 "$K" ls --state "$T/b" --shared "$SHARED"
# only an LMDB directory can be a fresh, empty store; a network address is asked
expect_rc "ls --state lmdb:DIR of a fresh directory: empty" 0 "$K" ls --state "lmdb:$T/fresh"
grep -q "no documents" "$T/out" && [ ! -e "$T/fresh" ]; ok "  ... and nothing created" $?
expect_rc "ls --state redis-cluster:ADDR unreachable: an error, not an empty store" 5 \
	"$K" ls --state redis-cluster:127.0.0.1:1
grep -q "no documents" "$T/out"; [ $? -ne 0 ] && grep -q "cannot open the store" "$T/err"
ok "  ... saying it cannot open it" $? || cat "$T/out" "$T/err"
expect_rc "stats --state redis-cluster:ADDR unreachable: an error" 5 \
	"$K" stats --state redis-cluster:127.0.0.1:1
! grep -q "Sanitizer\|runtime error" "$T/a.log" "$T/b.log"; ok "no sanitizer report in either log" $?
finish
