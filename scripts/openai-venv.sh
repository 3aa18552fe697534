#!/usr/bin/env bash
# openai-venv.sh BUILD_DIR: the official `openai` Python package, LangChain's
# `langchain-openai` and `prometheus-client` (its text-format parser reads
# /metrics), all pinned, in a virtual environment under BUILD_DIR/openai-venv,
# for tests/sh/openai.sh, tests/sh/http_ops.sh and bench/http.sh.
# Idempotent: does nothing when those versions are there.
# Needs python3-venv (scripts/install-deps.sh) and PyPI.
set -euo pipefail
OPENAI_VERSION=3.57.0
LANGCHAIN_OPENAI_VERSION=1.7.4
PROMETHEUS_CLIENT_VERSION=0.26.0
venv=${1:-build}/openai-venv
# Debian's python3 (scripts/install-deps.sh) when there: a venv of it runs
# for every user (tests/sh/openai.sh runs one as a second user)
PYTHON=${PYTHON:-$(command -v /usr/bin/python3 || command -v python3)}
if "$venv/bin/python" -c "import openai, sys, importlib.metadata as m
sys.exit(openai.__version__ != '$OPENAI_VERSION' or
	m.version('langchain-openai') != '$LANGCHAIN_OPENAI_VERSION' or
	m.version('prometheus-client') != '$PROMETHEUS_CLIENT_VERSION' or
	sys.base_prefix != '$("$PYTHON" -c 'import sys; print(sys.base_prefix)')')" 2>/dev/null; then
	exit 0
fi
rm -rf "$venv"
"$PYTHON" -m venv "$venv"
"$venv/bin/pip" install -q --disable-pip-version-check "openai==$OPENAI_VERSION" \
	"langchain-openai==$LANGCHAIN_OPENAI_VERSION" "prometheus-client==$PROMETHEUS_CLIENT_VERSION"
"$venv/bin/python" -c "import openai, langchain_openai, prometheus_client, importlib.metadata as m
print('openai-venv: openai', openai.__version__, 'langchain-openai', m.version('langchain-openai'),
	'prometheus-client', m.version('prometheus-client'))"
