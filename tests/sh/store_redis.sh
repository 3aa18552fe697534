#!/usr/bin/env bash
# store_redis.sh: the redis-cluster store backend against a real Redis
# Cluster: starts 3 masters + 3 replicas (tests/sh/redis_cluster.bash) on
# free loopback ports in a scratch directory, runs build/tests/
# test_store_redis against it (which kills, restarts and migrates nodes
# through the same helper), and stops every node at exit by its pid.
. "$(dirname "$0")/lib.bash"
. tests/sh/redis_cluster.bash
need "$BUILD/tests/test_store_redis" command:redis-server command:redis-cli command:python3
scratch store-redis
trap 'rcl_stop "$T/cluster"; lib_cleanup' EXIT

rcl_start "$T/cluster"
ok "a 3 + 3 cluster on ports $RCL_PORTS reaches cluster_state:ok" $? || { finish; exit; }

KVSNAP_REDIS_ADDR=$RCL_ADDR KVSNAP_REDIS_DIR=$T/cluster KVSNAP_REDIS_PORTS=$RCL_PORTS \
	TAP_TIMEOUT=600 "$BUILD/tests/test_store_redis" > "$T/tap" 2>&1
rc=$?
cat "$T/tap"
ok "test_store_redis: every check" $rc
# the C program's own count must show it ran, not skipped
grep -q '^[1-9][0-9]* passed, 0 failed, 0 skipped' "$T/tap"
ok "test_store_redis ran every test against the cluster" $?
finish
