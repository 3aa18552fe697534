#!/usr/bin/env bash
# The command lines of kvsnap and kvsnapd (issue 16): global flags before
# or after the command (and refused, with the reason, by a command they do
# not apply to), usage errors that name the argument and the fix on one
# line plus "run 'kvsnap CMD -h' for help", unquoted questions joined,
# --version, one parser of the profile flags (the same words from kvsnap
# and kvsnapd), query's --temp/--top-p/--seed (the daemon and --local
# agree), and the notice of a query or ingest queued behind a running
# ingest (kvsnapd --workers 1).  Most checks need neither model nor daemon;
# one daemon serves the rest.
set -u
. "$(dirname "$0")/lib.bash"
need "$K" "$D"
scratch cli-args
EXPECT_TIMEOUT=120

# usage_err DESC WANT_LINE1 CMD...: exit 1, nothing on stdout, and stderr
# exactly two lines: WANT_LINE1 ("PROG: ...") and "run 'PROG -h' for help".
usage_err() {
	local d=$1 want=$2 help; shift 2
	expect_rc "$d" 1 "$@"
	help="run '${want%%:*} -h' for help" # "kvsnap query: ..." -> kvsnap query -h
	[ "$(sed -n 1p "$T/err")" = "$want" ] && [ "$(sed -n 2p "$T/err")" = "$help" ] &&
		[ "$(wc -l < "$T/err")" -eq 2 ] && usage_out "${want#*: }" "$@"
	ok "  says: $want" $? || sed 's/^/#   got: /' "$T/err" "$T/out"
}
# stdout: nothing, or with --json the same message as one error event (docs/JSON.md)
usage_out() {
	local msg=$1 a; shift
	for a; do [ "$a" = -- ] && break; [ "$a" = --json ] || [ "${a#--json=}" != "$a" ] && {
		python3 - "$T/out" "$msg" <<'PY'
import json, sys
lines = open(sys.argv[1]).read().splitlines()
e = json.loads(lines[0]) if len(lines) == 1 else {}
sys.exit(0 if e == {"event": "error", "code": "usage", "message": sys.argv[2], "exit": 1} else 1)
PY
		return; }; done
	[ ! -s "$T/out" ]
}

# ---- usage errors name the argument and the fix (no model, no daemon)
usage_err "query -n -5" "kvsnap query: -n needs a whole number from 1 to 4096, got '-5'" \
	"$K" query -n -5 DOC Q
usage_err "query without a question" "kvsnap query: missing QUESTION (kvsnap query DOC QUESTION...)" \
	"$K" query DOC
usage_err "query --budgett: the nearest option, and where engine settings belong" \
	"kvsnap query: unknown option '--budgett' (did you mean --budget? engine settings such as --budget belong to kvsnapd or --local)" \
	"$K" query --budgett 5 DOC Q
usage_err "query --fil: the nearest option, no engine hint" \
	"kvsnap query: unknown option '--fiel' (did you mean --file?)" "$K" query --fiel x DOC Q
usage_err "query --budget without --local" \
	"kvsnap query: --budget is not an option here (engine settings such as --budget belong to kvsnapd or --local)" \
	"$K" query --budget 5 DOC Q
usage_err "a missing value" "kvsnap query: -n needs a value" "$K" query DOC Q -n
usage_err "a missing long value" "kvsnap ingest: --name needs a value" "$K" ingest f --name
usage_err "an abbreviation missing its value" "kvsnap ingest: --name needs a value" \
	"$K" ingest f --nam
usage_err "an unknown letter in a cluster after a long flag" "kvsnap query: unknown option '-x'" \
	"$K" query --json -vx DOC Q
usage_err "a value to a flag that takes none" \
	"kvsnap ls: --json takes no value, got '--json=yes'" "$K" ls --json=yes
usage_err "an ambiguous abbreviation" \
	"kvsnap ingest: '--s' is ambiguous: --share, --socket, --state" "$K" ingest --s x f
