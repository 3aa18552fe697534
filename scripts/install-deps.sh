#!/usr/bin/env bash
# Install every Debian package kvsnap's build, tests and tools use.
# Idempotent: does nothing (and needs no root) when all are present.
set -euo pipefail
PKGS=(build-essential pkg-config clang libclang-rt-14-dev
      libopenblas-dev liblmdb-dev lmdb-utils libzstd-dev libevent-dev libjansson-dev
      libsodium-dev libxxhash-dev libsystemd-dev systemd unicode-data unzip python3 python3-venv
      fortunes fortunes-min wamerican python3-matplotlib
      groff-base mandoc zsh libpoppler-glib-dev libxml2-dev libcmark-dev
      faketime   # tests/sh/cli_output.sh: relative times (yesterday, a date)
      redis-server redis-tools libhiredis-dev   # the redis-cluster backend and its tests
      libsqlite3-dev   # index/: the text index (SQLite FTS5)
      groff)           # bench/library.sh: its HTML and PDF documents (-Thtml, -Tpdf)
missing=()
for p in "${PKGS[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "install-deps: installing ${missing[*]}"
SUDO=
[ "$(id -u)" -eq 0 ] || SUDO=sudo
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
