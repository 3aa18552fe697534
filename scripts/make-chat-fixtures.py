#!/usr/bin/env python3
"""Regenerate tests/fixtures/chat/: real chat templates rendered by jinja2.

Usage: scripts/make-chat-fixtures.py SDIST_DIR [QWEN_GGUF]

SDIST_DIR is llama-cpp-python 0.3.16's unpacked source distribution
(pip download --no-deps --no-binary :all: llama-cpp-python==0.3.16; sha256 in
../shared/models/README.md).  The templates come from its vocab-only GGUFs
(vendor/llama.cpp/models/ggml-vocab-*.gguf), its copies of the models' real
templates (vendor/llama.cpp/models/templates/*.jinja), the templates
llama_cpp/llama_chat_format.py carries, and models/SmolLM2-*.gguf (and the
Qwen GGUF when given).

Rendering is llama-cpp-python's Jinja2ChatFormatter (llama_chat_format.py)
done here without importing its native library: the same
ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True) and the
same variables, plus date_string="26 Jul 2024" (Llama 3.x templates fall back
to it when no clock is given; kvsnap never gives one, so a prompt does not
change with the day).

Each fixture NAME.txt holds hex-encoded lines: the template, bos and eos
texts, the family kvsnap must recognize (or "refused"), then conversations
(conv NAME GEN / msg ROLE HEX ...) each with jinja2's output (expect HEX) or
"expect error" where the template raises.  A template that raises on a
conversation opening with a system message (Gemma's, Mistral's v1: no system
role) is given the conversation folded as llama.cpp's own renderer and
minja's polyfill fold it, the system text and the first user message one user
message "SYSTEM\n\nUSER" (fold_system below; kvsnap's engine/model/chat.c
folds the same way).  tests/test_chat.c reads them.
"""
import ast
import os
import struct
import sys

import jinja2
from jinja2.sandbox import ImmutableSandboxedEnvironment

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
OUT = os.path.join(ROOT, "tests", "fixtures", "chat")

DOC = ("The lighthouse keeper's log, 3 March 1911.\n"
       "The fog bell rang twice before dawn, and the relief boat came at noon.")
QUESTION = "When did the relief boat come?"
CONVS = [
    ("user", 1, [("user", "What is the capital of France?")]),
    ("full", 1, [("system", "You are terse."), ("user", "Hello there"),
                 ("assistant", "  Hi! How can I help?\n"), ("user", " What is 2+2?  ")]),
    ("full-nogen", 0, [("system", "You are terse."), ("user", "Hello there"),
                       ("assistant", "Hi! How can I help?"), ("user", "What is 2+2?")]),
    ("no-system", 1, [("user", "Hello"), ("assistant", "Hi."), ("user", "Bye")]),
    ("kvsnap", 1, [("user", DOC + "\n\n" + QUESTION)]),
    ("two-users", 1, [("user", "a"), ("user", "b")]),
]


def gguf_strings(path, keys):
    """The string values of keys in a GGUF's metadata (and the token list)."""
    out = {}
    with open(path, "rb") as f:
        def rd(fmt):
            return struct.unpack("<" + fmt, f.read(struct.calcsize(fmt)))

        def rs():
            (n,) = rd("Q")
            return f.read(n).decode("utf-8")

        sizes = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?",
                 10: "Q", 11: "q", 12: "d"}

        def val(t):
            if t == 8:
                return rs()
            if t == 9:
                (et,) = rd("I")
                (n,) = rd("Q")
                if et == 8:
                    return [rs() for _ in range(n)]
                f.read(n * struct.calcsize(sizes[et]))
                return None
            return rd(sizes[t])[0]

        _, _, _, nkv = rd("4sIQQ")
        for _ in range(nkv):
            k = rs()
            (t,) = rd("I")
            v = val(t)
            if k in keys:
                out[k] = v
    return out


def from_gguf(path):
    kv = gguf_strings(path, {"tokenizer.chat_template", "tokenizer.ggml.tokens",
                             "tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id"})
    toks = kv.get("tokenizer.ggml.tokens") or []
    bos = kv.get("tokenizer.ggml.bos_token_id")
    eos = kv.get("tokenizer.ggml.eos_token_id")
    return (kv.get("tokenizer.chat_template"), toks[bos] if bos is not None else "",
            toks[eos] if eos is not None else "")


def llama_chat_format_constants(sdist):
    src = open(os.path.join(sdist, "llama_cpp", "llama_chat_format.py")).read()
    consts = {}
    for node in ast.parse(src).body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1 and
                isinstance(node.targets[0], ast.Name) and
                node.targets[0].id.endswith("_CHAT_TEMPLATE") and
                isinstance(node.value, ast.Constant)):
            consts[node.targets[0].id] = node.value.value
    return consts


def render(template, bos, eos, msgs, gen):
    def raise_exception(message):
        raise ValueError(message)

    env = ImmutableSandboxedEnvironment(loader=jinja2.BaseLoader(), trim_blocks=True,
                                        lstrip_blocks=True).from_string(template)
    return env.render(messages=[{"role": r, "content": c} for r, c in msgs],
                      eos_token=eos, bos_token=bos, raise_exception=raise_exception,
                      add_generation_prompt=bool(gen), functions=None, function_call=None,
                      tools=None, tool_choice=None, date_string="26 Jul 2024")


