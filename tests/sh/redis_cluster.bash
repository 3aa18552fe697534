# redis_cluster.bash: a real Redis Cluster for the tests: 3 masters + 3
# replicas of Debian's redis-server on free loopback ports in a scratch
# directory.  Sourced by test scripts (functions below), or run as a
# command by a test program that injects faults:
#
#   . tests/sh/redis_cluster.bash
#   rcl_start DIR          # RCL_ADDR=127.0.0.1:P1,...  RCL_PORTS="P1 ... P6"
#   rcl_stop DIR           # every node, by the pid in its pid file
#
#   bash tests/sh/redis_cluster.bash kill DIR PORT      # SIGKILL one node
#   bash tests/sh/redis_cluster.bash start DIR PORT     # start it again
#   bash tests/sh/redis_cluster.bash wait_ok DIR        # cluster_state:ok on every live node
#   bash tests/sh/redis_cluster.bash wait_synced DIR PORT  # a restarted node's replica link up
#   bash tests/sh/redis_cluster.bash cli DIR PORT ARGS  # redis-cli -p PORT ARGS
#
# Nodes: cluster-enabled, cluster-node-timeout 2000 ms, protected-mode yes,
# bind 127.0.0.1, daemonized with a pid file and a log in DIR.
#
# Persistence (issue 26, defect 15): every node keeps an append-only file in
# its own directory (appendonly yes, appenddirname aof-PORT under DIR).  A
# test that SIGKILLs a master and starts it again before its replica was
# promoted (cluster-node-timeout: 2 s) would otherwise bring back an empty
# master that still owns its slots, and the replica, resyncing from it,
# would wipe them: data lost by the harness, not by the code under test.
# With the file the node reloads everything it acknowledged (Redis writes
# the file before it replies, so a SIGKILL loses no acknowledged write;
# appendfsync everysec only matters when the machine itself goes down).  The ACL user "kvsnap" with password "kvsnap-test-pass" exists on
# every node (the default user stays open, so redis-cli needs no password).
# Debian's redis-server service (port 6379) is neither used nor needed.

RCL_USER=kvsnap
RCL_PASS=kvsnap-test-pass

# N ports p (default 6) with p and p + 10000 (the cluster bus) free on
# 127.0.0.1.  Both stay below the kernel's ephemeral range
# (ip_local_port_range, 32768 by default): a bus port in that range can be
# taken between this check and the node's bind by any outgoing connection
# (CI once lost a run to it: "redis-server on port 25308 did not start").
rcl_ports() { # [N]
	python3 - "${1:-6}" <<'PY'
import random, socket, sys
def free(p):
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", p)); return True
    except OSError:
        return False
    finally:
        s.close()
try:
    eph = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
except (OSError, ValueError, IndexError):
    eph = 32768
hi = min(eph, 65536) - 10000
lo = 10000 if hi > 12000 else 2000
got = []
while len(got) < int(sys.argv[1]):
    p = random.randrange(lo, hi)
    if p not in got and free(p) and free(p + 10000):
        got.append(p)
print(" ".join(map(str, got)))
PY
}

rcl_node_start() { # DIR PORT
	local d=$1 p=$2
	if [ ! -f "$d/$p.conf" ]; then
		cat > "$d/$p.conf" <<EOF
port $p
bind 127.0.0.1
protected-mode yes
cluster-enabled yes
cluster-config-file $d/nodes-$p.conf
cluster-node-timeout 2000
appendonly yes
appenddirname aof-$p
appendfsync everysec
save ""
dir $d
dbfilename dump-$p.rdb
daemonize yes
pidfile $d/$p.pid
logfile $d/$p.log
user $RCL_USER on >$RCL_PASS ~* &* +@all
EOF
	fi
	rm -f "$d/$p.pid"
	redis-server "$d/$p.conf" || return 1
	local i
	for i in $(seq 1 100); do
		# ours, not another test's node that won the same port
		redis-cli -p "$p" config get pidfile 2>/dev/null | grep -qxF "$d/$p.pid" && return 0
		sleep 0.05
	done
	return 1
}

rcl_node_kill() { # DIR PORT
	local pid
	pid=$(cat "$1/$2.pid" 2>/dev/null) || return 0
	kill -KILL "$pid" 2>/dev/null
	local i
	for i in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
	rm -f "$1/$2.pid"
}

# cluster_state:ok on every node whose pid file is there (up to 30 s).
rcl_wait_ok() { # DIR
	local d=$1 i p good
	for i in $(seq 1 300); do
		good=1
		for p in $(cat "$d/ports"); do
			[ -f "$d/$p.pid" ] || continue
			redis-cli -p "$p" cluster info 2>/dev/null | grep -q 'cluster_state:ok' || good=0
		done
		[ $good = 1 ] && return 0
		sleep 0.1
	done
	return 1
}

# A restarted node is a replica again with its link up and synced (up to 30 s).
rcl_wait_synced() { # DIR PORT
	local i
	for i in $(seq 1 300); do
		redis-cli -p "$2" info replication 2>/dev/null | grep -q 'master_link_status:up' && return 0
		sleep 0.1
	done
	return 1
}

rcl_start() { # DIR
	local d=$1 p hosts=()
	mkdir -p "$d"
	local want try ports=()
	# A port found free can still be taken before the node binds it (by
	# another test's cluster, or any connection): a node that does not
	# start is replaced by one on a fresh port, up to five times.
	for want in $(rcl_ports); do
		p=$want
		for try in 1 2 3 4 5; do
			echo "${ports[*]} $p" > "$d/ports"
			rcl_node_start "$d" "$p" && break
			echo "# redis-server on port $p did not start (try $try): $(tail -1 "$d/$p.log" 2>/dev/null)" >&2
			rcl_node_kill "$d" "$p"
			rm -f "$d/$p.conf" "$d/nodes-$p.conf"
			[ "$try" = 5 ] && return 1
			p=$(rcl_ports 1)
		done
		ports+=("$p")
		hosts+=("127.0.0.1:$p")
	done
	RCL_PORTS="${ports[*]}"
	echo "$RCL_PORTS" > "$d/ports"
	redis-cli --cluster create "${hosts[@]}" --cluster-replicas 1 --cluster-yes \
		>"$d/create.log" 2>&1 || { tail -5 "$d/create.log" >&2; return 1; }
	rcl_wait_ok "$d" || { echo "# the cluster never reached cluster_state:ok" >&2; return 1; }
	# every replica attached (a failover needs one)
	local i
	for i in $(seq 1 300); do
		[ "$(redis-cli -p "${RCL_PORTS%% *}" cluster nodes | grep -c ' slave ')" -ge 3 ] && break
		sleep 0.1
	done
	RCL_ADDR=$(IFS=,; echo "${hosts[*]}")
}

rcl_stop() { # DIR
	local p
	[ -f "$1/ports" ] || return 0
	for p in $(cat "$1/ports"); do rcl_node_kill "$1" "$p"; done
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
	cmd=$1 dir=$2
	shift 2
	case $cmd in
	kill) rcl_node_kill "$dir" "$1" ;;
	start) rcl_node_start "$dir" "$1" ;;
	wait_ok) rcl_wait_ok "$dir" ;;
	wait_synced) rcl_wait_synced "$dir" "$1" ;;
	cli) p=$1; shift; redis-cli -p "$p" "$@" ;;
	*) echo "redis_cluster.bash: unknown command $cmd" >&2; exit 2 ;;
	esac
fi
