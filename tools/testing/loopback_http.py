"""A stand-in HTTP server on loopback for tests of code that calls a web API (GitLab's, say)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

# (path with query, request headers) -> (status, response headers, body)
Answer = Callable[[str, Mapping[str, str]], tuple[int, Mapping[str, str], bytes]]


@contextmanager
def serve(answer: Answer) -> Iterator[str]:
    """Serves GET requests on 127.0.0.1 at a free port with `answer`, in a thread, until the block
    ends; yields the base URL `http://127.0.0.1:PORT`."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            status, headers, body = answer(self.path, self.headers)
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()
