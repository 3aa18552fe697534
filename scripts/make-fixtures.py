#!/usr/bin/env python3
"""Record llama.cpp reference outputs for kvsnap's engine tests.

Runs a GGUF through llama.cpp (the PyPI package llama-cpp-python, built
CPU-only by scripts/make-fixtures.sh) and writes a fixture read by
tests/test_forward.c: tests/fixtures/logits.bin for the bundled SmolLM2
(profile "smollm2"), tests/fixtures/qwen_logits.bin for
Qwen2.5-Coder-1.5B-Instruct (profile "qwen": shorter prompts, 32 greedy
tokens, no full rows, so the fixture stays small and the test quick on the
bigger model).

  usage: make-fixtures.py MODEL OUT [smollm2|qwen]

  header:  "KVFX" | u32 version=3 | u32 n_vocab | u32 n_prompts | u32 topk
           | f32 noise, f32 noise_rel: llama.cpp's own max |logit| difference
             and centred relative L2 between batch and token-by-token
             evaluation of the first prompt
  prompt:  u32 n_tokens | u32 n_full | u32 n_gen
           i32 tokens[n_tokens]
           per position: f32 logsumexp | i32 top_ids[topk] | f32 top_vals[topk]
           per full row: u32 position | f32 logits[n_vocab]
           i32 gen[n_gen]              greedy continuation (64 tokens)
           f32 gap[n_gen]              llama.cpp's top-1 minus top-2 logit at each step

llama.cpp is run with an f32 KV cache (type_k = type_v = 0) so the only
rounding left on its side is the 8-bit activation quantization of its
quantized matmuls (spec/model.md §5.1).
"""
import struct
import sys

import numpy as np
from llama_cpp import Llama

MODEL = sys.argv[1] if len(sys.argv) > 1 else "models/SmolLM2-135M-Instruct.Q4_1.gguf"
OUT = sys.argv[2] if len(sys.argv) > 2 else "tests/fixtures/logits.bin"
PROFILE = sys.argv[3] if len(sys.argv) > 3 else "smollm2"
TOPK = 32
N_GEN = 64 if PROFILE == "smollm2" else 32
FULL_ROWS = PROFILE == "smollm2"

# each model's default system turn, as its chat template writes it
SYSTEM = {
    "smollm2": "You are a helpful AI assistant named SmolLM, trained by Hugging Face",
    "qwen": "You are Qwen, created by Alibaba Cloud. You are a helpful assistant.",
}[PROFILE]


def chat(user):
    return ("<|im_start|>system\n%s<|im_end|>\n<|im_start|>user\n%s<|im_end|>\n"
            "<|im_start|>assistant\n" % (SYSTEM, user))


def long_document(chars=3200):
    try:
        with open("/usr/share/common-licenses/GPL-3", encoding="utf-8") as f:
            text = f.read()
    except OSError:
        text = ("The quick brown fox jumps over the lazy dog. " * 200)
    return " ".join(text.split())[:chars]


# Prompts whose llama.cpp greedy continuation has no near-tie (top-1/top-2
# gap < 1.0, the size of llama.cpp's own batch-vs-token rounding noise) in
# its first 32 steps, so exact greedy agreement is a fair test.  They cover
# the chat template, raw text and a document of >= 512 tokens (split over
# two chunks by the engine); the logits test checks every position.
PROMPTS = [
    chat("Count from 1 to 40, separated by commas.") + "1, 2, 3, 4, 5,",
    "1, 2, 3, 4, 5, 6, 7, 8,",
    "2, 4, 6, 8, 10, 12,",
    chat("Here is a document:\n\n" + long_document() +
         "\n\nCount from 1 to 40, separated by commas.") + "1, 2, 3, 4, 5,",
    chat("List the numbers from 100 to 140.") + "100, 101, 102,",
]
# Qwen: the same kinds (chat, raw text, a document over two chunks of 97,
# code since it is a coder model), shorter.
if PROFILE == "qwen":
    PROMPTS = [
        chat("Count from 1 to 40, separated by commas.") + "1, 2, 3, 4, 5,",
        "1, 2, 3, 4, 5, 6, 7, 8,",
        chat("What is the capital of France?"),
        chat("Here is a document:\n\n" + long_document(700) +
             "\n\nWho publishes this license?"),
        "def fibonacci(n):\n    \"\"\"Return the n-th Fibonacci number.\"\"\"\n",
    ]


