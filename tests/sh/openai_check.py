# openai_check.py: kvsnapd's HTTP endpoint driven by the official `openai`
# package (tests/sh/openai.sh runs it; not a test by itself).  Prints TAP
# lines ("ok - ..." / "not ok - ..."), one per check.
#
#   python openai_check.py unix SOCKET|tcp URL  CHECKS  [ARGS...]
# CHECKS: "main" (document Q&A vs kvsnap query, streaming, sampling, errors,
# documents), "models EXPECTED Q FILENAME" (documents as models, stop
# sequences, conversations, refused fields), "tcp" (models over TCP),
# "private DOC" (this user cannot see DOC, as a document or a model),
# "hangup stream|whole" (leave mid-answer).
import json, sys, time

try:
    import httpx2 as httpx  # what openai 3.x is built on
except ImportError:
    import httpx
import openai

from tap_check import check

M = "SmolLM2-135M-Instruct"  # the plain model's id (the GGUF file's name)


def client(kind, where, timeout=120.0):
    if kind == "unix":
        hc = httpx.Client(transport=httpx.HTTPTransport(uds=where), timeout=timeout)
        base = "http://localhost/v1"
    else:
        hc = httpx.Client(timeout=timeout)
        base = where + "/v1"
    return openai.OpenAI(base_url=base, api_key="x", http_client=hc, max_retries=0), hc, base


def raises(desc, cls, fn):
    try:
        fn()
    except cls as e:
        return check(desc + " (" + cls.__name__ + ", code " + str(getattr(e, "code", "")) + ")", True)
    except Exception as e:  # noqa: BLE001
        return check(desc, False, "raised %r" % e)
    return check(desc, False, "no exception")


def sse(resp):
    """The JSON objects of a server-sent event stream, and whether [DONE] ended it."""
    out, done = [], False
    for line in resp.iter_lines():
        if line.startswith("data: "):
            if line[6:] == "[DONE]":
                done = True
            else:
                out.append(json.loads(line[6:]))
    return out, done