usage_err "an extra operand" "kvsnap info: unexpected argument 'b' (kvsnap info DOC)" \
	"$K" info a b
usage_err "ingest --local --force" \
	"kvsnap ingest: --force is not an option here (--force belongs to the daemon path, without --local)" \
	"$K" ingest --local --force f
usage_err "prune without a limit" \
	"kvsnap prune: give at least one of --older-than AGE, --max-size BYTES, --keep N" "$K" prune
usage_err "query --temp 3" "kvsnap query: --temp needs a number from 0 to 2, got '3'" \
	"$K" query --temp 3 DOC Q
usage_err "query --top-p 0" \
	"kvsnap query: --top-p needs a number greater than 0 and at most 1, got '0'" \
	"$K" query --top-p 0 DOC Q
usage_err "generate takes the same sampling flags, same words" \
	"kvsnap generate: --temp needs a number from 0 to 2, got '3'" "$K" generate -p hi --temp 3
usage_err "query --seed -1" \
	"kvsnap query: --seed needs a whole number from 0 to 9223372036854775807, got '-1'" \
	"$K" query --seed -1 DOC Q
expect_rc "an unknown command" 1 "$K" quer DOC Q
[ "$(cat "$T/err")" = "kvsnap: unknown command 'quer' (did you mean query?)
run 'kvsnap -h' for the commands" ]; _s=$?; ok "  suggests the nearest: $(head -1 "$T/err")" $_s
expect_rc "no command" 1 "$K" --json
grep -q "missing COMMAND" "$T/err"; ok "  says the command is missing" $?

# ---- global flags that do not apply say so
usage_err "tokenize -s" \
	"kvsnap tokenize: --socket does not apply to \`kvsnap tokenize\` (it runs without kvsnapd)" \
	"$K" tokenize -s /nowhere hi
usage_err "-s before a command it does not apply to" \
	"kvsnap ls: --socket does not apply to \`kvsnap ls\` (it runs without kvsnapd)" \
	"$K" -s /nowhere ls
usage_err "query --state without --local" \
	"kvsnap query: --state does not apply to \`kvsnap query\` (kvsnapd's own --state is its store; add --local to use DIR here)" \
	"$K" query --state "$T/st" DOC Q
usage_err "ask --json" "kvsnap ask: --json does not apply to \`kvsnap ask\` (it has no JSON output)" \
	"$K" ask --json f q
usage_err "ls --backend" "kvsnap ls: --backend does not apply to \`kvsnap ls\` (it runs no model)" \
	"$K" ls --backend cpu

# ---- -s/--socket before or after the command: the socket named is the one tried
for form in "-s $T/a.sock ingest $T/f" "ingest $T/f -s $T/a.sock" "--socket=$T/a.sock ingest $T/f" \
	"query DOC Q --socket $T/a.sock" "-s $T/a.sock query DOC what is this"; do
	echo x > "$T/f"
	expect_rc "kvsnap $form: reaches for that socket" 3 "$K" $form
	grep -q "cannot reach kvsnapd at $T/a.sock" "$T/err"; ok "  names it" $? ||
		sed 's/^/#   /' "$T/err"
done

# ---- --backend before or after: an unknown one is refused by name (exit 6)
for form in "--backend tpu generate -p hi -n 1" "generate -p hi -n 1 --backend tpu"; do
	expect_rc "kvsnap $form" 6 "$K" $form
	grep -q "unknown backend 'tpu'" "$T/err"; ok "  refused by name" $?
done

# ---- -h before or after, and `help CMD`: the command's help on stdout, exit 0
"$K" query -h > "$T/h1"; r1=$?
"$K" -h query > "$T/h2"; r2=$?
"$K" help query > "$T/h3"; r3=$?
[ $r1 -eq 0 ] && [ $r2 -eq 0 ] && [ $r3 -eq 0 ] && grep -q "^usage: kvsnap query" "$T/h1" &&
	cmp -s "$T/h1" "$T/h2" && cmp -s "$T/h1" "$T/h3"
ok "query -h, -h query and help query print the same help" $?
grep -q -- "--temp T" "$T/h1" && grep -q -- "--seed S" "$T/h1"; ok "  naming --temp and --seed" $?
"$K" -h > "$T/h4" && grep -q -- "--version" "$T/h4" && grep -q -- "-s, --socket SOCK" "$T/h4"
ok "kvsnap -h lists the global flags" $?

# ---- --version: one version, both programs, formats and backends
want=$(sed -n 's/^#define KVSNAP_VERSION "\(.*\)"/\1/p' common/version.h)
"$K" --version > "$T/v1" && "$K" ls --version > "$T/v2" && "$D" --version > "$T/v3"
ok "--version exits 0 (kvsnap, kvsnap ls, kvsnapd)" $?
[ "$(head -1 "$T/v1")" = "kvsnap $want" ] && [ "$(head -1 "$T/v3")" = "kvsnapd $want" ] &&
	cmp -s "$T/v1" "$T/v2"
ok "  kvsnap $want and kvsnapd $want" $?
grep -q "^protocol 2, snapshot format [0-9]*$" "$T/v1" && grep -q "^backends: cpu; cuda: " "$T/v1" &&
	[ "$(tail -n +2 "$T/v1")" = "$(tail -n +2 "$T/v3")" ]
_s=$?; ok "  the protocol, the snapshot format and whether CUDA is compiled in: $(tail -1 "$T/v1")" $_s
if ls "$BUILD"/kernels/cuda/*.o >/dev/null 2>&1; then
	grep -q "cuda: compiled in" "$T/v1"
else
	grep -q "cuda: not compiled in" "$T/v1"
fi
ok "  and that is what this build has" $?

# ---- the profile flags: one parser, one range, the same words everywhere
for t in "--chunk 0|--chunk needs a whole number from 1 to 65536, got '0'" \
	"--budget x|--budget needs a whole number from 1 to 1073741824, got 'x'" \
	"--ratio 2|--ratio needs a share in (0, 1] such as 0.25 or 1/4, got '2'" \
	"--quant q7|--quant needs one of fp16, q4, q4kc, q8, q4h, q4kch, q6h, q5h, q3h, k5v3h, k4v2h, k8v4h, got 'q7'"; do
	flag=${t%%|*} msg=${t#*|}
	usage_err "ingest --local $flag" "kvsnap ingest: $msg" "$K" ingest --local $flag f
	[ "$flag" = "--quant q7" ] ||
		usage_err "ask $flag" "kvsnap ask: $msg" "$K" ask $flag f q
	usage_err "kvsnapd $flag" "kvsnapd: $msg" "$D" $flag
done
usage_err "kvsnapd --budgett" "kvsnapd: unknown option '--budgett' (did you mean --budget?)" \
	"$D" --budgett 5
usage_err "kvsnapd --workers 0" "kvsnapd: --workers needs a whole number from 1 to 64, got '0'" \
	"$D" --workers 0
usage_err "kvsnapd with an operand" "kvsnapd: unexpected argument 'x' (kvsnapd takes options only)" \
	"$D" x
printf 'wrokers = 2\n' > "$T/typo.conf"
expect_rc "kvsnapd: a mistyped config key" 1 "$D" --config "$T/typo.conf"
grep -qx "kvsnapd: $T/typo.conf:1: unknown setting 'wrokers' (did you mean workers?)" "$T/err"
ok "  names the file, the line and the nearest key" $?
printf 'chunk = 0\n' > "$T/chunk.conf"
expect_rc "kvsnapd: a bad config value" 1 "$D" --config "$T/chunk.conf"
grep -qx "kvsnapd: $T/chunk.conf:1: chunk needs a whole number from 1 to 65536, got '0'" "$T/err"
ok "  in the same words as the flag" $?

# ---- from here on the model
if [ ! -e "$MODEL" ] || ! command -v python3 > /dev/null; then
	echo "# SKIP the rest: needs $MODEL (make model) and python3"
	finish
	exit
fi
words=300 # long enough that a second job arrives while it runs
is_san "$D" && words=80
prose Apache-2.0 60 > "$T/small.txt"
prose GPL-3 $words > "$T/long.txt"
prose LGPL-2.1 $words > "$T/long2.txt"

# unquoted words are one text
"$K" tokenize Hello world 2024 > "$T/t1" && "$K" tokenize "Hello world 2024" > "$T/t2" &&
	cmp -s "$T/t1" "$T/t2"
ok "tokenize Hello world 2024 == tokenize \"Hello world 2024\"" $?
"$K" -m "$T/none.gguf" tokenize hi > /dev/null 2> "$T/err"
grep -q "$T/none.gguf" "$T/err"; ok "-m before the command picks the model" $?
"$K" tokenize hi --model="$T/none.gguf" > /dev/null 2> "$T/err"
grep -q "$T/none.gguf" "$T/err"; ok "--model= after the command too" $?

# --state and --json before or after the command
S=$T/state
P=(--budget 64 --chunk 64)
expect_rc "ingest --local with --state after the command" 0 \
	"$K" ingest --local "${P[@]}" -t 2 "$T/small.txt" --name small --state "$S"
for form in "--state $S --json ls" "ls --state $S --json" "--json ls --state $S" "--json --state $S info small"; do
	expect_rc "kvsnap $form" 0 "$K" $form
	grep -q small "$T/out" && python3 -c 'import json,sys; [json.loads(l) for l in open(sys.argv[1]) if l.strip()]' "$T/out"
	ok "  JSON lines naming the document" $?
done

# --local: an unquoted question is the quoted one; "--" ends the options
Q="What is this document about?"
expect_rc "query --local, the question quoted" 0 "$K" query --local --state "$S" "${P[@]}" -t 2 -n 12 small "$Q"
cp "$T/out" "$T/quoted"
expect_rc "query --local, the question unquoted" 0 "$K" query --local --state "$S" "${P[@]}" -t 2 -n 12 small What is this document about?
cmp -s "$T/out" "$T/quoted" && [ -s "$T/quoted" ]; _s=$?; ok "  the same answer: $(head -c 60 "$T/quoted" | tr '\n' ' ')" $_s
usage_err "a question word that looks like an option" "kvsnap query: unknown option '-5'" \
	"$K" query --local --state "$S" "${P[@]}" small why -5 degrees
expect_rc "... is a word after --" 0 "$K" query --local --state "$S" "${P[@]}" -t 2 -n 2 small -- why -5 degrees

# sampling --local: reproducible for a seed, greedy at --temp 0.  Any
# kernel: each check compares answers computed in this run from the same
# snapshot; other seeds at temperature 1.5 agree on 16 tokens only by chance
SMP=(--temp 1.5 --top-p 0.95 -n 16)
"$K" query --local --state "$S" "${P[@]}" -t 2 "${SMP[@]}" --seed 7 small "$Q" > "$T/s7a" &&
	"$K" query --local --state "$S" "${P[@]}" -t 2 "${SMP[@]}" --seed 7 small "$Q" > "$T/s7b" &&
	cmp -s "$T/s7a" "$T/s7b"
ok "query --local --temp 1.5 --seed 7 twice: the same answer" $?
differ=1
for seed in 1 2 3 4; do
	"$K" query --local --state "$S" "${P[@]}" -t 2 "${SMP[@]}" --seed $seed small "$Q" > "$T/sx"
	cmp -s "$T/sx" "$T/s7a" || differ=0
done
ok "  other seeds give another answer" $differ
"$K" query --local --state "$S" "${P[@]}" -t 2 -n 12 --temp 0 --seed 9 small "$Q" > "$T/g0"
cmp -s "$T/g0" "$T/quoted"; ok "  --temp 0 is greedy" $?

# ---- the daemon: one model worker
export KVSNAP_STATE=$S
SOCK=$T/d.sock
"$D" --state "$S" --socket "$SOCK" "${P[@]}" -t 2 --workers 1 --log-level debug 2>> "$T/daemon.log" &
DPID=$!
hello() { python3 - "$SOCK" <<'PY'
import json, socket, sys
s = socket.socket(socket.AF_UNIX); s.settimeout(30); s.connect(sys.argv[1])
s.sendall(b'{"v":1,"id":0,"op":"hello"}\n')
print(json.loads(s.makefile().readline())["server"])
PY
}
wait_ready hello; ok "kvsnapd --workers 1 starts" $?
[ "$(hello)" = "kvsnapd $want" ]; ok "its hello says kvsnapd $want" $?

expect_rc "query through the daemon, -s after the command, unquoted" 0 \
	"$K" query -n 12 small What is this document about? -s "$SOCK"
cmp -s "$T/out" "$T/quoted"; ok "  the same answer as --local, quoted" $?
"$K" -s "$SOCK" query "${SMP[@]}" --seed 7 small "$Q" > "$T/d7"
cmp -s "$T/d7" "$T/s7a"; ok "query --temp 1.5 --top-p 0.95 --seed 7: the daemon answers as --local" $?

# a running ingest holds the only worker: the next job says it waits
# bg_ingest ARGS...: an ingest in the background ($BG), its --json lines in
# $T/bg.out; returns once it has reported progress (it is running)
bg_ingest() {
	: > "$T/bg.out"
	"$K" ingest -s "$SOCK" --json "$@" > "$T/bg.out" 2> "$T/bg.err" &
	BG=$!
	local i
	for i in $(seq 1 600); do
		grep -q progress "$T/bg.out" && return 0
		kill -0 $BG 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}
waiting="kvsnap: waiting for kvsnapd: 1 job running, 0 queued before this one"
bg_ingest --name long "$T/long.txt"; ok "a long ingest runs" $?
expect_rc "an ingest behind it" 0 "$K" ingest -s "$SOCK" --name long2 "$T/long2.txt"
grep -qx "$waiting" "$T/err"; ok "  says: $waiting" $? || sed 's/^/#   /' "$T/err"
wait $BG; ok "  and the first ingest ends well" $?

bg_ingest --force "$T/long.txt"; ok "a long ingest runs again (--force)" $?
expect_rc "a query behind it" 0 "$K" query -s "$SOCK" -n 12 small "$Q"
grep -qx "$waiting" "$T/err" && cmp -s "$T/out" "$T/quoted"
ok "  says it waits on stderr, then answers as ever on stdout" $? || sed 's/^/#   /' "$T/err"
wait $BG

bg_ingest --force "$T/long2.txt"; ok "and once more" $?
expect_rc "query --json behind it" 0 "$K" query --json -s "$SOCK" -n 4 small "$Q"
python3 - "$T/out" <<'PY'
import json, sys
evs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
q = [e for e in evs if e.get("event") == "queued"]
assert len(q) == 1 and q[0]["ahead"] == 0 and q[0]["running"] == 1, evs
assert evs[0] is q[0], evs          # before the answer
PY
_s=$?; ok "  passes the queued event on as a JSON line: $(head -1 "$T/out")" $_s
! grep -q waiting "$T/err"; ok "  and prints no notice on stderr" $?
wait $BG

sleep 0.5 # the worker frees itself just after its last event
expect_rc "a query with the worker free" 0 "$K" query -s "$SOCK" -n 4 small "$Q"
! grep -q waiting "$T/err"; ok "  does not say it waits" $?

kill -TERM "$DPID"; wait_exit; ok "kvsnapd stops" $?
finish
