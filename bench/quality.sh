#!/usr/bin/env bash
# Answer quality of the eviction policies (bench/bench_quality.c): every
# policy × budget 1/4..1/32 of the document × 2K/4K/8K tokens, passkey,
# multi-key needles and next-token fidelity against the full cache.
#
#   usage: bench/quality.sh [--smoke] [--out DIR] [--png FILE] [-- BENCH_QUALITY_OPTIONS]
#
# The full grid takes hours on two cores; it is resumable and made to run in
# the background:
#   nohup bench/quality.sh >/dev/null 2>&1 &   tail -f build/quality/quality.log
# Rows are appended to DIR/quality.jsonl as they finish; run the same command
# again after a stop and it goes on with the rows that are missing (remove
# DIR to start afresh; other options need a fresh DIR).  At the end it writes
# DIR/quality.md (the table for bench/RESULTS.md, with the command) and the
# plot (default bench/quality.png; needs python3-matplotlib).
# --smoke: the reduced grid of make check (one length, < 1 min), into
# build/quality-smoke, always from scratch.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
MODEL=models/SmolLM2-135M-Instruct.Q4_1.gguf
SMOKE=0 OUT= PNG=
ARGS=()
while [ $# -gt 0 ]; do
	case $1 in
	--smoke) SMOKE=1 ;;
	--out) OUT=$2; shift ;;
	--png) PNG=$2; shift ;;
	--) shift; ARGS+=("$@"); break ;;
	*) ARGS+=("$1") ;;
	esac
	shift
done
if [ "$SMOKE" = 1 ]; then
	OUT=${OUT:-$BUILD/quality-smoke}
	PNG=${PNG:-$OUT/quality.png}
	ARGS=(--smoke "${ARGS[@]}")
	rm -rf "$OUT"
else
	OUT=${OUT:-$BUILD/quality}
	PNG=${PNG:-bench/quality.png}
fi
BIN=$BUILD/bench/bench_quality
[ -x "$BIN" ] || make --no-print-directory all
[ -f "$MODEL" ] || make --no-print-directory model
mkdir -p "$OUT"
JSONL=$OUT/quality.jsonl LOG=$OUT/quality.log
# a resumed run must be the same run
want="-m $MODEL ${ARGS[*]}"
if [ -f "$OUT/args" ] && [ "$(cat "$OUT/args")" != "$want" ]; then
	echo "quality: $OUT holds a run with other options ($(cat "$OUT/args")); use --out or remove it" >&2
	exit 2
