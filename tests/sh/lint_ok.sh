#!/usr/bin/env bash
# No test script passes `$?` to ok after a $(...) in the same call: the
# substitution resets $? first, so such a check always passed (lib.bash, ok).
set -u
cd "$(dirname "$0")/../.."
. tests/sh/lib.bash
bad=$(grep -nE '(^|[^[:alnum:]_-])ok "[^"]*\$\([^)]*\).*" \$\?' tests/sh/*.sh tests/sh/*.bash | grep -vE '^[^:]+:[0-9]+:[[:space:]]*#' || true)
[ -z "$bad" ]; _s=$?; ok "no ok \"...\$(...)...\" \$? in tests/sh" $_s || echo "$bad" | sed 's/^/#   /'
finish
