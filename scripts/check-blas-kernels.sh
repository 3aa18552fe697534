#!/usr/bin/env bash
# Run the whole suite (make check) once per OpenBLAS kernel, to show that no
# test depends on which BLAS kernel computes the f32 matmuls.
#
#   scripts/check-blas-kernels.sh [KERNEL...]     (default: unset Haswell SkylakeX Zen Sandybridge)
#
# "unset" runs with OPENBLAS_CORETYPE removed, so OpenBLAS picks the kernel
# for this CPU.  A kernel this CPU cannot execute (e.g. SkylakeX without
# AVX-512) dies with SIGILL; that is reported, not hidden.  Each run's output
# is kept in build/blas-kernels/KERNEL.log; the last line is a summary.
# CI does not run this: it keeps the environment it is given.
set -uo pipefail
cd "$(dirname "$0")/.."
kernels=("$@")
[ ${#kernels[@]} -gt 0 ] || kernels=(unset Haswell SkylakeX Zen Sandybridge)
mkdir -p build/blas-kernels
summary=() bad=0
for k in "${kernels[@]}"; do
	log=build/blas-kernels/$k.log
	t0=$SECONDS
	if [ "$k" = unset ]; then
		env -u OPENBLAS_CORETYPE make check >"$log" 2>&1
	else
		OPENBLAS_CORETYPE=$k make check >"$log" 2>&1
	fi
	rc=$?
	line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -1)
	summary+=("$(printf '%-12s rc=%d %4ds  %s' "$k" "$rc" $((SECONDS - t0)) "${line:-no summary}")")
	[ $rc -eq 0 ] || { bad=$((bad + 1)); grep -E '^(FAIL|     !)' "$log" | head -20; }
done
ver=$(dpkg-query -W -f='${Version}' libopenblas0-pthread 2>/dev/null || echo unknown)
echo "OpenBLAS $ver on$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-) ($(nproc) cores)"
printf '%s\n' "${summary[@]}"
echo "$(( ${#kernels[@]} - bad )) passed, $bad failed"
[ $bad -eq 0 ]