fi
echo "$want" > "$OUT/args"
touch "$JSONL"
# the engine each (re)start ran, for the table
rev=$(git describe --always --dirty 2>/dev/null || echo unknown)
grep -qxF "$rev" "$OUT/revs" 2>/dev/null || echo "$rev" >> "$OUT/revs"
echo "quality: $(date -u +%FT%TZ) $BIN $want" >> "$LOG"
# pod's block map: calibrated once per output directory (deterministic for
# the model, so not part of the run's options)
EXTRA=()
# (not needed when the policies are named and none of them is pod)
need_map=1
case " ${ARGS[*]} " in
*" --policies "* | *" --policy "*)
	need_map=0
	for ((i = 0; i < ${#ARGS[@]} - 1; i++)); do
		case ${ARGS[i]} in --policies | --policy)
			[[ ",${ARGS[i + 1]}" == *,pod* ]] && need_map=1 ;;
		esac
	done ;;
esac
if [ "$SMOKE" = 0 ] && [ "$need_map" = 1 ]; then
	MAP=$OUT/pod-map.json
	if [ ! -f "$MAP" ]; then
		echo "quality: calibrating pod's block map into $MAP" >> "$LOG"
		"$BUILD/kvsnap" pod-calibrate -m "$MODEL" -o "$MAP" >> "$LOG" 2>&1
	fi
	EXTRA=(--pod-map "$MAP")
fi
# progress lines go to the log and, on a terminal, to the screen
"$BIN" -m "$MODEL" "${ARGS[@]}" "${EXTRA[@]}" --json --resume "$JSONL" >> "$JSONL" 2> >(tee -a "$LOG" >&2)

cmd="bench/quality.sh${ARGS[*]:+ ${ARGS[*]}}"
python3 - "$JSONL" "$cmd" "$OUT/revs" > "$OUT/quality.md" <<'PY'
import json, sys
rows, skips = [], {}
for line in open(sys.argv[1]):
    line = line.strip()
    if not line:
        continue
    r = json.loads(line)
    if "skip" in r:
        at = f" at 1/{r['fraction']}, {r['length']} tokens" if "fraction" in r else ""
        skips[r["skip"] + at] = r["why"]
    else:
        rows.append(r)
if not rows:
    sys.exit("quality: no rows")
cpu = "?"
for line in open("/proc/cpuinfo"):
    if line.startswith("model name"):
        cpu = line.split(":", 1)[1].strip()
        break
rev = ", ".join(l.strip() for l in open(sys.argv[3]) if l.strip())
lengths = sorted({r["length"] for r in rows})
specs = []
for r in rows:
    if r["spec"] not in specs:
        specs.append(r["spec"])
specs.sort(key=lambda s: s != "full")
cell = {(r["spec"], r["fraction"], r["length"]): r for r in rows}
fracs = sorted({r["fraction"] for r in rows})
any_r = rows[0]
pk_n = max((r.get("passkey_n", 0) for r in rows), default=0)
mk_n = max((r.get("multikey_n", 0) for r in rows), default=0)
n_of = {L: max(r["n"] for r in rows if r["length"] == L) for L in lengths}
print(f"Command: `{sys.argv[2]}` (engine {rev}, seed {any_r['seed']}, chunk {any_r['chunk']}); "
      f"machine: {cpu}.")
print()
print(f"Budget = fraction of the ingested tokens n (units per KV head per layer); `full` is the "
      f"ceiling. passkey: hits over {pk_n} depths 0..100 % (noise haystack); multikey: keys "
      f"found of {mk_n} (RULER needles in license prose); KL: mean KL(full ‖ policy) over the 64 "
      f"next tokens after the prose document; top-1: share of those whose argmax agrees.")
print()
head = ["policy", "budget"]
for L in lengths:
    t = f"{L // 1024}K" if L % 1024 == 0 else str(L)
    head += [f"{t} passkey", f"{t} multikey", f"{t} KL", f"{t} top-1"]
print("| " + " | ".join(head) + " |")
print("|---|---|" + "---:|" * (4 * len(lengths)))
def frac_str(r, f):
    return "all" if r["spec"] == "full" else f"1/{f}"
for s in specs:
    for f in fracs:
        got = [cell.get((s, f, L)) for L in lengths]
        if not any(got):
            continue
        r0 = next(g for g in got if g)
        line = [s, frac_str(r0, f)]
        for g in got:
            if not g:
                line += ["", "", "", ""]
                continue
            line.append(f"{g['passkey_hits']}/{g['passkey_n']}" if "passkey_n" in g else "–")
            line.append(f"{g['multikey_hits']}/{g['multikey_n']}" if "multikey_n" in g else "–")
            line.append(f"{g['kl']:.4f}" if "kl" in g else "–")
            line.append(f"{100 * g['top1']:.0f} %" if "top1" in g else "–")
        print("| " + " | ".join(line) + " |")
print()
print("n per length: " + ", ".join(f"{L} → {n_of[L]} tokens" for L in lengths) + "; "
      f"total {sum(r['seconds'] for r in rows) / 60:.0f} min of bench time.")
for s, why in skips.items():
    print(f"Not run: {s} ({why}).")
PY
cat "$OUT/quality.md"
if /usr/bin/python3 -c "import matplotlib" 2>/dev/null; then
	/usr/bin/python3 bench/plot_quality.py "$JSONL" "$PNG" && echo "quality: plot in $PNG" >&2
else
	echo "quality: no plot (apt-get install python3-matplotlib)" >&2
fi
