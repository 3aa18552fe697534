#!/usr/bin/env bash
# Regenerate tests/fixtures/ from llama.cpp (PyPI llama-cpp-python, built
# CPU-only into .venv-fixtures/).  A tool for making fixtures: make check
# never needs it.
set -euo pipefail
cd "$(dirname "$0")/.."
LLAMA_CPP_PYTHON_VERSION=0.3.16
VENV=.venv-fixtures
if ! "$VENV/bin/python" -c "import llama_cpp, numpy" 2>/dev/null; then
	python3 -m venv "$VENV"
	# AVX2 only: the native build on AVX-512/AMX machines (GGML_NATIVE=ON)
	# returned wrong logits for batches of >= 32 tokens here (measured:
	# max |Δ| 36 vs token-by-token), so the reference is built without them.
	CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON \
		-DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF \
		-DLLAVA_BUILD=OFF -DGGML_BLAS=OFF -DGGML_CUDA=OFF" \
	CMAKE_BUILD_PARALLEL_LEVEL="$(nproc)" \
		"$VENV/bin/pip" install --no-cache-dir "llama-cpp-python==$LLAMA_CPP_PYTHON_VERSION" numpy gguf
fi
if [ "${1:-}" = "--venv-only" ]; then exit 0; fi
mkdir -p tests/fixtures
"$VENV/bin/python" scripts/make-token-fixtures.py
"$VENV/bin/python" scripts/make-fixtures.py models/SmolLM2-135M-Instruct.Q4_1.gguf tests/fixtures/logits.bin
# Qwen2.5-Coder-1.5B-Instruct (make model-qwen), for tests/sh/qwen.sh
QWEN=models/Qwen2.5-Coder-1.5B-Instruct.Q4_K_M.gguf
if [ -f "$QWEN" ]; then
	"$VENV/bin/python" scripts/make-token-fixtures.py --model "$QWEN" --out tests/fixtures/qwen_tokens.txt
	"$VENV/bin/python" scripts/make-fixtures.py "$QWEN" tests/fixtures/qwen_logits.bin qwen
fi
# Qwen2.5-Coder-0.5B-Instruct (make model-qwen05, the demo's model): the
# same vocabulary as the 1.5B (qwen_tokens.txt checks both), its own logits
QWEN05=models/Qwen2.5-Coder-0.5B-Instruct.gguf
if [ -f "$QWEN05" ]; then
	"$VENV/bin/python" scripts/make-fixtures.py "$QWEN05" tests/fixtures/qwen05_logits.bin qwen
fi
