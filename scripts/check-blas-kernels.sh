#!/usr/bin/env bash
# Show that no test depends on which OpenBLAS kernel computes the f32
# matmuls: run the tests once per kernel (OPENBLAS_CORETYPE) and per L2 size
# setting (OPENBLAS_L2_SIZE=512 set, and unset).
#
#   scripts/check-blas-kernels.sh [--answers] [KERNEL...]
#       (kernels by default: unset Haswell SkylakeX Zen Sandybridge)
#
# Without --answers: the whole suite (make check, which runs the demo too:
# tests/sh/demo.sh) per kernel and L2 setting: ~25 min each on 2 idle cores.
# With --answers: only the tests whose outcome rests on text the model
# decodes (the subset a kernel could move; issue 25), per kernel and L2
# setting: $ANSWER_TESTS, by default
#   demo formats qa_smoke quality_smoke cli_output openai test_forward
# (a tests/sh/NAME.sh script, or build/tests/NAME).  Their "# report:" and
# "# metric:" lines (what the model answered, where a test reports it) are
# printed per run, so answers that move between kernels show side by side.
#
# L2 settings: $L2_SIZES, by default "unset 512" ("unset" removes
# OPENBLAS_L2_SIZE, a number sets it).  "unset" as a kernel removes
# OPENBLAS_CORETYPE, so OpenBLAS picks the kernel for this CPU.  A kernel
# this CPU cannot execute (e.g. SkylakeX without AVX-512) dies with SIGILL;
# that is reported, not hidden.  Each run's output is kept in
# build/blas-kernels/[answers-]KERNEL-l2L2.log; the last line is a summary.
# Runs on other kernel lists may go side by side (their logs differ).
# CI does not run this: it keeps the environment it is given.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
BUILD=${BUILD:-build}
mode=full
[ "${1:-}" = --answers ] && { mode=answers; shift; }
kernels=("$@")
[ ${#kernels[@]} -gt 0 ] || kernels=(unset Haswell SkylakeX Zen Sandybridge)
read -ra l2s <<<"${L2_SIZES:-unset 512}"
read -ra tests <<<"${ANSWER_TESTS:-demo formats qa_smoke quality_smoke cli_output openai test_forward}"
mkdir -p "$BUILD/blas-kernels"

# the model-answer subset, in the environment the caller set, each test's
# output in $BUILD/blas-kernels/NAME-TEST.log; prints a line per test and
# the reports; status 0 when every test passed
answers() { # NAME
	local t log rc bad=0
	for t in "${tests[@]}"; do
		log=$BUILD/blas-kernels/$1-$t.log
		if [ -f "tests/sh/$t.sh" ]; then
			BUILD=$BUILD bash "tests/sh/$t.sh" >"$log" 2>&1
		else
			"$BUILD/tests/$t" >"$log" 2>&1
		fi
		rc=$?
		[ $rc -eq 0 ] || bad=$((bad + 1))
		printf '%s %-14s rc=%d  %s\n' "$([ $rc -eq 0 ] && echo PASS || echo FAIL)" "$t" $rc \
			"$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -1)"
		grep -E '^# (report|metric):|^not ok' "$log" | sed 's/^/     /'
	done
	echo "$(( ${#tests[@]} - bad )) passed, $bad failed"
	[ $bad -eq 0 ]
}

summary=() bad=0
for k in "${kernels[@]}"; do
	for l2 in "${l2s[@]}"; do
		name=$k-l2$l2
		[ $mode = answers ] && name=answers-$name
		log=$BUILD/blas-kernels/$name.log
		unsets=() sets=() # env takes its -u options before the assignments
		if [ "$k" = unset ]; then unsets+=(-u OPENBLAS_CORETYPE); else sets+=(OPENBLAS_CORETYPE="$k"); fi
		if [ "$l2" = unset ]; then unsets+=(-u OPENBLAS_L2_SIZE); else sets+=(OPENBLAS_L2_SIZE="$l2"); fi
		envs=("${unsets[@]}" "${sets[@]}")
		t0=$SECONDS
		if [ $mode = answers ]; then
			env "${envs[@]}" bash -c "$(declare -p BUILD tests); $(declare -f answers); answers $name" >"$log" 2>&1
		else
			env "${envs[@]}" make check >"$log" 2>&1
		fi
		rc=$?
		line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -1)
		summary+=("$(printf '%-12s L2 %-6s rc=%d %5ds  %s' "$k" "$l2" "$rc" $((SECONDS - t0)) "${line:-no summary}")")
		if [ $mode = answers ]; then
			echo "== $k, OPENBLAS_L2_SIZE $l2"; cat "$log"
		fi
		[ $rc -eq 0 ] || { bad=$((bad + 1)); grep -E '^(FAIL|     !)' "$log" | head -20; }
	done
done
ver=$(dpkg-query -W -f='${Version}' libopenblas0-pthread 2>/dev/null || echo unknown)
echo "OpenBLAS $ver on$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-) ($(nproc) cores), mode $mode"
printf '%s\n' "${summary[@]}"
echo "$(( ${#summary[@]} - bad )) passed, $bad failed"
[ $bad -eq 0 ]