def fold_system(msgs):
    """The leading system messages and the first user message after them as
    one user message, their non-empty contents joined by a blank line."""
    k = 0
    while k < len(msgs) and msgs[k][0] == "system":
        k += 1
    take = k + (1 if k < len(msgs) and msgs[k][0] == "user" else 0)
    return [("user", "\n\n".join(c for _, c in msgs[:take] if c))] + list(msgs[take:])


def hx(s):
    return s.encode("utf-8").hex()


def write(name, source, family, template, bos, eos, render_with=None):
    lines = ["# %s: generated by scripts/make-chat-fixtures.py from %s" % (name, source),
             "template " + (hx(template) if template is not None else "-"),
             "bos " + hx(bos), "eos " + hx(eos), "family " + family]
    if family != "refused":
        for cname, gen, msgs in CONVS:
            lines.append("conv %s %d" % (cname, gen))
            for r, c in msgs:
                lines.append("msg %s %s" % (r, hx(c)))
            tpl = render_with or template
            try:
                lines.append("expect " + hx(render(tpl, bos, eos, msgs, gen)))
            except Exception:  # the template raises: kvsnap must refuse too,
                try:           # unless it folds a system message first
                    if msgs[0][0] != "system":
                        raise
                    lines.append("expect " + hx(render(tpl, bos, eos, fold_system(msgs), gen)))
                except Exception:
                    lines.append("expect error")
    with open(os.path.join(OUT, name + ".txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    sdist = sys.argv[1]
    models = os.path.join(sdist, "vendor", "llama.cpp", "models")
    tdir = os.path.join(models, "templates")
    consts = llama_chat_format_constants(sdist)
    os.makedirs(OUT, exist_ok=True)

    smol = os.path.join(ROOT, "models", "SmolLM2-135M-Instruct.Q4_1.gguf")
    write("smollm2", "models/SmolLM2-135M-Instruct.Q4_1.gguf", "chatml", *from_gguf(smol))
    write("qwen2-vocab", "ggml-vocab-qwen2.gguf", "chatml",
          *from_gguf(os.path.join(models, "ggml-vocab-qwen2.gguf")))
    write("phi3-vocab", "ggml-vocab-phi-3.gguf", "phi3",
          *from_gguf(os.path.join(models, "ggml-vocab-phi-3.gguf")))
    write("command-r-vocab", "ggml-vocab-command-r.gguf", "refused",
          *from_gguf(os.path.join(models, "ggml-vocab-command-r.gguf")))
    if len(sys.argv) > 2:
        write("qwen2.5-coder-gguf", os.path.basename(sys.argv[2]), "chatml",
              *from_gguf(sys.argv[2]))

    jinja = [  # (fixture, file, family, bos, eos)
        ("qwen2.5-instruct", "Qwen-Qwen2.5-7B-Instruct", "chatml", "", "<|im_end|>"),
        ("llama3.1-instruct", "meta-llama-Llama-3.1-8B-Instruct", "llama3",
         "<|begin_of_text|>", "<|eot_id|>"),
        ("llama3.2-instruct", "meta-llama-Llama-3.2-3B-Instruct", "llama3",
         "<|begin_of_text|>", "<|eot_id|>"),
        ("llama3.3-instruct", "meta-llama-Llama-3.3-70B-Instruct", "llama3",
         "<|begin_of_text|>", "<|eot_id|>"),
        ("mistral-nemo", "mistralai-Mistral-Nemo-Instruct-2407", "mistral", "<s>", "</s>"),
        ("gemma2-it", "google-gemma-2-2b-it", "gemma", "<bos>", "<eos>"),
        ("phi3.5-mini", "microsoft-Phi-3.5-mini-instruct", "phi3", "<s>", "<|endoftext|>"),
        ("qwen3-refused", "Qwen-Qwen3-0.6B", "refused", "", "<|im_end|>"),
        ("mistral-small-3.2-refused", "Mistral-Small-3.2-24B-Instruct-2506", "refused",
         "<s>", "</s>"),
        ("command-r7b-refused", "CohereForAI-c4ai-command-r7b-12-2024-tool_use", "refused",
         "<BOS_TOKEN>", "<|END_OF_TURN_TOKEN|>"),
    ]
    for name, base, fam, bos, eos in jinja:
        t = open(os.path.join(tdir, base + ".jinja")).read()
        write(name, "vendor/llama.cpp/models/templates/%s.jinja" % base, fam, t, bos, eos)

    lcf = [
        ("chatml-plain", "CHATML_CHAT_TEMPLATE", "chatml", "", "<|im_end|>"),
        ("llama3.0-instruct", "LLAMA3_INSTRUCT_CHAT_TEMPLATE", "llama3",
         "<|begin_of_text|>", "<|eot_id|>"),
        ("mistral-instruct", "MISTRAL_INSTRUCT_CHAT_TEMPLATE", "mistral", "<s>", "</s>"),
        ("mixtral-instruct", "MIXTRAL_INSTRUCT_CHAT_TEMPLATE", "mistral", "<s>", "</s>"),
    ]
    for name, const, fam, bos, eos in lcf:
        write(name, "llama_cpp/llama_chat_format.py " + const, fam, consts[const], bos, eos)
    # no template at all: kvsnap's choice (llama.cpp's fallback), ChatML
    # without a system turn, which is chatml-plain's rendering
    write("none", "no tokenizer.chat_template (rendered as CHATML_CHAT_TEMPLATE)", "chatml",
          None, "", "", render_with=consts["CHATML_CHAT_TEMPLATE"])


if __name__ == "__main__":
    main()
