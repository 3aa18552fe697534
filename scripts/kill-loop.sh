#!/usr/bin/env bash
# The store's crash test at full count: a writer process putting snapshots
# is killed with SIGKILL at random points ROUNDS times (default 60); after
# each kill the store must open, verify clean, hold every acknowledged
# snapshot and no partial one (tests/test_store.c, test kill_loop; make
# check runs 12 rounds).  Usage: scripts/kill-loop.sh [ROUNDS] [SEED]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
[ -x "$BUILD/tests/test_store" ] || make --no-print-directory all
KVSNAP_KILL_LOOPS=${1:-60} KVSNAP_KILL_SEED=${2:-1} "$BUILD/tests/test_store" kill_loop
