#!/usr/bin/env python3
"""The webhook receiver of bench/react.sh: 127.0.0.1, a free port written
to PORTFILE, HTTP/1.1 (connections kept alive), 200 to every POST.  It
keeps the bodies in memory; GET /count answers how many came, GET /dump
writes them to DIR (one file each), GET /reset forgets them."""
import http.server
import os
import sys
import threading

port_file, dump_dir = sys.argv[1], sys.argv[2]
lock = threading.Lock()
bodies = []


class Sink(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        with lock:
            bodies.append(body)
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self):
        with lock:
            if self.path == "/dump":
                os.makedirs(dump_dir, exist_ok=True)
                for i, b in enumerate(bodies):
                    with open(os.path.join(dump_dir, "%05d.json" % i), "wb") as f:
                        f.write(b)
            elif self.path == "/reset":
                bodies.clear()
            text = str(len(bodies)).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(text)))
        self.end_headers()
        self.wfile.write(text)

    def log_message(self, *args):
        pass


class Server(http.server.ThreadingHTTPServer):
    # the default backlog of 5 drops the SYNs of a burst of new
    # connections, which the client sends again a second later
    request_queue_size = 128


srv = Server(("127.0.0.1", 0), Sink)
srv.daemon_threads = True
with open(port_file + ".tmp", "w") as f:
    f.write(str(srv.server_address[1]))
os.rename(port_file + ".tmp", port_file)
srv.serve_forever()
