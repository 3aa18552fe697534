#!/usr/bin/env bash
# kvsnap tokenize -m on llama.cpp's vocab-only GGUFs (no weights; make vocabs
# puts them in build/vocab): the ids equal llama.cpp's expected ids for a
# text of the vocabulary's .inp, for a BPE, a SentencePiece and a regex
# pre-tokenizer vocabulary; a GGUF naming an unknown tokenizer.ggml.pre or
# tokenizer.ggml.model is refused with an error that names it.
. "$(dirname "$0")/lib.bash"
need "$K" command:python3
V=${KVSNAP_VOCAB_DIR:-build/vocab}
scratch tokvocab

# case_of NAME N: text and expected ids of case N of the vocabulary's test set
case_of() {
	python3 - "$V/ggml-vocab-$1.gguf" "$2" "$T/text" "$T/want" <<'EOF'
import sys
base, n, text, want = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
inp = open(base + ".inp", "rb").read().split(b"\n__ggml_vocab_test__\n")
out = open(base + ".out").read().split("\n")
open(text, "wb").write(inp[n])
open(want, "w").write(" ".join(out[n].split()) + "\n")
EOF
}

for v in qwen2 llama-spm deepseek-coder phi-3; do
	if [ ! -f "$V/ggml-vocab-$v.gguf" ]; then
		ok "$V/ggml-vocab-$v.gguf present (run make vocabs)" 1
		continue
	fi
	for n in 10 30 45; do
		case_of "$v" "$n"
		text=$(cat "$T/text"; printf x) # keeps trailing newlines
		"$K" tokenize -m "$V/ggml-vocab-$v.gguf" --no-special "${text%x}" \
			> "$T/got" 2> "$T/err"
		rc=$?
		cmp -s "$T/got" "$T/want"
		ok "tokenize -m ggml-vocab-$v.gguf case $n: $(head -c 60 "$T/got") (exit $rc)" $? ||
			echo "#   want $(cat "$T/want"); err $(cat "$T/err")"
	done
done

# a GGUF whose tokenizer.ggml.pre / .model says something we do not know
patch_kv() { # SRC KEY OLD NEW OUT: the string value OLD of KEY becomes NEW (same length)
	python3 - "$@" <<'EOF'
import struct, sys
src, key, old, new, out = sys.argv[1:]
b = bytearray(open(src, "rb").read())
k = key.encode()
at = b.index(struct.pack("<Q", len(k)) + k) + 8 + len(k)
assert struct.unpack_from("<I", b, at)[0] == 8  # a string
n = struct.unpack_from("<Q", b, at + 4)[0]
assert bytes(b[at + 12:at + 12 + n]) == old.encode() and len(old) == len(new)
b[at + 12:at + 12 + n] = new.encode()
open(out, "wb").write(bytes(b))
EOF
}
if [ -f "$V/ggml-vocab-qwen2.gguf" ]; then
	patch_kv "$V/ggml-vocab-qwen2.gguf" tokenizer.ggml.pre qwen2 qwen9 "$T/pre.gguf"
	expect_rc "unknown tokenizer.ggml.pre refused as a model we cannot read" 4 "$K" tokenize -m "$T/pre.gguf" hi
	grep -q "tokenizer.ggml.pre 'qwen9' is not supported" "$T/err"
	ok "the error names it: $(head -c 80 "$T/err")" $?
	patch_kv "$V/ggml-vocab-qwen2.gguf" tokenizer.ggml.model gpt2 gpt9 "$T/model.gguf"
	expect_rc "unknown tokenizer.ggml.model refused as a model we cannot read" 4 "$K" tokenize -m "$T/model.gguf" hi
	grep -q "tokenizer.ggml.model 'gpt9' is not supported" "$T/err"
	ok "the error names it: $(head -c 80 "$T/err")" $?
else
	ok "$V/ggml-vocab-qwen2.gguf present (run make vocabs)" 1
fi
finish
