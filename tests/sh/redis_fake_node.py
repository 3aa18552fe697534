#!/usr/bin/env python3
"""redis_fake_node.py MODE: a node that speaks RESP badly, for
tests/test_store_redis.c (t_fake_node).  Listens on a free 127.0.0.1 port,
prints it, and answers every command according to MODE until a client
sends QUIT or 30 s pass:

  slots_types    CLUSTER SLOTS with wrong element types
  slots_range    CLUSTER SLOTS with a slot range past 16383
  huge_bulk      a bulk string announcing 2 GB, then nothing
  huge_array     an array announcing 100 million elements
  truncated      half a reply, then the connection closed
  deep           arrays nested 20 deep
  moved_garbage  a valid map onto itself; then MOVED to a garbage address
  moved_loop     a valid map onto itself; then MOVED back to itself forever
  not_resp       bytes that are not RESP at all
  trickle        a valid map onto itself; then every reply one byte a
                 second (a 300-byte bulk string: five minutes)
  trickle_slots  CLUSTER SLOTS itself one byte a second
"""
import socket
import sys
import threading
import time

MODE = sys.argv[1]


def read_command(f):
    """One RESP array of bulk strings (what hiredis sends); None at EOF."""
    line = f.readline()
    if not line:
        return None
    if not line.startswith(b"*"):
        return [line.strip()]
    args = []
    for _ in range(int(line[1:])):
        n = int(f.readline()[1:])
        args.append(f.read(n + 2)[:-2])
    return args


def slots_of(port):
    node = b"*3\r\n$9\r\n127.0.0.1\r\n:%d\r\n$40\r\n%s\r\n" % (port, b"f" * 40)
    return b"*1\r\n*3\r\n:0\r\n:16383\r\n" + node


def answer(cmd, port):
    name = b" ".join(cmd[:2]).upper()
    if MODE == "slots_types":
        return b"*1\r\n*3\r\n$1\r\na\r\n:5\r\n*2\r\n:1\r\n$3\r\nxyz\r\n"
    if MODE == "slots_range":
        return b"*1\r\n*3\r\n:0\r\n:99999\r\n*2\r\n$9\r\n127.0.0.1\r\n:6379\r\n"
    if MODE == "huge_bulk":
        return b"$2147483647\r\nabc"
    if MODE == "huge_array":
        return b"*100000000\r\n"
    if MODE == "truncated":
        return None  # handled by the caller: half, then close
    if MODE == "deep":
        return b"*1\r\n" * 20 + b":1\r\n"
    if MODE == "trickle_slots" and name == b"CLUSTER SLOTS":
        return slots_of(port)
    if MODE == "not_resp":
        return b"HTTP/1.1 200 OK\r\n\r\n<html>"
    if name == b"CLUSTER SLOTS":
        return slots_of(port)
    if MODE == "moved_garbage":
        return b"-MOVED 99999 not an address\r\n"
    if MODE == "trickle":
        return b"$300\r\n" + b"x" * 300 + b"\r\n"
    if MODE == "moved_loop":
        return b"-MOVED 1 127.0.0.1:%d\r\n" % port
    return b"-ERR unknown mode\r\n"


def serve(conn, port, done):
    f = conn.makefile("rb")
    try:
        while True:
            cmd = read_command(f)
            if cmd is None:
                return
            if cmd and cmd[0].upper() == b"QUIT":
                conn.sendall(b"+OK\r\n")
                done.set()
                return
            if MODE == "truncated":
                conn.sendall(b"*3\r\n:0\r\n")
                return
            out = answer(cmd, port)
            if MODE == "trickle_slots" or (MODE == "trickle" and
                                           b" ".join(cmd[:2]).upper() != b"CLUSTER SLOTS"):
                for i in range(len(out)):  # one byte a second
                    conn.sendall(out[i:i + 1])
                    time.sleep(1)
            else:
                conn.sendall(out)
    except (OSError, ValueError):
        return
    finally:
        conn.close()


def main():
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", 0))
    s.listen(16)
    port = s.getsockname()[1]
    print(port, flush=True)
    done = threading.Event()
    s.settimeout(0.2)
    end = time.time() + 30
    while not done.is_set() and time.time() < end:
        try:
            conn, _ = s.accept()
        except socket.timeout:
            continue
        threading.Thread(target=serve, args=(conn, port, done), daemon=True).start()
    s.close()


main()
