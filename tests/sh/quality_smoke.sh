#!/usr/bin/env bash
# The quality bench's reduced grid (bench_quality --smoke: 1K tokens, full,
# snapkv, streaming and pod (on a small block map calibrated here) at 1/4 and
# 1/16, two passkey depths, four keys, fidelity), with sanity checks rather than quality thresholds:
# the full cache's continuation matches a plain forward pass exactly (KL 0,
# top-1 100 %); every policy returns every row with sane numbers; a
# compressed cache differs from the full one (KL > 0).  Pass keys found are
# reported, not asserted (greedy decoding of a 135M model: issue 25).
set -u
. "$(dirname "$0")/lib.bash"
need "$MODEL"
BIN=$BUILD/bench/bench_quality
[ -x "$BIN" ] || { echo "not ok - $BIN is missing"; exit 1; }
# sanitizer builds run ~10x slower: half the document length there
extra=()
is_san "$BIN" && extra=(--lengths 512)
scratch quality-smoke
MAP=$T/podmap.gguf
if ! "$BUILD/kvsnap" pod-calibrate -m "$MODEL" -N 2 --tokens 512 -o "$MAP" >/dev/null; then
	echo "not ok - kvsnap pod-calibrate failed"; exit 1
fi
out=$(timeout 900 "$BIN" -m "$MODEL" --smoke --json --policies full,snapkv,streaming,pod \
	--pod-map "$MAP" "${extra[@]}")
rc=$?
printf '%s\n' "$out"
[ "$rc" -eq 0 ] || { echo "not ok - bench_quality --smoke exited $rc"; exit 1; }
python3 - "$out" <<'PY'
import json, math, sys
rows = [json.loads(l) for l in sys.argv[1].splitlines() if l.startswith("{")]
rows = [r for r in rows if "skip" not in r]
ok = fail = 0
def check(cond, what):
    global ok, fail
    print(("ok - " if cond else "not ok - ") + what)
    ok, fail = ok + bool(cond), fail + (not cond)
full = [r for r in rows if r["spec"] == "full"]
check(len(full) == 1, "one full-cache row")
if full:
    f = full[0]
    # The full cache's pass-key hits were asserted (all of them); they come
    # from SmolLM2-135M's greedy digits, whose margin this bench does not
    # measure, so no test may rest on them on every BLAS kernel (issue 25):
    # the bench's number (bench/quality.sh), reported here.  That the rows
    # exist and are sane is checked below, and KL 0 / top-1 100 % compare
    # two computations of this run on this kernel.
    check(f.get("passkey_n", 0) > 0 and 0 <= f.get("passkey_hits", -1) <= f["passkey_n"],
          f"full cache: {f.get('passkey_n', 0)} pass-key documents answered")
    print(f"# metric: quality smoke full: passkey {f.get('passkey_hits')}/{f.get('passkey_n')} "
          f"({f.get('passkey_depths')})")
    check("kl" in f and f["kl"] <= 1e-6, f"KL(full ‖ full) = {f.get('kl')} is 0")
    check(f.get("top1") == 1.0, f"top-1 agreement of full with full = {f.get('top1')}")
for spec in ("snapkv", "streaming", "pod"):
    for frac in (4, 16):
        r = [x for x in rows if x["spec"] == spec and x["fraction"] == frac]
        check(len(r) == 1, f"{spec} 1/{frac} returned a row")
        if not r:
            continue
        r = r[0]
        sane = (r.get("passkey_n") == 2 and 0 <= r["passkey_hits"] <= 2 and
                r.get("multikey_n") == 4 and 0 <= r["multikey_hits"] <= 4 and
                math.isfinite(r.get("kl", math.nan)) and 0 <= r.get("top1", -1) <= 1)
        check(sane, f"{spec} 1/{frac}: passkey {r.get('passkey_hits')}/{r.get('passkey_n')} "
              f"multikey {r.get('multikey_hits')}/{r.get('multikey_n')} kl {r.get('kl')} "
              f"top1 {r.get('top1')}")
        check(r.get("kl", 0) > 0, f"{spec} 1/{frac} evicted something (KL > 0)")
        print(f"# metric: quality smoke {spec} 1/{frac}: passkey {r.get('passkey_hits')}/"
              f"{r.get('passkey_n')} multikey {r.get('multikey_hits')}/{r.get('multikey_n')} "
              f"KL {r.get('kl', 0):.4f} top-1 {r.get('top1', 0):.3f}")
print(f"{ok} passed, {fail} failed")
sys.exit(1 if fail else 0)
PY
