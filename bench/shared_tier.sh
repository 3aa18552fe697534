#!/usr/bin/env bash
# The shared tier's figures (issue 17): a real 3 + 3 Redis Cluster
# (tests/sh/redis_cluster.bash) and two kvsnapd hosts with the default
# profile and separate local state.  For each document (the demo's 16 KB of
# the GPL-3 and a ~1.5 KB one): A ingests it (the read a host without the
# tier pays), then host B's time to first token on a shared-tier miss (the
# snapshot copied in, checked, then answered; B's local copy removed
# between reps) against a local hit and a re-read (A's ingest + a local
# hit), the tier's copy rates from the daemons' logs (out: A's push after
# its ingest; in: B's fetch; every record's checksum included), and the
# document's bytes in the cluster (its records' lengths, and Redis's own
# MEMORY USAGE of its keys on the masters).  Prints a Markdown table.
#
#   usage: bench/shared_tier.sh [-t THREADS] [--reps N]   (defaults 2, 3)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
K=$BUILD/kvsnap D=$BUILD/kvsnapd
THREADS=2 REPS=3
while [ $# -gt 0 ]; do
	case $1 in
	-t) THREADS=$2; shift ;;
	--reps) REPS=$2; shift ;;
	-h|--help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "shared_tier.sh: unknown option $1" >&2; exit 2 ;;
	esac
	shift
done
[ -x "$K" ] && [ -x "$D" ] || make --no-print-directory all
. tests/sh/redis_cluster.bash
T=$(mktemp -d /tmp/kvsnap-bench-tier-XXXXXX)
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done; wait; rcl_stop "$T/cluster"; rm -rf "$T"' EXIT
rcl_start "$T/cluster"
SHARED=redis-cluster:$RCL_ADDR
unset KVSNAP_STATE KVSNAP_SOCKET

start() { # HOST
	local i rc
	"$D" --state "$T/$1" --socket "$T/$1.sock" -t "$THREADS" --log-level info \
		--shared "$SHARED" 2>>"$T/$1.log" &
	PIDS+=($!)
	for i in $(seq 1 600); do # up when it answers (a missing document: not_found)
		rc=0
		"$K" query -s "$T/$1.sock" no-such-doc x >/dev/null 2>&1 || rc=$?
		[ $rc = 2 ] && return 0
		sleep 0.1
	done
	return 1
}
jf() { python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).read().splitlines()[-1])[sys.argv[2]])' "$1" "$2"; }
med() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
masters() { local p; for p in $RCL_PORTS; do redis-cli -p "$p" role | head -1 | grep -q master && echo "$p"; done; }
start a
start b
head -c 16000 /usr/share/common-licenses/GPL-3 > "$T/gpl-16k.txt"
head -c 1500 /usr/share/common-licenses/Apache-2.0 > "$T/apache-1.5k.txt"
Q="What does this document allow?"

echo "| document | tokens | snapshot KiB | B: shared-tier miss TTFT ms | B: local hit TTFT ms | re-read (A's ingest + local hit) s | tier write MB/s | tier read MB/s | record bytes in cluster | MEMORY USAGE bytes |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
for doc in gpl-16k apache-1.5k; do
	"$K" ingest --json -s "$T/a.sock" "$T/$doc.txt" > "$T/i.json"
	id=$(jf "$T/i.json" doc_id)
	read_s=$(jf "$T/i.json" seconds)
	snap=$(jf "$T/i.json" snapshot_bytes)
	tokens=$(jf "$T/i.json" tokens)
	: > "$T/miss" ; : > "$T/hit"
	for r in $(seq 1 "$REPS"); do
		"$K" rm --state "$T/b" "$id" >/dev/null 2>&1 || true
		"$K" query --json -s "$T/b.sock" -n 1 "$id" "$Q" > "$T/q.json"
		[ "$(jf "$T/q.json" tier)" = shared ] || { echo "B's query was not a shared-tier miss" >&2; exit 1; }
		jf "$T/q.json" ttft_s >> "$T/miss"
		"$K" query --json -s "$T/b.sock" -n 1 "$id" "$Q" > "$T/q.json"
		[ "$(jf "$T/q.json" tier)" = local ] || { echo "B's second query was not local" >&2; exit 1; }
		jf "$T/q.json" ttft_s >> "$T/hit"
	done
	miss=$(med < "$T/miss") hit=$(med < "$T/hit")
	w=$(grep -o "snapshot of ${id:0:12} out (.* \([0-9.]*\) MB/s)" "$T/a.log" | sed 's/.* \([0-9.]*\) MB\/s)/\1/' | med)
	rd=$(grep -o "snapshot of ${id:0:12} in (.* \([0-9.]*\) MB/s)" "$T/b.log" | sed 's/.* \([0-9.]*\) MB\/s)/\1/' | med)
	rec=0 mem=0
	for p in $(masters); do
		while read -r key; do
			[ -n "$key" ] || continue
			rec=$((rec + $(redis-cli -p "$p" strlen "$key")))
			mem=$((mem + $(redis-cli -p "$p" memory usage "$key")))
		done < <(redis-cli -p "$p" --scan --pattern "*kvsnap:{$id}:*")
	done
	python3 - "$doc" "$tokens" "$snap" "$miss" "$hit" "$read_s" "$w" "$rd" "$rec" "$mem" <<'PY'
import sys
d, tok, snap, miss, hit, rd, w, r, rec, mem = sys.argv[1:]
print(f"| {d} | {tok} | {int(snap)/1024:.0f} | {float(miss)*1e3:.0f} | {float(hit)*1e3:.0f} | "
      f"{float(rd) + float(hit):.2f} | {float(w):.0f} | {float(r):.0f} | {int(rec)} | {int(mem)} |")
PY
done
echo
redis-cli -p "$(masters | head -1)" info memory | grep -E '^used_memory(_dataset)?:' | tr -d '\r' |
	sed 's/^/# one master, after both documents: /'
