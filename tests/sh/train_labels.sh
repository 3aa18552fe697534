#!/usr/bin/env bash
# kvsnap train-heads --labels kvzip end to end (issue 19), real model: a
# short run writes a sidecar that the locret policy loads and one cache
# file per example; a second run over the same examples reads every label
# back (the same losses, bit for bit); a damaged cache file is recomputed,
# not trusted (the same losses again) and replaced; --label-floor trains on
# the cached labels raised to the floor (other losses, named in the
# recipe); a bad --labels or --label-floor is a usage error.
set -u
. "$(dirname "$0")/lib.bash"
need "$MODEL" /usr/share/games/fortunes # (the fortunes package)
scratch train-labels
A=(--labels kvzip --examples 2 --eval 1 --max-tokens 160 --min-tokens 96 -t 2 --json
	--label-cache "$T/labels")
losses() { # the loss of every example and evaluation, in order
	python3 -c 'import json,sys; print(" ".join("%.9g" % json.loads(l)["loss"] for l in open(sys.argv[1]) if "loss" in l))' "$1"
}

"$K" train-heads "${A[@]}" -o "$T/a.gguf" > "$T/a.jsonl" 2> "$T/err"
ok "train-heads --labels kvzip runs (exit $?)" $?
[ -s "$T/a.gguf" ]; ok "the sidecar is written" $?
grep -q 'labels: --labels kvzip: log of the score of kvzip:ratio=1' "$T/a.gguf"
ok "its recipe names the labels" $?
n=$(find "$T/labels" -name '*.lab' | wc -l)
[ "$n" -eq 3 ]; ok "one cache file per example, held-out one included: $n" $?
first=$(losses "$T/a.jsonl")

"$K" train-heads "${A[@]}" -o "$T/b.gguf" > "$T/b.jsonl" 2> "$T/err"
ok "a second run over the same examples (exit $?)" $?
[ "$(losses "$T/b.jsonl")" = "$first" ]; ok "reads the labels back: the same losses ($first)" $?

f=$(find "$T/labels" -name '*.lab' | sort | head -1)
before=$(sha256sum < "$f")
printf '\x7f' | dd of="$f" bs=1 seek=2000 conv=notrunc status=none
"$K" train-heads "${A[@]}" -o "$T/c.gguf" > "$T/c.jsonl" 2> "$T/err"
ok "a run over a damaged cache file (exit $?)" $?
[ "$(losses "$T/c.jsonl")" = "$first" ]; ok "recomputes it: the same losses" $?
[ "$(sha256sum < "$f")" = "$before" ]; ok "and rewrites the file as it was" $?

"$K" train-heads "${A[@]}" --label-floor 1e-4 -o "$T/f.gguf" > "$T/f.jsonl" 2> "$T/err"
ok "--label-floor 1e-4 over the cached labels (exit $?)" $?
[ "$(losses "$T/f.jsonl")" != "$first" ]; _s=$?; ok "trains on other labels: $(losses "$T/f.jsonl")" $_s
grep -q 'floored at log(0.0001)' "$T/f.gguf"; ok "the recipe names the floor" $?
for b in 0 1 -1 x; do
	"$K" train-heads --labels kvzip --label-floor "$b" --examples 1 -o "$T/d.gguf" > /dev/null 2> "$T/err"
	[ $? -eq 1 ] && grep -q "label-floor" "$T/err"; ok "--label-floor $b is a usage error" $?
done

"$K" train-heads --labels bogus --examples 1 -o "$T/d.gguf" > /dev/null 2> "$T/err"
[ $? -eq 1 ] && grep -q "cis or kvzip" "$T/err"; ok "--labels bogus is a usage error naming the choices" $?

printf 'The harbour master keeps the tide tables. %.0s' $(seq 1 40) > "$T/doc.txt"
KVSNAP_STATE=$T/state "$K" ingest --local --policy locret --opts "heads=$T/a.gguf" --budget 32 \
	--chunk 64 "$T/doc.txt" > "$T/out" 2> "$T/err"
ok "the locret policy ingests with the new heads (exit $?)" $?

finish
