"""http_ops_check.py SOCKET WHAT: the operator's endpoints of kvsnapd's HTTP
front end (tests/sh/http_ops.sh), read by real clients: /metrics through
prometheus_client's own text-format parser, /health and the draining
state over one kept-alive connection.  Prints TAP lines ("ok - ...")."""
import http.client
import json
import socket
import sys

from prometheus_client.parser import text_string_to_metric_families


class UnixHTTP(http.client.HTTPConnection):
    def __init__(self, path, timeout=30):
        super().__init__("localhost", timeout=timeout)
        self.path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(self.path)


def ok(what, cond, detail=""):
    print(("ok - " if cond else "not ok - ") + what)
    if not cond and detail:
        print("# " + str(detail)[:400])


def get(c, path):
    c.request("GET", path)
    r = c.getresponse()
    return r.status, r.getheader("Content-Type"), r.read().decode()


def samples(text):
    """{(name, frozenset(labels)): value} and the families by name."""
    fams = {f.name: f for f in text_string_to_metric_families(text)}
    out = {}
    for f in fams.values():
        for s in f.samples:
            out[(s.name, frozenset(s.labels.items()))] = s.value
    return fams, out


def val(out, name, **labels):
    return out.get((name, frozenset(labels.items())))


def metrics(sock, exp):
    """exp: what the shell saw happen: {"docs": n, "query_tokens_min": ...}"""
    c = UnixHTTP(sock)
    st, ctype, text = get(c, "/metrics")
    ok("GET /metrics is 200", st == 200, st)
    ok("  as Prometheus text format 0.0.4", ctype.startswith("text/plain; version=0.0.4"), ctype)
    try:
        fams, out = samples(text)
    except Exception as e:  # the parser refused it
        ok("  prometheus_client's parser reads it", False, e)
        return
    ok("  prometheus_client's parser reads it", True)
    types = {n: f.type for n, f in fams.items()}
    ok("  requests by route and status: a counter",
       types.get("kvsnap_http_requests") == "counter", types.get("kvsnap_http_requests"))
    chat = val(out, "kvsnap_http_requests_total", route="/v1/chat/completions", status="200")
    ok("  the chat completions answered: %s (want %d)" % (chat, exp["chat_200"]),
       chat == exp["chat_200"])
    nf = val(out, "kvsnap_http_requests_total", route="/v1/documents/{ref}", status="404")
    ok("  the unknown document's 404 under its route template: %s" % nf, nf == 1)
    ok("  no route label holds a document reference",
       not any("nosuchdoc" in str(k) for k in out), [k for k in out if "nosuchdoc" in str(k)])
    ok("  latency: a histogram", types.get("kvsnap_http_request_duration_seconds") == "histogram")
    h = fams["kvsnap_http_request_duration_seconds"]
    by = {}
    for s in h.samples:
        if s.name.endswith("_bucket") and s.labels["route"] == "/v1/chat/completions":
            by[float(s.labels["le"])] = s.value
    les = sorted(by)
    cum = all(by[a] <= by[b] for a, b in zip(les, les[1:]))
    cnt = val(out, "kvsnap_http_request_duration_seconds_count", route="/v1/chat/completions")
    ok("  its buckets cumulative, +Inf = count = %s" % cnt,
       cum and les and les[-1] == float("inf") and by[les[-1]] == cnt == exp["chat_200"], by)
    ssum = val(out, "kvsnap_http_request_duration_seconds_sum", route="/v1/chat/completions")
    ok("  its sum: the answers' seconds (%s > 0)" % ssum, ssum is not None and ssum > 0)
    tok = val(out, "kvsnap_generated_tokens_total", op="query")
    secs = val(out, "kvsnap_generation_seconds_total", op="query")
    ok("  generated tokens %s >= the answers' %d" % (tok, exp["query_tokens_min"]),
       tok is not None and tok >= exp["query_tokens_min"])
    ok("  and their seconds, for tokens per second (%s)" % secs, secs is not None and secs > 0)
    ok("  ingested tokens counted (%s)" % val(out, "kvsnap_ingested_tokens_total"),
       (val(out, "kvsnap_ingested_tokens_total") or 0) > 0)
    q = val(out, "kvsnap_queue_depth")
    ok("  queue depth: a gauge, 0 when idle (%s)" % q,
       types.get("kvsnap_queue_depth") == "gauge" and q == 0)
    d = val(out, "kvsnap_store_documents")
    ok("  store documents %s (want %d)" % (d, exp["docs"]), d == exp["docs"])
    b = val(out, "kvsnap_store_bytes")
    ok("  store bytes %s > 0" % b, b is not None and b > 0)
    hl = val(out, "kvsnap_snapshot_hits_total", tier="local")
    ok("  snapshot hits, local tier: %s (want %d)" % (hl, exp["local_hits"]),
       hl == exp["local_hits"])
    ok("  snapshot hits, shared tier: 0 (none configured)",
       val(out, "kvsnap_snapshot_hits_total", tier="shared") == 0)
    e = val(out, "kvsnap_job_errors_total", op="query", code="not_found")
    ok("  query errors by code: not_found %s (want %d)" % (e, exp["query_not_found"]),
       e == exp["query_not_found"])
    e = val(out, "kvsnap_job_errors_total", op="ingest", code="unsupported_format")
    ok("  ingest errors by code: unsupported_format %s (want 1)" % e, e == 1)


def drain(sock, pidfile):
    """/health on one kept-alive connection: ready, then (after the stop
    signal the shell sends when told) draining."""
    c = UnixHTTP(sock)
    st, _, body = get(c, "/health")
    ok("GET /health is 200 {\"status\":\"ready\"}", st == 200 and json.loads(body) ==
       {"status": "ready"}, (st, body))
    print("READY-FOR-SIGNAL", flush=True)
    sys.stdin.readline()  # the shell has signalled the daemon
    st, _, body = get(c, "/health")
    b = json.loads(body)
    ok("  while draining: 503 {\"status\":\"draining\"} (%d %s)" % (st, body[:80]),
       st == 503 and b.get("status") == "draining")
    ok("  with llama.cpp's error shape (code 503, unavailable_error)",
       b.get("error", {}).get("code") == 503 and
       b.get("error", {}).get("type") == "unavailable_error", body)


if __name__ == "__main__":
    if sys.argv[2] == "metrics":
        metrics(sys.argv[1], json.loads(sys.argv[3]))
    else:
        drain(sys.argv[1], None)
