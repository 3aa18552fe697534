#!/usr/bin/env python3
"""llama.cpp's saved state for the document bench_snapshot measures: the
license texts in name order, tokenized by llama.cpp, cut to N tokens, one
prefill, then save_state() (f16 KV cache, llama.cpp's default), whose bytes
are what llama.cpp would store to skip re-reading.  Then llama.cpp's own
time to first token from that state (load_state + the question + argmax of
its logits) and from a full re-prefill of document + question, median of 3.
One JSON line.  Uses llama-cpp-python from .venv-fixtures
(scripts/make-fixtures.sh).

  .venv-fixtures/bin/python bench/llamacpp_state.py [MODEL] [TOKENS] [THREADS] [FULL_REPS]"""
import json
import os
import sys
import time

import llama_cpp
import numpy as np
from llama_cpp import Llama

model = sys.argv[1] if len(sys.argv) > 1 else "models/SmolLM2-135M-Instruct.Q4_1.gguf"
n = int(sys.argv[2]) if len(sys.argv) > 2 else 8192
threads = int(sys.argv[3]) if len(sys.argv) > 3 else 2
d = "/usr/share/common-licenses"
text = b"".join(open(os.path.join(d, f), "rb").read() for f in sorted(os.listdir(d))
                if not f.startswith(".") and os.path.isfile(os.path.join(d, f)))
llm = Llama(model_path=model, n_ctx=n + 64, n_batch=512, n_ubatch=512, n_threads=threads,
            n_threads_batch=threads, logits_all=False, verbose=False)
ids = llm.tokenize(text, add_bos=False, special=False)[:n]
t0 = time.perf_counter()
llm.eval(ids)
t_eval = time.perf_counter() - t0
t0 = time.perf_counter()
st = llm.save_state()
t_save = time.perf_counter() - t0
q = llm.tokenize(b"\n\nWhat is this document about? Answer in one sentence.", add_bos=False,
                 special=False)


def first_token():
    # the last evaluated token's logits, straight from the context
    logits = np.ctypeslib.as_array(llama_cpp.llama_get_logits(llm.ctx), shape=(llm.n_vocab(),))
    return int(logits.argmax())


def median(xs):
    return sorted(xs)[len(xs) // 2]


reps = int(sys.argv[4]) if len(sys.argv) > 4 else 3
ttft, full = [], []
for _ in range(3):
    t0 = time.perf_counter()
    llm.load_state(st)
    llm.eval(q)
    first_token()
    ttft.append(time.perf_counter() - t0)
for _ in range(reps):
    llm.reset()
    t0 = time.perf_counter()
    llm.eval(ids + q)
    first_token()
    full.append(time.perf_counter() - t0)
print(json.dumps({"tokens": len(ids), "state_bytes": st.llama_state_size,
                  "prefill_s": round(t_eval, 2), "save_s": round(t_save, 3),
                  "state_ttft_ms": round(median(ttft) * 1e3, 1),
                  "reprefill_ms": round(median(full) * 1e3, 1)}), flush=True)
