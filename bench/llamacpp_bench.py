#!/usr/bin/env python3
"""llama.cpp's speed on the same GGUF, same thread count, same token stream
as bench/bench_engine.c: prefill tokens/s at 512, 2048 and 8192 tokens and
decode tokens/s (128 tokens after a 64-token prompt).  One JSON object per
line.  Uses llama-cpp-python from .venv-fixtures (scripts/make-fixtures.sh)."""
import json
import sys
import time

from llama_cpp import Llama

model = sys.argv[1] if len(sys.argv) > 1 else "models/SmolLM2-135M-Instruct.Q4_1.gguf"
threads = int(sys.argv[2]) if len(sys.argv) > 2 else 2
reps = int(sys.argv[3]) if len(sys.argv) > 3 else 2
max_len = int(sys.argv[4]) if len(sys.argv) > 4 else 8192  # skip longer prefills
min_len = int(sys.argv[5]) if len(sys.argv) > 5 else 0  # skip shorter prefills
decode = int(sys.argv[6]) if len(sys.argv) > 6 else 1  # 0: no decode row
n_ids = 32768 if max_len > 8192 else 8192  # 32K only when asked (a 32K-window model)
ids = [100 + (i * 7919) % 40000 for i in range(n_ids)]
llm = Llama(model_path=model, n_ctx=n_ids + 256, n_batch=512, n_ubatch=512, n_threads=threads,
            n_threads_batch=threads, logits_all=False, flash_attn=False, verbose=False)
for n in (n for n in (512, 2048, 8192, 32768) if min_len <= n <= max_len):
    best = 1e9
    for _ in range(1 if n >= 8192 else reps):
        llm.reset()
        llm._ctx.kv_cache_clear()
        t0 = time.perf_counter()
        llm.eval(ids[:n])
        best = min(best, time.perf_counter() - t0)
    print(json.dumps({"what": "prefill", "tokens": n, "tok_s": round(n / best, 1)}), flush=True)
best = 1e9
for _ in range(reps if decode else 0):
    llm.reset()
    llm._ctx.kv_cache_clear()
    llm.eval(ids[:64])
    t0 = time.perf_counter()
    for i in range(128):
        llm.eval([ids[(i + 1) % 8192]])
    best = min(best, time.perf_counter() - t0)
if decode:
    print(json.dumps({"what": "decode", "tokens": 128, "tok_s": round(128 / best, 1)}), flush=True)