def main(c, hc, base, doc_text, expected, q):
    ms = c.models.list().data
    check("models.list: one model, SmolLM2-135M-Instruct, owned by kvsnap",
          [m.id for m in ms] == ["SmolLM2-135M-Instruct"] and ms[0].owned_by == "kvsnap", ms)

    # ingest with progress as server-sent events (the document as a raw body)
    with hc.stream("POST", base + "/documents?name=gpl&stream=true", content=doc_text.encode(),
                   headers={"Content-Type": "text/plain"}) as r:
        evs, done = sse(r)
    prog = [e for e in evs if e.get("object") == "document.progress"]
    check("POST /v1/documents streams progress events", len(prog) >= 2 and
          prog[-1]["done"] == prog[-1]["total"], evs[:3])
    check("  then the document, then [DONE]", done and evs[-1].get("object") == "document" and
          len(evs[-1].get("id", "")) == 64 and evs[-1]["skipped"] is False, evs[-1:])
    r = hc.post(base + "/documents", json={"text": doc_text, "name": "gpl"})
    check("the same document again as JSON: skipped", r.status_code == 200 and
          r.json().get("skipped") is True, r.text)

    # a question over the snapshot: the same text as `kvsnap query` (any
    # kernel: `expected` was computed in this run from the same bytes)
    a = c.chat.completions.create(model="SmolLM2-135M-Instruct", max_tokens=24,
                                  messages=[{"role": "user", "content": q}],
                                  extra_body={"document": "gpl"})
    ch = a.choices[0]
    check("chat with extra_body document: the same answer as kvsnap query",
          ch.message.content == expected, "%r vs %r" % (ch.message.content, expected))
    check("  finish_reason length at max_tokens, usage filled", ch.finish_reason == "length" and
          a.usage.completion_tokens == 24 and a.usage.total_tokens ==
          a.usage.prompt_tokens + 24 and a.object == "chat.completion", a)
    st = c.chat.completions.create(model=M, max_tokens=24, stream=True,
                                   stream_options={"include_usage": True},
                                   messages=[{"role": "user", "content": q}],
                                   extra_body={"document": "gpl"})
    chunks = list(st)
    text = "".join(k.choices[0].delta.content or "" for k in chunks if k.choices)
    fins = [k.choices[0].finish_reason for k in chunks if k.choices and k.choices[0].finish_reason]
    check("streamed: the same text, chunk by chunk", text == expected and len(chunks) > 5,
          "%r" % text)
    check("  ends with finish_reason length and a usage chunk", fins == ["length"] and
          chunks[-1].usage is not None and chunks[-1].usage.completion_tokens == 24, chunks[-2:])
    cp = c.completions.create(model=M, prompt=q, max_tokens=24, extra_body={"document": "gpl"})
    check("completions with a document: the prompt is the question", cp.choices[0].text ==
          expected and cp.object == "text_completion", cp)

    # the plain model (no document): stop vs length
    a = c.chat.completions.create(model=M, max_tokens=200, messages=[
        {"role": "system", "content": "Answer with one word."},
        {"role": "user", "content": "Is water wet? Answer yes or no."}])
    check("chat without a document: the model ends its turn (finish_reason stop)",
          a.choices[0].finish_reason == "stop" and 0 < a.usage.completion_tokens < 200 and
          a.choices[0].message.content, a)
    a = c.chat.completions.create(model=M, max_tokens=3, messages=[
        {"role": "user", "content": "Tell me a long story about a dragon."}])
    check("  and length when cut at max_tokens", a.choices[0].finish_reason == "length" and
          a.usage.completion_tokens == 3, a)
    cp = c.completions.create(model=M, prompt="1, 2, 3, 4,", max_tokens=6)
    check("raw completion without a document", cp.choices[0].finish_reason == "length" and
          len(cp.choices[0].text) > 0 and cp.usage.completion_tokens == 6, cp)

    # sampling: a seed repeats its answer
    def sample(seed):
        return c.chat.completions.create(model=M, max_tokens=16, temperature=1.0, top_p=0.95,
                                         seed=seed, messages=[{"role": "user", "content": q}],
                                         extra_body={"document": "gpl"}).choices[0].message.content
    s7 = sample(7)
    check("sampling: the same seed gives the same answer", s7 == sample(7), s7)
    check("  and other seeds another", any(sample(s) != s7 for s in (8, 9, 10)), s7)

    # errors as the package's exception classes
    msgs = [{"role": "user", "content": q}]
    raises("unknown document: NotFoundError", openai.NotFoundError,
           lambda: c.chat.completions.create(model=M, messages=msgs, max_tokens=4,
                                             extra_body={"document": "no-such-doc"}))
    raises("n=2: BadRequestError", openai.BadRequestError,
           lambda: c.chat.completions.create(model=M, messages=msgs, n=2, max_tokens=4))
    raises("five stop sequences: BadRequestError", openai.BadRequestError,
           lambda: c.chat.completions.create(model=M, messages=msgs, stop=list("abcde"),
                                             max_tokens=4))
    raises("max_tokens 0: BadRequestError", openai.BadRequestError,
           lambda: c.chat.completions.create(model=M, messages=msgs, max_tokens=0))
    raises("a tool message: BadRequestError", openai.BadRequestError,
           lambda: c.chat.completions.create(model=M, max_tokens=4, messages=[
               {"role": "tool", "content": "x", "tool_call_id": "1"}]))
    raises("streamed, unknown document: NotFoundError before any chunk", openai.NotFoundError,
           lambda: list(c.chat.completions.create(model=M, messages=msgs, max_tokens=4,
                                                  stream=True, extra_body={"document": "zzzz"})))
    try:
        c.chat.completions.create(model=M, messages=msgs, max_tokens=4,
                                  extra_body={"document": "zzzz"})
    except openai.NotFoundError as e:
        check("  the error object: message, type, code", e.body.get("code") == "not_found" and
              e.body.get("type") == "not_found_error" and "zzzz" in e.body.get("message", ""),
              e.body)

    # documents: list, info, delete
    r = hc.get(base + "/documents").json()
    check("GET /v1/documents lists it", r["object"] == "list" and
          [d.get("name") for d in r["data"]] == ["gpl"], r)
    did = r["data"][0]["id"]
    r = hc.get(base + "/documents/" + did[:8])
    check("GET /v1/documents/{prefix}: info with its snapshots", r.status_code == 200 and
          r.json()["id"] == did and len(r.json()["snapshots"]) == 1, r.text)
    r = hc.delete(base + "/documents/gpl")
    check("DELETE /v1/documents/gpl", r.status_code == 200 and r.json() ==
          {"id": did, "object": "document.deleted", "deleted": True}, r.text)
    r = hc.get(base + "/documents/gpl")
    check("  then it is gone (404, not_found)", r.status_code == 404 and
          r.json()["error"]["code"] == "not_found", r.text)


