#!/usr/bin/env python3
"""Write the seed corpora of the libFuzzer targets (tests/fuzz/corpus/):
small valid GGUF files (a tiny llama with a 40-token BPE vocabulary, a bare
file with every metadata type, and vocab-only files for SentencePiece and
the qwen2 and deepseek-llm pre-tokenizers), tokenizer inputs, and the
texts fuzz_passages cuts into the index's passages."""
import os
import struct

OUT = os.path.join(os.path.dirname(__file__), "..", "tests", "fuzz", "corpus")


def s(x):
    b = x.encode()
    return struct.pack("<Q", len(b)) + b


def kv(key, vtype, payload):
    return s(key) + struct.pack("<I", vtype) + payload


def arr(etype, items, enc):
    return struct.pack("<IQ", etype, len(items)) + b"".join(enc(i) for i in items)


def gguf(kvs, tensors):
    head = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kvs)) + b"".join(kvs)
    infos, data = b"", b""
    for name, ne, typ, blob in tensors:
        infos += s(name) + struct.pack("<I", len(ne)) + b"".join(struct.pack("<Q", n) for n in ne)
        infos += struct.pack("<IQ", typ, len(data))
        data += blob + b"\0" * ((-len(blob)) % 32)
    out = head + infos
    out += b"\0" * ((-len(out)) % 32)
    return out + data


def tiny_llama():
    toks = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"] + [chr(c) for c in range(ord("a"), ord("z") + 1)]
    toks += ["\u0120", "\u010a", "ab", "abc", "\u0120a", "1", "2", "3", "!", "?", "."]
    merges = ["a b", "ab c", "\u0120 a"]
    kvs = [
        kv("general.architecture", 8, s("llama")),
        kv("llama.block_count", 4, struct.pack("<I", 1)),
        kv("llama.context_length", 4, struct.pack("<I", 64)),
        kv("llama.embedding_length", 4, struct.pack("<I", 32)),
        kv("llama.feed_forward_length", 4, struct.pack("<I", 64)),
        kv("llama.attention.head_count", 4, struct.pack("<I", 2)),
        kv("llama.attention.head_count_kv", 4, struct.pack("<I", 1)),
        kv("llama.attention.layer_norm_rms_epsilon", 6, struct.pack("<f", 1e-5)),
        kv("tokenizer.ggml.model", 8, s("gpt2")),
        kv("tokenizer.ggml.pre", 8, s("smollm")),
        kv("tokenizer.ggml.tokens", 9, arr(8, toks, s)),
        kv("tokenizer.ggml.token_type", 9, arr(5, [3, 3, 3] + [1] * (len(toks) - 3), lambda v: struct.pack("<i", v))),
        kv("tokenizer.ggml.merges", 9, arr(8, merges, s)),
        kv("tokenizer.ggml.bos_token_id", 4, struct.pack("<I", 1)),
        kv("tokenizer.ggml.eos_token_id", 4, struct.pack("<I", 2)),
    ]
    f32 = lambda n: struct.pack("<%df" % n, *([0.5] * n))
    tensors = [("token_embd.weight", [32, len(toks)], 0, f32(32 * len(toks))),
               ("output_norm.weight", [32], 0, f32(32))]
    return gguf(kvs, tensors)


def all_types():
    kvs = [kv("u8", 0, b"\x01"), kv("i8", 1, b"\xff"), kv("u16", 2, b"\1\0"), kv("i16", 3, b"\1\0"),
           kv("u32", 4, b"\1\0\0\0"), kv("i32", 5, b"\1\0\0\0"), kv("f32", 6, struct.pack("<f", 1.5)),
           kv("bool", 7, b"\1"), kv("str", 8, s("hello")), kv("arr", 9, arr(4, [1, 2, 3], lambda v: struct.pack("<I", v))),
           kv("u64", 10, struct.pack("<Q", 7)), kv("i64", 11, struct.pack("<q", -7)), kv("f64", 12, struct.pack("<d", 2.5)),
           kv("general.alignment", 4, struct.pack("<I", 64))]
    q8 = struct.pack("<H", 0x3C00) + bytes(range(32))
    return gguf(kvs, [("q8", [32, 2], 8, q8 * 2), ("f16", [4], 1, b"\0\x3c" * 4)])


