#!/usr/bin/env python3
"""A webhook receiver for the reaction tests: listens on 127.0.0.1 on a
free port (written to PORTFILE), answers 200 to every POST (503 to a path
ending in /busy) and appends each request to DIR as NNN.head (the
headers, 'Name: value' lines) and NNN.body (the body, byte for byte)."""
import http.server
import os
import sys

out_dir, port_file = sys.argv[1], sys.argv[2]


class Hook(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        n = len([f for f in os.listdir(out_dir) if f.endswith(".body")])
        with open(os.path.join(out_dir, "%03d.head" % n), "w") as f:
            f.write("Path: %s\n" % self.path)
            for k, v in self.headers.items():
                f.write("%s: %s\n" % (k, v))
        with open(os.path.join(out_dir, "%03d.body" % n), "wb") as f:
            f.write(body)
        code = 503 if self.path.endswith("/busy") else 200
        self.send_response(code)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


srv = http.server.HTTPServer(("127.0.0.1", 0), Hook)
with open(port_file + ".tmp", "w") as f:
    f.write(str(srv.server_address[1]))
os.rename(port_file + ".tmp", port_file)
srv.serve_forever()
