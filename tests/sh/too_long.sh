#!/usr/bin/env bash
# A document too long to store is refused before any prefill (issue 15,
# defect 4), through kvsnapd and with ingest --local, with the same
# too_long error as before: one of ~3 windows (refused by its token count)
# and one of 20 MB (refused by its bytes alone, untokenized).  Since issue
# 29 a document longer than the window is stored in parts (tests/sh/
# parts.sh) and too long means over 1024 parts (SVC_PARTS_MAX): parts of
# 16 tokens here (--part-tokens 16), so ~3 windows need ~1500.  The
# old code prefilled a whole window first: the refusal must take less than
# a quarter of a window's prefill, estimated as 8 times a measured prefill
# of an eighth of a window, and the daemon must post no prefill progress.
set -u
. "$(dirname "$0")/lib.bash"
daemon_scratch toolong
# the policy does not matter to the refusal; snapkv keeps the measured
# prefill plain (kvzip adds reconstruction passes)
P=(--policy snapkv --budget 64 --chunk 256)

# the window: llama.context_length in the model's GGUF
n_ctx=$(python3 - "$MODEL" <<'PY'
import struct, sys
f = open(sys.argv[1], "rb")
def u(fmt): return struct.unpack("<" + fmt, f.read(struct.calcsize("<" + fmt)))[0]
def s(): return f.read(u("Q")).decode()
size = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
def skip(t):
    if t == 8: s()
    elif t == 9:
        et, n = u("I"), u("Q")
        for _ in range(n): skip(et)
    else: f.read(size[t])
assert f.read(4) == b"GGUF"
u("I"); u("Q"); n_kv = u("Q")
for _ in range(n_kv):
    k, t = s(), u("I")
    if k.endswith(".context_length"): print(u("I") if t == 4 else u("Q")); break
    skip(t)
PY
)
[ -n "$n_ctx" ] && [ "$n_ctx" -gt 0 ]; ok "the model's window: $n_ctx tokens" $? || { finish; exit 1; }

# license prose, repeated: ~4 bytes a token, so 12 bytes a window's token
# is ~3 windows; an eighth of a window is ~n_ctx/2 bytes
prose() { # BYTES: license text repeated to BYTES bytes
	local f
	for f in GPL-3 Apache-2.0 LGPL-2.1 Artistic MPL-2.0; do
		[ -f "/usr/share/common-licenses/$f" ] && cat "/usr/share/common-licenses/$f"
	done > "$T/lic"
	python3 -c 'import sys; t = open(sys.argv[1], "rb").read(); n = int(sys.argv[2]); sys.stdout.buffer.write((t * (n // len(t) + 1))[:n])' "$T/lic" "$1"
}
prose $((12 * n_ctx)) > "$T/long.txt"
prose $((n_ctx / 2)) > "$T/eighth.txt"
prose $((20 << 20)) > "$T/huge.txt"
now() { date +%s.%N; }
elapsed() { python3 -c "import sys; print(float(sys.argv[2]) - float(sys.argv[1]))" "$@"; }
lt() { python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) < float(sys.argv[2]) else 1)" "$@"; }

# ---- ingest --local: measure an eighth of a window's prefill, then refuse
t0=$(now)
expect_rc "ingest --local an eighth of a window" 0 "$K" ingest --local "${P[@]}" -t 2 "$T/eighth.txt" --name eighth
eighth=$(elapsed "$t0" "$(now)")
tokens=$(grep -o '[0-9]* tokens' "$T/out" | cut -d' ' -f1)
# 2 × an eighth = a quarter of a window's prefill (attention makes a
# whole window cost more than 8 eighths: the estimate is generous)
quarter=$(python3 -c "import sys; print(2 * float(sys.argv[1]))" "$eighth")
echo "# an eighth of a window: ${tokens:-?} tokens in $eighth s; a quarter window: $quarter s"
t0=$(now)
TOO=(--part-tokens 16) # over 1024 parts for either document
expect_rc "ingest --local of ~3 windows: exit 4 (unsupported input, not usage)" 4 "$K" ingest --local "${P[@]}" "${TOO[@]}" -t 2 "$T/long.txt" --name long
dt=$(elapsed "$t0" "$(now)")
grep -q "more tokens than the context window" "$T/err"; ok "--local: the engine's too-long message" $? ||
	sed 's/^/#   /' "$T/err" | tail -3
lt "$dt" "$quarter"; ok "--local refused in $dt s, under a quarter of a window's prefill (8 x $eighth s)" $?
t0=$(now)
expect_rc "ingest --local of 20 MB: exit 4" 4 "$K" ingest --local "${P[@]}" "${TOO[@]}" -t 2 "$T/huge.txt"
dt=$(elapsed "$t0" "$(now)")
grep -q "at least [0-9]* tokens: more tokens than the context window" "$T/err"
ok "--local: 20 MB refused by its bytes alone" $? || sed 's/^/#   /' "$T/err" | tail -3
lt "$dt" "$quarter"; ok "--local: 20 MB refused in $dt s" $?
"$K" ls > "$T/ls" 2>&1
grep -q eighth "$T/ls" && ! grep -q " long" "$T/ls"; ok "nothing stored for the refused ones" $?

# ---- through the daemon: too_long, and no prefill progress before it
"$D" --foreground --state "$KVSNAP_STATE" --socket "$KVSNAP_SOCKET" "${P[@]}" -t 2 \
	--log-level debug 2>>"$T/daemon.log" &
DPID=$!
wait_ready daemon_ready; ok "daemon starts" $?
for doc in long huge; do
	t0=$(now)
	EXPECT_TIMEOUT=300 expect_rc "daemon: ingest of $doc: exit 4" 4 "$K" ingest --json "${TOO[@]}" "$T/$doc.txt"
	dt=$(elapsed "$t0" "$(now)")
	grep -q "(too_long)\|too_long" "$T/err"; ok "daemon: $doc is too_long" $? ||
		sed 's/^/#   /' "$T/err" | tail -3
	! grep -q '"event":"progress".*"done":[1-9]' "$T/out"; ok "daemon: no prefill progress for $doc" $?
	lt "$dt" "$quarter"; ok "daemon: $doc refused in $dt s" $?
done
kill -TERM "$DPID"; wait_exit; ok "daemon stops: exit 0" $?

if [ "$fail" -ne 0 ]; then echo "# daemon log (tail):"; tail -n 20 "$T/daemon.log" | sed 's/^/#   /'; fi
finish