def vocab_only(model, pre, name):
    """A tokenizer without weights: BPE with merges, or SentencePiece with
    scores and <0xXX> byte tokens."""
    i32 = lambda v: struct.pack("<i", v)
    if model == "llama":
        toks = ["<unk>", "<s>", "</s>", "<|user|>"] + ["<0x%02X>" % b for b in (0x0A, 0x20, 0xC3, 0xA9)]
        toks += ["\u2581", "a", "b", "c", "\u2581a", "ab", "\u2581ab", "\u00e9", "1", "2"]
        types = [2, 3, 3, 4] + [6] * 4 + [1] * (len(toks) - 8)
        kvs = [kv("general.name", 8, s(name)),
               kv("tokenizer.ggml.model", 8, s("llama")),
               kv("tokenizer.ggml.tokens", 9, arr(8, toks, s)),
               kv("tokenizer.ggml.scores", 9, arr(6, [-float(i) for i in range(len(toks))],
                                                  lambda v: struct.pack("<f", v))),
               kv("tokenizer.ggml.token_type", 9, arr(5, types, i32)),
               kv("tokenizer.ggml.add_space_prefix", 7, b"\1")]
    else:
        toks = ["<|endoftext|>"] + [chr(c) for c in range(ord("a"), ord("z") + 1)]
        toks += ["\u0120", "\u010a", "ab", "\u0120a", "1", "2", "!", "\u00c3", "\u00a9"]
        kvs = [kv("general.name", 8, s(name)),
               kv("tokenizer.ggml.model", 8, s("gpt2")),
               kv("tokenizer.ggml.pre", 8, s(pre)),
               kv("tokenizer.ggml.tokens", 9, arr(8, toks, s)),
               kv("tokenizer.ggml.token_type", 9, arr(5, [3] + [1] * (len(toks) - 1), i32)),
               kv("tokenizer.ggml.merges", 9, arr(8, ["a b", "\u0120 a"], s))]
    return gguf(kvs, [])


def main():
    os.makedirs(os.path.join(OUT, "gguf"), exist_ok=True)
    os.makedirs(os.path.join(OUT, "tokenizer"), exist_ok=True)
    for name, blob in (("tiny_llama.seed", tiny_llama()), ("all_types.seed", all_types()),
                       ("vocab_spm.seed", vocab_only("llama", None, "Phi-3 mini")),
                       ("vocab_qwen2.seed", vocab_only("gpt2", "qwen2", "qwen")),
                       ("vocab_deepseek_llm.seed", vocab_only("gpt2", "deepseek-llm", "ds"))):
        with open(os.path.join(OUT, "gguf", name), "wb") as f:
            f.write(blob)
    texts = ["Hello world 2024!", "<|im_start|>user\nhi<|im_end|>\n", "  \t\n\n   x", "caf\u00e9 \u65e5\u672c\u8a9e \U0001F600",
             "don't won't I'LL", "\xff\xfe invalid", "1234567890" * 5, "def f(x):\n    return x**2\n"]
    for i, t in enumerate(texts):
        with open(os.path.join(OUT, "tokenizer", "seed%d.txt" % i), "wb") as f:
            f.write(t.encode("utf-8", "surrogateescape"))

    # fuzz_passages: a part's text (index/index.c cuts it into passages of
    # 120 words, one every 60): short, a few passages long, white space of
    # every kind, no words at all, and non-ASCII words
    os.makedirs(os.path.join(OUT, "passages"), exist_ok=True)
    words = " ".join("w%d" % i for i in range(300))
    passages = ["The bell of the Rimwick tower weighs 474 kilograms.", words,
                "a\tb\nc\r\nd\v e\f  f " * 70, " \t\n  \r ", "\u00e9t\u00e9 \u65e5\u672c " * 130,
                "NEWS\n====\n\n* Item one.\n* Item two: \"quoted\" AND OR NOT *.\n" * 20]
    for i, t in enumerate(passages):
        with open(os.path.join(OUT, "passages", "seed%d.txt" % i), "wb") as f:
            f.write(t.encode("utf-8"))


if __name__ == "__main__":
    main()
