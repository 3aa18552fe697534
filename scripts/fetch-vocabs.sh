#!/usr/bin/env bash
# Fetch llama.cpp's tokenizer test vocabularies (vocab-only GGUFs with their
# .inp texts and .out expected ids) from the llama-cpp-python 0.3.16 source
# distribution on PyPI into build/vocab/ (or $1).  The sdist and every file
# taken from it are pinned by SHA-256; nothing here is committed.  A second
# run with the files in place and intact does nothing.
# Used by tests/test_vocab.c (make check runs `make vocabs` first).
set -euo pipefail
cd "$(dirname "$0")/.."
DEST=${1:-build/vocab}
VERSION=0.3.16
SDIST=llama_cpp_python-$VERSION.tar.gz
SDIST_SHA256=34ed0f9bd9431af045bb63d9324ae620ad0536653740e9bb163a2e1fcb973be6
INP_SHA256=be0a11f7071f0c67d3053a2d377d8f35f0dbcb77ff11a60300fb57d36b477cf0
# vocabularies of chat-model families with expected ids (every .inp is the same file)
PINS=$(cat <<'PINS'
a2f8cfea952ef7c391a6d92a1c309d0bd32e36384d9b9230569a7425732f27d9  ggml-vocab-command-r.gguf
d2a601336e422b60a264858c01b14c5d37575fe1f9adfcafc2f3b3707903903f  ggml-vocab-command-r.gguf.out
91cb1379f2e33af1c4866b194622b7a0e12e8f0c9dba7ba2f10d55978730bec1  ggml-vocab-deepseek-coder.gguf
c2cea4584b0487e67fbd81f491bb44f89238722062126120d2c412edb3dbd853  ggml-vocab-deepseek-coder.gguf.out
867f77537b54565f0d81d508c04edc41aa1d4ffc1a92745f225b4c1b02755f76  ggml-vocab-deepseek-llm.gguf
87cfc1a8a9a7ef25d04d28c26a67b6a620af7be938c9bd0feeb4d319b9302832  ggml-vocab-deepseek-llm.gguf.out
9f0bf8b0733680398b72e652e90f260f43782f326e75545fc0e49611a5ba35ad  ggml-vocab-falcon.gguf
f8c80a0483582ef195c2129b69bb2e4e421b0f31ed7b35d84b63511d7ebae7cd  ggml-vocab-falcon.gguf.out
cedc56ca6e2e89f63e781696d1fd76b4b1d49e6720dee86463e915f6e90016ac  ggml-vocab-gpt-2.gguf
48e8c4cb3ad5c37915b225f872222567c1c4dd4d66951aa53460c8d152ff6d60  ggml-vocab-gpt-2.gguf.out
97272e430d53bc7688f52d5e0ad8ea8f163ede9f1bbd1694feaa504797d5d96e  ggml-vocab-llama-bpe.gguf
118abf2034a197fc5c9dec5204dfdeee7004c7c70952ae577f66b99e212fab9b  ggml-vocab-llama-bpe.gguf.out
16c3724582d59aa8bf84711894e833f916ee46a31d80e21312759c48bf8d0e69  ggml-vocab-llama-spm.gguf
ad6905c925c49c022974fe67e030382e8a4f56eb4489a0b9481dcedb1ec73b29  ggml-vocab-llama-spm.gguf.out
59dc382612866d1fc6c11ea531318d327598f3412d9c8f8600607cdf3030898f  ggml-vocab-mpt.gguf
9d0982a7e7950b81bc2e325fb61bb7e295d2238934ab889737494de2dc4d906b  ggml-vocab-mpt.gguf.out
967d7190d11c4842eab697079d98d56c2116e10eb617be355a2733bfc132e326  ggml-vocab-phi-3.gguf
ad6905c925c49c022974fe67e030382e8a4f56eb4489a0b9481dcedb1ec73b29  ggml-vocab-phi-3.gguf.out
44c2f46b715f585c6ab513970e8a006bfa5badd6108560054921cf598d154d8c  ggml-vocab-qwen2.gguf
de785bb305cc6fa9d43908ed5da337f853c0b79e971348fcfb9f0915a39c5363  ggml-vocab-qwen2.gguf.out
ac3ceda902fed91ccf74312b305d9b86c37e4f8e35fa9cc6ef3ce34fca7d4678  ggml-vocab-refact.gguf
c7e5c1c5dc1dfd3e0d56576bf699d2aca0b760b80779523ea9d323aad6cd1b88  ggml-vocab-refact.gguf.out
fedb892b4e1bd3c1f2fcdae356440b14fb458f4264d586e5c987ed93df4e174d  ggml-vocab-starcoder.gguf
3ef12183c57ad076f9defd8e5eb454f509f5f0865cad35646abb4c4b2d2c5764  ggml-vocab-starcoder.gguf.out
PINS
)

mkdir -p "$DEST"
check() { # all pinned files present and intact in $DEST?
	(cd "$DEST" && echo "$PINS" | sha256sum -c --status 2>/dev/null) || return 1
	local f
	for f in $(echo "$PINS" | awk '/\.gguf$/ {print $2}'); do
		(cd "$DEST" && echo "$INP_SHA256  $f.inp" | sha256sum -c --status 2>/dev/null) || return 1
	done
}
check && exit 0

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
PIP=(python3 -m pip)
"${PIP[@]}" --version >/dev/null 2>&1 || PIP=(pip3)
# --no-binary only for this package: its build dependencies (needed to read
# the sdist's metadata) may come as wheels, which is much faster
"${PIP[@]}" download --quiet --no-deps --no-binary llama-cpp-python -d "$tmp" \
	"llama-cpp-python==$VERSION"
echo "$SDIST_SHA256  $tmp/$SDIST" | sha256sum -c --status ||
	{ echo "fetch-vocabs: $SDIST hash mismatch" >&2; exit 1; }
src=llama_cpp_python-$VERSION/vendor/llama.cpp/models
tar -xzf "$tmp/$SDIST" -C "$tmp" "$src"
(cd "$tmp/$src" && echo "$PINS" | sha256sum -c --status) ||
	{ echo "fetch-vocabs: a vocabulary file's hash does not match" >&2; exit 1; }
for f in $(echo "$PINS" | awk '{print $2}'); do
	cp "$tmp/$src/$f" "$DEST/$f.part" && mv "$DEST/$f.part" "$DEST/$f"
done
for f in $(echo "$PINS" | awk '/\.gguf$/ {print $2}'); do
	cp "$tmp/$src/$f.inp" "$DEST/$f.inp.part" && mv "$DEST/$f.inp.part" "$DEST/$f.inp"
done
check || { echo "fetch-vocabs: $DEST does not verify after copying" >&2; exit 1; }
echo "fetch-vocabs: $(echo "$PINS" | grep -c '\.gguf$') vocabularies in $DEST (sha256 ok)"
