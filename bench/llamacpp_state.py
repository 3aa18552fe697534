#!/usr/bin/env python3
"""llama.cpp's saved state for the document bench_snapshot / bench_ttft
measure: the license texts in name order, tokenized by llama.cpp, wrapped in
SmolLM2's chat template the way kvsnap does it (engine/model/chat.c: default
system turn, then the document as the start of the user turn), cut to N
tokens in all, one prefill, then save_state() (f16 KV cache, llama.cpp's
default), whose bytes are what llama.cpp would store to skip re-reading.

Then llama.cpp's own time to first token of the question ("\\n\\n" QUESTION,
end of turn, assistant header, as kvsnap's eng_chat_question_ids) from that
state: load_state (from memory: no disk read) + eval of the question +
argmax of the last token's logits, median of 3; and from a full re-prefill
of document + question after llm.reset(), median of FULL_REPS (default 3).
One JSON line.  Uses llama-cpp-python from .venv-fixtures
(scripts/make-fixtures.sh).

  .venv-fixtures/bin/python bench/llamacpp_state.py [MODEL] [TOKENS] [THREADS] [FULL_REPS]

Keys: tokens (document, template included), state_bytes, prefill_s, save_s,
state_ttft_ms, reprefill_ms (as before), and load_ms, question_ms (the two
parts of state_ttft_ms, medians of their own), question_tokens,
first_token_state / first_token_full (the greedy first token each way) and
full_reps."""
import json
import os
import sys
import time

import llama_cpp
import numpy as np
from llama_cpp import Llama

QUESTION = b"What is this document about? Answer in one sentence."
SYSTEM = b"You are a helpful AI assistant named SmolLM, trained by Hugging Face"

model = sys.argv[1] if len(sys.argv) > 1 else "models/SmolLM2-135M-Instruct.Q4_1.gguf"
n = int(sys.argv[2]) if len(sys.argv) > 2 else 8192
threads = int(sys.argv[3]) if len(sys.argv) > 3 else 2
reps = int(sys.argv[4]) if len(sys.argv) > 4 else 3
if reps < 1:
    sys.exit("llamacpp_state: FULL_REPS must be at least 1")
d = "/usr/share/common-licenses"
text = b"".join(open(os.path.join(d, f), "rb").read() for f in sorted(os.listdir(d))
                if not f.startswith(".") and os.path.isfile(os.path.join(d, f)))
llm = Llama(model_path=model, n_ctx=n + 64, n_batch=512, n_ubatch=512, n_threads=threads,
            n_threads_batch=threads, logits_all=False, verbose=False)
# the template parts with their specials parsed, the prose and the question
# without (as engine/model/chat.c); the prose's ids are cut so that the whole
# templated document has n tokens
pre = llm.tokenize(b"<|im_start|>system\n" + SYSTEM + b"<|im_end|>\n<|im_start|>user\n",
                   add_bos=False, special=True)
ids = pre + llm.tokenize(text, add_bos=False, special=False)[:max(0, n - len(pre))]
q = (llm.tokenize(b"\n\n" + QUESTION, add_bos=False, special=False)  # one run, as kvsnap
     + llm.tokenize(b"<|im_end|>\n<|im_start|>assistant\n", add_bos=False, special=True))
t0 = time.perf_counter()
llm.eval(ids)
t_eval = time.perf_counter() - t0
t0 = time.perf_counter()
st = llm.save_state()
t_save = time.perf_counter() - t0


def first_token():
    # the last evaluated token's logits, straight from the context
    logits = np.ctypeslib.as_array(llama_cpp.llama_get_logits(llm.ctx), shape=(llm.n_vocab(),))
    return int(logits.argmax())


def median(xs):
    xs = sorted(xs)
    k = len(xs)
    return xs[k // 2] if k % 2 else (xs[k // 2 - 1] + xs[k // 2]) / 2


ttft, load, ques, full = [], [], [], []
for _ in range(3):
    t0 = time.perf_counter()
    llm.load_state(st)
    t1 = time.perf_counter()
    llm.eval(q)
    tok_state = first_token()
    t2 = time.perf_counter()
    ttft.append(t2 - t0)
    load.append(t1 - t0)
    ques.append(t2 - t1)
for _ in range(reps):
    llm.reset()
    t0 = time.perf_counter()
    llm.eval(ids + q)
    tok_full = first_token()
    full.append(time.perf_counter() - t0)
print(json.dumps({"tokens": len(ids), "state_bytes": st.llama_state_size,
                  "prefill_s": round(t_eval, 2), "save_s": round(t_save, 3),
                  "state_ttft_ms": round(median(ttft) * 1e3, 1),
                  "reprefill_ms": round(median(full) * 1e3, 1),
                  "load_ms": round(median(load) * 1e3, 1),
                  "question_ms": round(median(ques) * 1e3, 1),
                  "question_tokens": len(q), "first_token_state": tok_state,
                  "first_token_full": tok_full, "full_reps": reps}),
      flush=True)
