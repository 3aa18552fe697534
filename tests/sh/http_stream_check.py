"""A streamed ingest (POST /v1/documents?stream=true) read raw off kvsnapd's
HTTP Unix socket: the chunked framing parsed by hand, so that a body cut
short (no final 0-length chunk) is told apart from one that ended.

http_stream_check.py SOCKET DOC NAME [PID STOP_S]: prints one line,
"complete ..." (the final chunk came, the last event is the document, then
[DONE]) or "incomplete: why"; exit status 0 or 1.  With PID, once the first
event has come the daemon is held (SIGSTOP) for STOP_S seconds: a machine so
busy that kvsnapd is not scheduled for that long, made certain.  Then the
connection, kept alive, is left idle: "idle-closed" (the daemon closed it
within 30 s) or "idle-open".  Every read is bounded (120 s)."""
import json, os, signal, socket, sys, time

sock_path, doc_path, name = sys.argv[1:4]
pid, stop_s = (int(sys.argv[4]), float(sys.argv[5])) if len(sys.argv) > 5 else (0, 0)
body = open(doc_path, "rb").read()
s = socket.socket(socket.AF_UNIX)
s.settimeout(120)
s.connect(sock_path)
s.sendall(b"POST /v1/documents?name=%s&stream=true HTTP/1.1\r\nHost: localhost\r\n"
          b"Content-Type: text/plain\r\nContent-Length: %d\r\n\r\n" % (name.encode(), len(body))
          + body)
buf, t0, gaps, last = b"", time.monotonic(), [], time.monotonic()
while True:
    try:
        got = s.recv(65536)
    except socket.timeout:
        got = b""
    if not got:
        break
    now = time.monotonic()
    gaps.append(now - last)
    last = now
    buf += got
    if pid and b"data: " in buf:
        os.kill(pid, signal.SIGSTOP)
        time.sleep(stop_s)
        os.kill(pid, signal.SIGCONT)
        pid = 0
    if buf.endswith(b"\r\n0\r\n\r\n"):
        break  # the final chunk: the reply is whole (the connection stays open)
idle = ""
if buf.endswith(b"\r\n0\r\n\r\n"):
    s.settimeout(30)
    try:
        idle = "; idle-closed" if s.recv(1) == b"" else "; idle-got-bytes"
    except socket.timeout:
        idle = "; idle-open"
    except OSError:
        idle = "; idle-closed"
s.close()

def bad(why):
    print("incomplete: %s (%d bytes in %.1f s, longest silence %.1f s)" % (
        why, len(buf), time.monotonic() - t0, max(gaps or [0])))
    sys.exit(1)

head, sep, rest = buf.partition(b"\r\n\r\n")
if not sep or not head.startswith(b"HTTP/1.1 200"):
    bad("no 200 status line and headers: %r" % head[:80])
if b"transfer-encoding: chunked" not in head.lower():
    bad("not chunked")
data, ended = b"", False
while rest:
    line, sep, rest = rest.partition(b"\r\n")
    if not sep:
        break
    n = int(line, 16)
    if n == 0:
        ended = rest == b"\r\n"
        break
    if len(rest) < n + 2:
        break
    data, rest = data + rest[:n], rest[n + 2:]
if not ended:
    bad("no final chunk")
evs = [l[6:] for l in data.decode().split("\n") if l.startswith("data: ")]
if not evs or evs[-1] != "[DONE]":
    bad("no [DONE] last")
objs = [json.loads(e) for e in evs[:-1]]
if not objs or objs[-1].get("object") != "document" or len(objs[-1].get("id", "")) != 64:
    bad("the last event is not the document: %r" % objs[-1:])
print("complete: %d progress events, then the document; longest silence %.1f s%s" % (
    sum(o.get("object") == "document.progress" for o in objs), max(gaps), idle))
