"""A local S3-compatible server for tests: moto's S3 app, served on
127.0.0.1 by a single-threaded werkzeug server.

Why single-threaded: moto checks a conditional PUT's precondition and then
stores the object in two steps, with no lock between them; under its
threaded server two racing ``If-None-Match: *`` PUTs could both pass the
check, and "exactly one creator wins" would not be guaranteed. One request
at a time makes every request atomic, as real S3 is.

As a script::

    python3 tests/s3server.py --port 0 --bucket test

prints ``PORT <n>`` once the socket listens (requests made from then on
wait in the listen queue until serving starts), then serves until killed,
or until standard input closes when ``--exit-on-eof`` is given (so that a
test process that dies cannot leave the server behind).

From pytest::

    from s3server import S3Server
    with S3Server(buckets=["test"]) as srv:
        srv.endpoint       # http://127.0.0.1:<port>
        srv.create_bucket("other")
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import threading
import urllib.request

MISSING_MOTO = 'moto is not installed: pip install "moto[server]"'


def _app():
    try:
        from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app
    except ImportError as e:
        raise SystemExit(f"{MISSING_MOTO} ({e})") from None
    return DomainDispatcherApplication(create_backend_app)


def _create_buckets_in_process(app, host, port, buckets):
    # Through the WSGI app itself (no socket): the server is not serving yet.
    from werkzeug.test import Client
    client = Client(app)
    for name in buckets:
        r = client.put(f"/{name}", headers={"Host": f"{host}:{port}"})
        if r.status_code != 200:
            raise SystemExit(f"creating bucket {name!r} failed: {r.status} {r.get_data()[:200]!r}")


def _watch_stdin():
    # Returns when the parent closes our stdin (or dies), then ends the process.
    sys.stdin.buffer.read()
    os._exit(0)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default: loopback only)")
    parser.add_argument("--port", type=int, default=0, help="port (0 = any free port)")
    parser.add_argument("--bucket", action="append", default=[], help="bucket to create before serving (repeatable)")
    parser.add_argument("--exit-on-eof", action="store_true", help="exit when standard input closes")
    args = parser.parse_args(argv)

    from werkzeug.serving import make_server

    app = _app()
    server = make_server(args.host, args.port, app, threaded=False, processes=1)
    port = server.socket.getsockname()[1]
    _create_buckets_in_process(app, args.host, port, args.bucket)
    if args.exit_on_eof:
        threading.Thread(target=_watch_stdin, daemon=True).start()
    print(f"PORT {port}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


class S3Server:
    """Runs this script in a child process; ``endpoint`` is its URL.

    Raises RuntimeError (saying how to install moto) if the server cannot start.
    """

    def __init__(self, buckets=(), python=None):
        cmd = [python or sys.executable, os.path.abspath(__file__), "--port", "0", "--exit-on-eof"]
        for b in buckets:
            cmd += ["--bucket", b]
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        if not line.startswith("PORT "):
            self.proc.kill()
            err = self.proc.stderr.read()
            raise RuntimeError(f"the S3 test server did not start:\n{err}\n(if moto is missing: {MISSING_MOTO})")
        self.port = int(line.split()[1])
        self.endpoint = f"http://127.0.0.1:{self.port}"
        # Drain the request log so that the child never blocks on a full pipe.
        threading.Thread(target=self.proc.stderr.read, daemon=True).start()

    def create_bucket(self, name):
        req = urllib.request.Request(f"{self.endpoint}/{name}", method="PUT")
        with urllib.request.urlopen(req, timeout=30) as r:
            r.read()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


if __name__ == "__main__":
    main()