def as_models(c, hc, base, expected, q, fname):
    """Documents as models (issue 30): listed, answered by model name, stop
    sequences and conversations over them, unsupported fields refused."""
    ms = c.models.list().data
    ids = [m.id for m in ms]
    docs = [m for m in ms if m.id not in (M, "library")]
    check("models.list: the plain model first, `library` second, then the documents by name "
          "and file name", ids[0] == M and ids[1] == "library" and
          sorted(ids[2:]) == sorted(["facts", fname]), ids)
    now = time.time()
    check("  each document with owned_by and created", all(
        isinstance(m.owned_by, str) and m.owned_by and now - 3600 < m.created <= now + 5
        for m in docs), docs)
    check("models.retrieve(facts)", c.models.retrieve("facts").id == "facts")
    check("models.retrieve(library): the library question's model",
          c.models.retrieve("library").id == "library")
    raises("models.retrieve of an unknown id: NotFoundError", openai.NotFoundError,
           lambda: c.models.retrieve("no-such-model"))
    msgs = [{"role": "user", "content": q}]
    a = c.chat.completions.create(model="facts", max_tokens=24, messages=msgs)
    got = a.choices[0].message.content
    check("chat with model=facts: kvsnap query's answer from that document", got == expected,
          "%r vs %r" % (got, expected))
    check("  naming the inserted fact, with model echoed", "PELICAN" in got and
          a.model == "facts", a)
    cp = c.completions.create(model="facts", prompt=q, max_tokens=24)
    check("completions with model=facts: the same", cp.choices[0].text == expected, cp)
    a = c.chat.completions.create(model=fname, max_tokens=8, messages=msgs)
    check("chat with model=<file name> of an unnamed document: answered",
          a.choices[0].finish_reason in ("stop", "length") and a.usage.prompt_tokens > 0, a)
    try:
        c.chat.completions.create(model="gpt-4o-mini", max_tokens=4, messages=msgs)
        check("an unknown model: NotFoundError, never the plain model", False, "answered")
    except openai.NotFoundError as e:
        check("an unknown model: NotFoundError (code model_not_found), never the plain model",
              e.body.get("code") == "model_not_found" and "gpt-4o-mini" in e.body["message"],
              e.body)
    a = c.chat.completions.create(model="kvsnap", max_tokens=24, messages=msgs,
                                  extra_body={"document": "facts"})
    check("document given: it wins over model (a placeholder there still answers)",
          a.choices[0].message.content == expected, a)

    # stop sequences: matched across tokens, not in the output, finish_reason stop
    cut = expected[:expected.find("PELICAN")]
    a = c.chat.completions.create(model="facts", max_tokens=24, messages=msgs,
                                  stop=["PELICAN", "zebra"])
    got = a.choices[0].message.content
    check("stop=PELICAN: the answer up to it, finish_reason stop", "PELICAN" in expected and
          got == cut and a.choices[0].finish_reason == "stop", "%r (want %r) %s" %
          (got, cut, a.choices[0].finish_reason))
    st = c.chat.completions.create(model="facts", max_tokens=24, messages=msgs, stop="PELICAN",
                                   stream=True)
    chunks = list(st)
    text = "".join(k.choices[0].delta.content or "" for k in chunks if k.choices)
    fins = [k.choices[0].finish_reason for k in chunks if k.choices and k.choices[0].finish_reason]
    check("  streamed: the chunks hold none of it (held back), finish_reason stop",
          text == cut and fins == ["stop"], "%r %s" % (text, fins))
    cp = c.completions.create(model="facts", prompt=q, max_tokens=24, stop="PELICAN")
    check("  completions too", cp.choices[0].text == cut and cp.choices[0].finish_reason == "stop",
          cp)

    # conversations: every message a turn; unsupported fields named
    a = c.chat.completions.create(model="facts", max_tokens=8, messages=[
        {"role": "system", "content": "Answer in one word."}, {"role": "user", "content": q}])
    check("a system message over a document: answered", a.choices[0].finish_reason in
          ("stop", "length") and a.usage.prompt_tokens > 0, a)
    for field, kw in (("tools", {"tools": [{"type": "function", "function": {"name": "f",
                                                                             "parameters": {}}}]}),
                      ("response_format", {"response_format": {"type": "json_object"}}),
                      ("logprobs", {"logprobs": True}),
                      ("frequency_penalty", {"frequency_penalty": 0.5})):
        try:
            c.chat.completions.create(model="facts", max_tokens=4, messages=msgs, **kw)
            check("%s: BadRequestError" % field, False, "answered")
        except openai.BadRequestError as e:
            check("%s: BadRequestError naming it" % field, field in e.body.get("message", ""),
                  e.body)


