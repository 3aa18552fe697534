#!/usr/bin/env bash
# Backend selection without a GPU: `kvsnap selftest --backend cuda` says
# plainly why it cannot run (exit 6, "no CUDA device" on a CUDA build with
# no device, "no CUDA backend" on a build without nvcc), as do the global
# --backend flag and the daemon's; an unknown backend is refused by name; the
# CUDA objects are in the build whenever nvcc is (DESIGN §4).  On a machine
# with a GPU the selftest itself must pass.  The simulated device's selftest
# runs everywhere.
set -u
. "$(dirname "$0")/lib.bash"
scratch backend

if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then
	out=$($K selftest --backend cuda 2>&1); rc=$?
	echo "$out" | tail -3 | sed 's/^/# /'
	[ "$rc" -eq 0 ]; ok "selftest --backend cuda passes on this GPU" $?
else
	out=$($K selftest --backend cuda 2>&1); rc=$?
	[ "$rc" -eq 6 ]; ok "selftest --backend cuda without a device exits 6 (got $rc)" $?
	echo "$out" | grep -Eq "no CUDA device|no CUDA backend"; ok "and says why: $out" $?
	out=$($K --backend cuda generate -n 1 -p hi 2>&1); rc=$?
	[ "$rc" -eq 6 ] && echo "$out" | grep -Eq "no CUDA device|no CUDA backend"
	ok "kvsnap --backend cuda generate is refused the same way" $?
	out=$(KVSNAP_BACKEND=cuda $K generate -n 1 -p hi 2>&1); rc=$?
	[ "$rc" -eq 6 ]; ok "KVSNAP_BACKEND=cuda is honoured" $?
	out=$(timeout 60 $BUILD/kvsnapd --foreground --backend cuda --socket "$T/s" --state "$T/st" 2>&1); rc=$?
	[ "$rc" -ne 0 ] && echo "$out" | grep -Eq "no CUDA device|no CUDA backend"
	ok "kvsnapd --backend cuda exits with the reason" $?
	[ ! -e "$T/s" ]; ok "and leaves no socket behind" $?
fi
# The simulated device (kernels/simdev/): the CPU's ops on copies of the
# ranges a question keeps on the device, the host's pages poisoned while a
# copy is newer; the selftest's queries and a generation must match the CPU.
out=$($K selftest --backend simdev 2>&1); rc=$?
echo "$out" | tail -1 | sed 's/^/# /'
[ "$rc" -eq 0 ] && echo "$out" | grep -Eq "^[0-9]+ checks, [0-9]+ passed, 0 failed"
ok "selftest --backend simdev passes" $?
want=$($K generate -n 24 -p "The capital of France is" 2>&1)
got=$($K --backend simdev generate -n 24 -p "The capital of France is" 2>&1)
[ -n "$want" ] && [ "$got" = "$want" ]; ok "a generation with the pool on the simulated device is the CPU's, bit for bit" $?
out=$($K selftest --backend tpu 2>&1); rc=$?
[ "$rc" -eq 6 ] && echo "$out" | grep -q "unknown backend 'tpu'"; ok "unknown backend refused by name" $?
if command -v nvcc >/dev/null || [ -x /usr/local/cuda/bin/nvcc ]; then
	ls "$BUILD"/kernels/cuda/*.o >/dev/null 2>&1; ok "nvcc present: the CUDA backend is built" $?
	nm -C "$BUILD/kvsnap" | grep -q "kcu_\|cublas"; ok "and linked into kvsnap" $?
fi
finish
