#!/usr/bin/env python3
"""The server HTTP jobs call in tests/it/http_exec.sh and bench/http_exec.sh:
127.0.0.1, a free port written to PORTFILE, HTTP/1.1, any method.  Each
request is appended to DIR as NNN.req (the method and path, the headers
as 'Name: value' lines, a blank line, the body) unless DIR is '-'.
Paths:
  /ok[...]        200, body "hello from PATH"
  /fail-once/K    500 the first time for K, 200 after
  /status/N       status N
  /slow/S         answers after S seconds
  /drip/S         200 with a body sent in pieces over S seconds
  /big/N          200 with a body of N bytes: 'A' * (N - 4) + 'ZZZZ'
  /count          how many requests came (not recorded)
With --tls CERT KEY the server speaks TLS only.  Each request is served on
a thread of its own, so a slow one does not hold up the others."""
import http.server
import os
import re
import ssl
import sys
import threading
import time

out_dir, port_file = sys.argv[1], sys.argv[2]
tls = sys.argv[3:6] if len(sys.argv) >= 6 and sys.argv[3] == "--tls" else None
lock = threading.Lock()
count = [0]
seen = set()


class Target(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # the head and the body in one write, sent at once: unbuffered with
    # Nagle on, the body waited for the client's delayed ACK (40 ms)
    wbufsize = 65536
    disable_nagle_algorithm = True

    def record(self, body):
        with lock:
            n = count[0]
            count[0] += 1
            if out_dir == "-":
                return
            tmp = os.path.join(out_dir, "%03d.tmp" % n)
            with open(tmp, "wb") as f:
                f.write(("%s %s\n" % (self.command, self.path)).encode())
                for k, v in self.headers.items():
                    f.write(("%s: %s\n" % (k, v)).encode())
                f.write(b"\n" + body)
            os.rename(tmp, os.path.join(out_dir, "%03d.req" % n))

    def reply(self, code, body, ctype="text/plain"):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def handle_any(self):
        n = int(self.headers.get("Content-Length", "0") or 0)
        body = self.rfile.read(n) if n else b""
        p = self.path
        if p == "/count":
            with lock:
                c = count[0]
            return self.reply(200, str(c).encode())
        self.record(body)
        try:
            m = re.match(r"/fail-once/(\w+)", p)
            if m:
                with lock:
                    first = m.group(1) not in seen
                    seen.add(m.group(1))
                return self.reply(500 if first else 200, b"first 500, then 200")
            m = re.match(r"/status/(\d+)", p)
            if m:
                return self.reply(int(m.group(1)), b"status " + m.group(1).encode())
            m = re.match(r"/slow/([\d.]+)", p)
            if m:
                time.sleep(float(m.group(1)))
                return self.reply(200, b"slow answer")
            m = re.match(r"/drip/([\d.]+)", p)
            if m:
                pieces = 10
                self.send_response(200)
                self.send_header("Content-Length", str(pieces * 6))
                self.end_headers()
                for i in range(pieces):
                    self.wfile.write(b"drip%d\n" % i)
                    self.wfile.flush()
                    time.sleep(float(m.group(1)) / pieces)
                return None
            m = re.match(r"/big/(\d+)", p)
            if m:
                return self.reply(200, b"A" * (int(m.group(1)) - 4) + b"ZZZZ")
            return self.reply(200, b"hello from " + p.encode())
        except OSError:
            return None  # the client is gone (cancelled, timed out)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = handle_any

    def log_message(self, *args):
        pass


class Server(http.server.ThreadingHTTPServer):
    # the default backlog of 5 drops the SYNs of a burst of new
    # connections, which the client sends again a second later
    request_queue_size = 1024
    daemon_threads = True


srv = Server(("127.0.0.1", 0), Target)
if tls:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(tls[1], tls[2])
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
with open(port_file + ".tmp", "w") as f:
    f.write(str(srv.server_address[1]))
os.rename(port_file + ".tmp", port_file)
srv.serve_forever()