def private(c, hc, base, doc):
    ms = [m.id for m in c.models.list().data]
    check("another user's models.list does not show it", ms == [M], ms)
    raises("  nor answers it by model name (NotFoundError)", openai.NotFoundError,
           lambda: c.chat.completions.create(model=doc, max_tokens=4, messages=[
               {"role": "user", "content": "What is it?"}]))
    r = hc.get(base + "/documents")
    check("another user's list over TCP does not show it", r.status_code == 200 and
          doc not in [d.get("name") for d in r.json()["data"]], r.text)
    raises("another user asking over TCP: NotFoundError", openai.NotFoundError,
           lambda: c.chat.completions.create(model=M, max_tokens=4, messages=[
               {"role": "user", "content": "What is it?"}], extra_body={"document": doc}))
    r = hc.delete(base + "/documents/" + doc)
    check("  nor delete it (404)", r.status_code == 404, r.text)


def hangup(c, hc, base, how):
    msgs = [{"role": "user", "content": "Write a very long essay about the history of Rome."}]
    if how == "stream":
        st = c.chat.completions.create(model=M, max_tokens=4000, stream=True, messages=msgs)
        n = 0
        for k in st:
            n += 1
            if n == 3:
                break
        st.close()
        hc.close()
        check("left a stream after 3 chunks", n == 3)
    else:
        short, _, _ = client(sys.argv[1], sys.argv[2], timeout=2.0)
        raises("left a whole answer after 2 s (timeout)", openai.APITimeoutError,
               lambda: short.chat.completions.create(model=M, max_tokens=4000, messages=msgs))


if __name__ == "__main__":
    kind, where, what = sys.argv[1], sys.argv[2], sys.argv[3]
    c, hc, base = client(kind, where)
    if what == "main":
        doc_text = open(sys.argv[4]).read()
        expected = open(sys.argv[5]).read()
        main(c, hc, base, doc_text, expected, sys.argv[6])
    elif what == "models":
        as_models(c, hc, base, open(sys.argv[4]).read(), sys.argv[5], sys.argv[6])
    elif what == "tcp":
        ms = c.models.list().data
        check("models.list over loopback TCP", [m.id for m in ms] == ["SmolLM2-135M-Instruct"], ms)
        r = hc.post(base + "/documents", json={"text": sys.argv[4], "name": "private-doc"})
        check("ingest over TCP as this user", r.status_code == 200 and
              r.json()["object"] == "document", r.text)
    elif what == "private":
        private(c, hc, base, sys.argv[4])
    elif what == "hangup":
        hangup(c, hc, base, sys.argv[4])
