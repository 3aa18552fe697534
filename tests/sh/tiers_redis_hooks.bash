# tiers_redis_hooks.bash: tests/sh/tiers.sh's backend faults for a Redis
# Cluster started by tests/sh/redis_cluster.bash (sourced by tiers.sh through
# KVSNAP_TEST_TIER_HOOKS, run by tests/sh/tiers_redis.sh; RCL_DIR names the
# cluster's directory):
#   tier_flip DOC_ID  SETRANGE one byte in the middle of one of DOC_ID's
#                     stored records (not its head) on the node holding it
#   tier_break        every node shut down (SHUTDOWN SAVE: its data kept)
#   tier_mend         every node started again, the cluster ok
RCL_SH=$(dirname "${BASH_SOURCE[0]}")/redis_cluster.bash
TIER_USER=kvsnap TIER_PASS=kvsnap-test-pass # the ACL user redis_cluster.bash makes

tier_flip() {
	local p key= len off hex ch
	for p in $(cat "$RCL_DIR/ports"); do
		key=$(redis-cli -p "$p" --scan --pattern "*kvsnap:{$1}:*:r:*" 2>/dev/null |
			grep -v ':r:65535$' | head -1)
		[ -n "$key" ] && break
	done
	[ -n "$key" ] || { echo "# no record of $1 in the cluster" >&2; return 1; }
	len=$(redis-cli -c -p "$p" strlen "$key") || return 1
	off=$((len / 2))
	hex=$(redis-cli -c -p "$p" --raw getrange "$key" "$off" "$off" | od -An -tx1 | awk '{print $1}')
	ch=x
	[ "$hex" = 78 ] && ch=y
	[ "$(redis-cli -c -p "$p" setrange "$key" "$off" "$ch")" = "$len" ]
}

tier_break() {
	local p
	for p in $(cat "$RCL_DIR/ports"); do
		redis-cli -p "$p" shutdown save >/dev/null 2>&1
	done
	for p in $(cat "$RCL_DIR/ports"); do
		! redis-cli -p "$p" ping >/dev/null 2>&1 || return 1
	done
}

tier_mend() {
	local p
	for p in $(cat "$RCL_DIR/ports"); do
		bash "$RCL_SH" start "$RCL_DIR" "$p" || return 1
	done
	bash "$RCL_SH" wait_ok "$RCL_DIR"
}
