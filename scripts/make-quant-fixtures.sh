#!/usr/bin/env bash
# Regenerate tests/fixtures/quant_dequant.bin with ggml's reference
# dequantizers as gguf-py ships them (PyPI gguf, version pinned), in a venv of
# its own (.venv-quantfix/).  A tool for making fixtures: make check never
# needs it.
set -euo pipefail
cd "$(dirname "$0")/.."
GGUF_VERSION=0.19.0
VENV=.venv-quantfix
if ! "$VENV/bin/python" -c "import gguf, numpy, sys; from importlib.metadata import version; sys.exit(version('gguf') != '$GGUF_VERSION')" 2>/dev/null; then
	python3 -m venv "$VENV"
	"$VENV/bin/pip" install --quiet "gguf==$GGUF_VERSION" numpy
fi
"$VENV/bin/python" scripts/make-quant-fixtures.py tests/fixtures/quant_dequant.bin
