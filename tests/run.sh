#!/usr/bin/env bash
# Run every test program and script; print PASS/FAIL per test, keep logs of
# failures only, end with "N passed, N failed".
set -u
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
LOGDIR=$BUILD/test-logs
mkdir -p "$LOGDIR"
pass=0 fail=0 failed=()
run() { # name command...
	local name=$1; shift
	local log=$LOGDIR/$name.log t0=$SECONDS
	if "$@" >"$log" 2>&1; then
		pass=$((pass + 1)); printf 'PASS %-28s %4ds  %s\n' "$name" $((SECONDS - t0)) "$(grep -E '^[0-9]+ passed' "$log" | tail -1)"
		grep -E '^# (report|metric):' "$log" | sed 's/^/     /'
	else
		fail=$((fail + 1)); failed+=("$name"); printf 'FAIL %-28s %4ds\n' "$name" $((SECONDS - t0))
		# the failed checks first: a CI excerpt may show only a few lines
		grep -E '^not ok' "$log" | head -n 20 | sed 's/^/     ! /'
		tail -n 40 "$log" | sed 's/^/     | /'
	fi
}
for t in "$BUILD"/tests/test_*; do
	[ -x "$t" ] || continue
	run "$(basename "$t")" "$t"
done
for s in tests/sh/*.sh; do
	[ -f "$s" ] || continue
	run "$(basename "$s" .sh)" env BUILD="$BUILD" bash "$s"
done
for f in build-fuzz/fuzz_*; do
	[ -x "$f" ] || continue
	name=$(basename "$f")
	corpus=tests/fuzz/corpus/${name#fuzz_}
	mkdir -p "$BUILD/fuzz-work/$name"
	# hostile documents are generated, never committed (issue 26); the HTML
	# seed is the head of the formats fixture, not a second copy of it
	if [ "$name" = fuzz_formats ]; then
		python3 scripts/make-hostile-docs.py --seeds "$BUILD/fuzz-work/$name"
		head -c 600 tests/fixtures/docs/ship.html >"$BUILD/fuzz-work/$name/ship.html"
	fi
	run "$name" "$f" -max_total_time="${FUZZ_SECONDS:-30}" -max_len=65536 \
		-artifact_prefix="$BUILD/fuzz-work/$name/" "$BUILD/fuzz-work/$name" "$corpus"
done
[ ${#failed[@]} -eq 0 ] || echo "failed: ${failed[*]}"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
