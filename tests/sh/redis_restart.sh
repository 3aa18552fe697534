#!/usr/bin/env bash
# redis_restart.sh: the test cluster (tests/sh/redis_cluster.bash) keeps its
# data across a master SIGKILLed and started again before any failover
# (issue 26, defect 15).  Without persistence the restarted master came
# back empty, still owning its slots, and its replica resynced from it:
# every key of those slots was gone, and tests that restart a node lost
# data for a reason of the harness's own.  Here: keys on every master's
# slots, one master killed and restarted at once (well inside
# cluster-node-timeout, so no replica is promoted), then every key is read
# back from the restarted master and, once it is synced, from its replica.
. "$(dirname "$0")/lib.bash"
. tests/sh/redis_cluster.bash
need command:redis-server command:redis-cli command:python3
scratch redis-restart
trap 'rcl_stop "$T/cluster"; lib_cleanup' EXIT

rcl_start "$T/cluster"
ok "a 3 + 3 cluster on ports $RCL_PORTS reaches cluster_state:ok" $? || { finish; exit; }
P0=${RCL_PORTS%% *}

# keys_back: $n, how many of the 60 keys read back through the cluster
keys_back() {
	local i
	n=0
	for i in $(seq 1 60); do
		[ "$(redis-cli -c -p "$P0" get "restart-test:$i")" = "value-$i" ] && n=$((n + 1))
	done
}

# 60 keys spread over the slots (so over every master)
for i in $(seq 1 60); do
	redis-cli -c -p "$P0" set "restart-test:$i" "value-$i" >/dev/null
done
keys_back
[ $n = 60 ]
ok "60 keys written ($n read back)" $?

# the master of key 1's slot, and its replica
slot=$(redis-cli -p "$P0" cluster keyslot restart-test:1)
read -r M MID < <(redis-cli -p "$P0" cluster nodes | python3 -c '
import sys
slot = int(sys.argv[1])
for l in sys.stdin:
    f = l.split()
    if "master" not in f[2]: continue
    for r in f[8:]:
        a, _, b = r.partition("-")
        if a.isdigit() and int(a) <= slot <= int(b or a):
            print(f[1].split("@")[0].rsplit(":", 1)[1], f[0])' "$slot")
R=$(redis-cli -p "$P0" cluster nodes | awk -v m="$MID" '$4 == m { split($2, a, "[:@]"); print a[2] }' | head -1)
[ -n "$M" ] && [ -n "$R" ]
ok "the master of slot $slot is port $M, its replica port $R" $? || { finish; exit; }
mine=0
for i in $(seq 1 60); do
	redis-cli -p "$M" get "restart-test:$i" 2>/dev/null | grep -q '^value-' && mine=$((mine + 1))
done

# killed and started again at once: no failover happens (node timeout 2 s)
rcl_node_kill "$T/cluster" "$M"
rcl_node_start "$T/cluster" "$M"
ok "port $M SIGKILLed and started again" $?
role=$(redis-cli -p "$M" role | head -1)
[ "$role" = master ]
ok "it is still the master (no failover happened: role $role)" $?
rcl_wait_ok "$T/cluster"
ok "cluster_state:ok again" $?
rcl_wait_synced "$T/cluster" "$R"
ok "the replica's link to it is up" $?
sleep 1 # the replica's full resync (if any) applied

keys_back
[ $n = 60 ]
ok "every key is still there after the restart ($n of 60; $mine were on port $M)" $?
n=0
for i in $(seq 1 60); do
	v=$(printf 'READONLY\nGET restart-test:%s\n' "$i" | redis-cli -p "$R" 2>/dev/null | tail -1)
	[ "$v" = "value-$i" ] && n=$((n + 1))
done
[ "$n" = "$mine" ] && [ "$mine" -gt 0 ]
ok "the replica holds every key of its master's slots ($n of $mine)" $?
finish
