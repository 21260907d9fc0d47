#!/usr/bin/env python3
"""A webhook receiver for the reaction tests: listens on 127.0.0.1 on a
free port (written to PORTFILE), answers 200 to every POST (503 to a path
ending in /busy) and appends each request to DIR as NNN.head (the
headers, 'Name: value' lines) and NNN.body (the body, byte for byte).  A
path ending in /holdN is recorded at once and answered after N seconds
(a delivery held in progress).  Requests are served each on a thread of
their own, so a held one does not hold up the others."""
import http.server
import os
import re
import sys
import threading
import time

out_dir, port_file = sys.argv[1], sys.argv[2]
lock = threading.Lock()
count = [0]


class Hook(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        with lock:
            n = count[0]
            count[0] += 1
            # the body last: a reader that sees NNN.body sees its head
            with open(os.path.join(out_dir, "%03d.head" % n), "w") as f:
                f.write("Path: %s\n" % self.path)
                for k, v in self.headers.items():
                    f.write("%s: %s\n" % (k, v))
            with open(os.path.join(out_dir, "%03d.body.tmp" % n), "wb") as f:
                f.write(body)
            os.rename(os.path.join(out_dir, "%03d.body.tmp" % n),
                      os.path.join(out_dir, "%03d.body" % n))
        m = re.search(r"/hold(\d+)$", self.path)
        if m:
            time.sleep(int(m.group(1)))
        code = 503 if self.path.endswith("/busy") else 200
        try:
            self.send_response(code)
            self.send_header("Content-Length", "0")
            self.end_headers()
        except OSError:
            pass  # the sender is gone (killed, or it cut the transfer)

    def log_message(self, *args):
        pass


class Server(http.server.ThreadingHTTPServer):
    # the default backlog of 5 drops the SYNs of a burst of new
    # connections, which the client sends again a second later
    request_queue_size = 128


srv = Server(("127.0.0.1", 0), Hook)
srv.daemon_threads = True
with open(port_file + ".tmp", "w") as f:
    f.write(str(srv.server_address[1]))
os.rename(port_file + ".tmp", port_file)
srv.serve_forever()