def check_build(llm):
    """Batch and token-by-token evaluation must agree up to llama.cpp's own
    activation rounding (~0.5 in logits); a broken SIMD path does not."""
    toks = llm.tokenize(PROMPTS[0].encode("utf-8"), add_bos=False, special=True)
    llm.reset()
    llm.eval(toks)
    batch = np.array(llm.scores[:len(toks), :])
    llm.reset()
    worst = rel = 0.0
    for i, t in enumerate(toks):
        llm.eval([t])
        d = np.array(llm.scores[i, :], dtype=np.float64) - batch[i]
        worst = max(worst, float(np.abs(d).max()))
        r = batch[i] - batch[i].mean()
        rel = max(rel, float(np.linalg.norm(d - d.mean()) / np.linalg.norm(r)))
    print("llama.cpp batch vs token-by-token: max |dlogit| %.3f, centred rel-L2 %.4f" % (worst, rel))
    if worst > 2.0:
        sys.exit("llama.cpp build is inconsistent (batch vs token-by-token); rebuild it AVX2-only")
    return worst, rel


def main():
    llm = Llama(model_path=MODEL, n_ctx=2048, n_batch=512, n_threads=2, logits_all=True,
                type_k=0, type_v=0, flash_attn=False, verbose=False)
    n_vocab = llm.n_vocab()
    noise, noise_rel = check_build(llm)
    out = [struct.pack("<4sIIIIff", b"KVFX", 3, n_vocab, len(PROMPTS), TOPK, noise, noise_rel)]
    for text in PROMPTS:
        toks = llm.tokenize(text.encode("utf-8"), add_bos=False, special=True)
        n = len(toks)
        llm.reset()
        llm.eval(toks)
        scores = np.array(llm.scores[:n, :], dtype=np.float32)
        full_pos = sorted(set([0, n // 2, n - 1] + list(range(128, n, 128)))) if FULL_ROWS else []
        out.append(struct.pack("<III", n, len(full_pos), N_GEN))
        out.append(np.asarray(toks, dtype="<i4").tobytes())
        for p in range(n):
            row = scores[p].astype(np.float64)
            m = row.max()
            lse = m + np.log(np.exp(row - m).sum())
            top = np.argsort(-scores[p], kind="stable")[:TOPK]
            out.append(struct.pack("<f", lse))
            out.append(top.astype("<i4").tobytes())
            out.append(scores[p][top].astype("<f4").tobytes())
        for p in full_pos:
            out.append(struct.pack("<I", p))
            out.append(scores[p].astype("<f4").tobytes())
        # greedy continuation
        gen, gap = [], []
        last = scores[n - 1].copy()
        for _ in range(N_GEN):
            order = np.argsort(-last, kind="stable")
            tok = int(order[0])
            gen.append(tok)
            gap.append(float(last[order[0]] - last[order[1]]))
            llm.eval([tok])
            last = np.array(llm.scores[llm.n_tokens - 1, :], dtype=np.float32)
        out.append(np.asarray(gen, dtype="<i4").tobytes())
        out.append(np.asarray(gap, dtype="<f4").tobytes())
        print("prompt: %d tokens, %d full rows, greedy: %s" %
              (n, len(full_pos), llm.detokenize(gen).decode("utf-8", "replace")[:60].replace("\n", " ")))
    with open(OUT, "wb") as f:
        f.write(b"".join(out))
    print("wrote", OUT)


if __name__ == "__main__":
    main()
