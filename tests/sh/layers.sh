#!/usr/bin/env bash
# The front ends' floor (issue 32, docs/ARCHITECTURE.md "Folders and
# dependencies"): daemon/ and clients/ reach the folders below service/
# (engine/, storage/, snapshot/, kernels/, formats/, index/) only through
# service/service.h, which re-exports none of them; only clients/tools/ (the
# engine tools: train-heads, pod-calibrate, selftest) may include engine/.
# A plain grep of the sources: it needs no build.  LAYERS_ROOT=DIR checks
# another tree (e.g. an older checkout) instead of this one.
set -u
cd "$(dirname "$0")/../.."
. tests/sh/lib.bash
ROOT=${LAYERS_ROOT:-.}
LOWER='engine|storage|snapshot|kernels|formats|index'
INC="^[[:space:]]*#[[:space:]]*include[[:space:]]*[\"<]($LOWER)/"

# the files of a folder (recursively), clients/tools/ left out
front_files() {
	(cd "$ROOT" && find daemon clients -path clients/tools -prune -o -type f \
		\( -name '*.c' -o -name '*.h' \) -print | sort)
}

# each offending line as "FILE:LINE: #include ..." with the rule it breaks
bad=$(cd "$ROOT" && front_files | xargs grep -nE "$INC" /dev/null || true)
[ -n "$(front_files)" ]; ok "daemon/ and clients/ have sources to check" $?
[ -z "$bad" ]; _s=$?
ok "daemon/ and clients/ (outside clients/tools/) include nothing below service/" $_s ||
	echo "$bad" | sed -E 's/^([^:]+:[0-9]+):[[:space:]]*(.*)$/#   \1: \2: daemon\/ and clients\/ may include service\/ and common\/ only (engine tools: clients\/tools\/)/'

# service.h and the store commands' header it includes (service/store.h)
bad=$(cd "$ROOT" && grep -nE "$INC" service/service.h $(ls service/store.h 2>/dev/null) /dev/null || true)
[ -z "$bad" ]; _s=$?
ok "service/service.h (with service/store.h) re-exports no lower header" $_s ||
	echo "$bad" | sed -E 's/^([^:]+:[0-9]+):[[:space:]]*(.*)$/#   \1: \2: service.h is the front ends'"'"' whole view: forward-declare, or move it to service_internal.h/'

# the store commands' transitional header (issue 32 item 2) is gone: the
# store commands are service calls (service/store.h)
[ ! -e "$ROOT/service/store_commands.h" ]
ok "no service/store_commands.h: the store commands are service calls" $?

# clients/tools/ may go below service/ for the model itself (engine/,
# kernels/), never around the store
bad=$(cd "$ROOT" && [ -d clients/tools ] &&
	grep -rnE "^[[:space:]]*#[[:space:]]*include[[:space:]]*[\"<](storage|snapshot|index)/" \
		clients/tools /dev/null || true)
[ -z "$bad" ]; _s=$?
ok "clients/tools/ includes no storage/, snapshot/ or index/ header" $_s ||
	echo "$bad" | sed 's/^/#   /'
finish
