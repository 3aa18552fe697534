# langchain_check.py: kvsnapd's HTTP endpoint driven by LangChain's
# ChatOpenAI (langchain-openai, pinned by scripts/openai-venv.sh), as an
# application would: a document named as the model, invoke, stream, stop
# sequences, a conversation with a system message.  tests/sh/openai.sh
# runs it; prints TAP lines ("ok - ..." / "not ok - ...").
#
#   python langchain_check.py SOCKET EXPECTED QUESTION
# EXPECTED: the file with `kvsnap query`'s answer from the document "facts"
# to QUESTION (computed in the same run, so no kernel's rounding matters).
import sys

try:
    import httpx2 as httpx  # what openai 3.x is built on
except ImportError:
    import httpx
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langchain_openai import ChatOpenAI

from tap_check import check


def main(sock, expected, q):
    hc = httpx.Client(transport=httpx.HTTPTransport(uds=sock), timeout=300.0)
    llm = ChatOpenAI(model="facts", base_url="http://localhost/v1", api_key="unused",
                     http_client=hc, max_tokens=24, max_retries=0)
    r = llm.invoke(q)
    check("LangChain ChatOpenAI(model=facts).invoke: kvsnap query's answer",
          r.content == expected, "%r vs %r" % (r.content, expected))
    check("  naming the inserted fact, finish_reason reported", "PELICAN" in r.content and
          r.response_metadata.get("finish_reason") in ("stop", "length"), r.response_metadata)
    parts = list(llm.stream(q))
    text = "".join(p.content for p in parts)
    fins = [p.response_metadata.get("finish_reason") for p in parts
            if p.response_metadata.get("finish_reason")]
    check("  stream: the same text in chunks", text == expected and len(parts) > 3,
          "%r (%d chunks)" % (text, len(parts)))
    cut = expected[:expected.find("PELICAN")]
    r = llm.invoke(q, stop=["PELICAN"])
    check("  invoke with stop=[PELICAN]: the answer up to it, finish_reason stop",
          "PELICAN" in expected and r.content == cut and
          r.response_metadata.get("finish_reason") == "stop", "%r (want %r) %s" %
          (r.content, cut, r.response_metadata))
    parts = list(llm.stream(q, stop=["PELICAN"]))
    text = "".join(p.content for p in parts)
    fins = [p.response_metadata.get("finish_reason") for p in parts
            if p.response_metadata.get("finish_reason")]
    check("  stream with stop: none of it streamed, finish_reason stop", text == cut and
          fins == ["stop"], "%r %s" % (text, fins))
    r = llm.invoke([SystemMessage("Answer in one word."), HumanMessage(q),
                    AIMessage("PELICAN."), HumanMessage("And on which day does the vault open?")])
    check("  a conversation (system, user, assistant, user) over the document: answered",
          r.response_metadata.get("finish_reason") in ("stop", "length") and
          r.usage_metadata["input_tokens"] > 0 and isinstance(r.content, str), r)
    plain = ChatOpenAI(model="SmolLM2-135M-Instruct", base_url="http://localhost/v1",
                       api_key="unused", http_client=hc, max_tokens=8, max_retries=0)
    r = plain.invoke([SystemMessage("Answer with one word."), HumanMessage("Is water wet?")])
    check("  the plain model by its own id", r.response_metadata.get("finish_reason") in
          ("stop", "length") and r.response_metadata.get("model_name") ==
          "SmolLM2-135M-Instruct", r.response_metadata)


if __name__ == "__main__":
    main(sys.argv[1], open(sys.argv[2]).read(), sys.argv[3])
