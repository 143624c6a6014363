"""A stand-in for the reverse proxy in front of a deployment, for tests: it forwards every
request to the app's server and appends the address it received the request from to
X-Forwarded-For, as nginx does with `proxy_set_header X-Forwarded-For
$proxy_add_x_forwarded_for;` (README, "A public deployment", where TRUSTED_PROXIES=1 tells the
app to trust one such proxy). A client can send an X-Forwarded-For header of its own: the
proxy keeps it in front of the address it appends, as nginx does.

A threaded http.server in the test process, on a free loopback port; each answer is read
whole, then sent on with its length (no streaming: the pages are small).
"""
from __future__ import annotations

import http.client
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

# Headers about one connection, not the request (RFC 9110 7.6.1): not passed on.
HOP_BY_HOP = {"connection", "keep-alive", "proxy-connection", "te", "trailer",
              "transfer-encoding", "upgrade"}


class ForwardingProxy:
    """`with ForwardingProxy(upstream_port) as proxy:` serves at `proxy.url` while open."""

    def __init__(self, upstream_port: int):
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def forward(self) -> None:
                proxy.forward(self)

            do_GET = do_POST = do_HEAD = forward

            def log_message(self, format, *args) -> None:   # noqa: A002 (http.server's name)
                pass

        self.upstream_port = upstream_port
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> ForwardingProxy:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()

    def forward(self, request: BaseHTTPRequestHandler) -> None:
        length = int(request.headers.get("Content-Length") or 0)
        body = request.rfile.read(length) if length else None
        headers = [(name, value) for name, value in request.headers.items()
                   if name.lower() not in HOP_BY_HOP and name.lower() != "x-forwarded-for"]
        sent = request.headers.get("X-Forwarded-For")
        peer = request.client_address[0]
        headers.append(("X-Forwarded-For", f"{sent}, {peer}" if sent else peer))

        upstream = http.client.HTTPConnection("127.0.0.1", self.upstream_port, timeout=120)
        try:
            upstream.putrequest(request.command, request.path, skip_host=True,
                                skip_accept_encoding=True)
            for name, value in headers:
                upstream.putheader(name, value)
            upstream.endheaders(body)
            answer = upstream.getresponse()
            content = answer.read()
        finally:
            upstream.close()

        request.send_response(answer.status, answer.reason)     # with its own Server, Date
        for name, value in answer.getheaders():
            if name.lower() not in HOP_BY_HOP | {"content-length", "server", "date"}:
                request.send_header(name, value)
        request.send_header("Content-Length", str(len(content)))
        request.end_headers()
        if request.command != "HEAD":
            request.wfile.write(content)
