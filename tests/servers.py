"""Start and stop ``h5lake serve`` for tests: a subprocess on a free
127.0.0.1 port, with a temporary store directory and password file."""

import base64
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

USERS = {"admin": "admin", "test_user1": "test", "test_user2": "test"}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """``h5lake serve`` as a subprocess; ``endpoint`` is its URL."""

    def __init__(self, root, allow_noauth=False, users=USERS, args=()):
        self.root = str(root)
        if "://" in self.root:      # a bucket: the password file goes in a temp dir
            self._tmp = tempfile.mkdtemp(prefix="h5lake-serve-")
            self.passwd = os.path.join(self._tmp, "passwd.txt")
        else:
            os.makedirs(self.root, exist_ok=True)
            self.passwd = os.path.join(self.root, "..", os.path.basename(self.root) + "-passwd.txt")
        with open(self.passwd, "w") as f:
            f.write("# user:password\n")
            f.writelines(f"{u}:{p}\n" for u, p in users.items())
        self.port = free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        cmd = [sys.executable, "-m", "h5lake", "serve", "--root", self.root,
               "--port", str(self.port), "--password-file", self.passwd]
        if allow_noauth:
            cmd.append("--allow-noauth")
        cmd.extend(args)
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self._wait_ready()
        # the first line says where it listens
        self.banner = self.proc.stdout.readline()
        assert self.endpoint in self.banner, self.banner

    def _wait_ready(self, timeout=30):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"h5lake serve exited: {self.proc.stderr.read()}")
            try:
                with urllib.request.urlopen(self.endpoint + "/about", timeout=1) as r:
                    if r.status == 200:
                        return
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise RuntimeError("h5lake serve did not answer /about in time")

    def request(self, method, path, body=None, params=None, user="admin", headers=None,
                raw=False):
        """One HTTP request; returns ``(status, headers, body)`` (body parsed
        as JSON unless ``raw``)."""
        from urllib.parse import urlencode
        url = self.endpoint + path
        if params:
            url += "?" + urlencode(params)
        hdrs = dict(headers or {})
        if user is not None:
            token = base64.b64encode(f"{user}:{USERS.get(user, 'x')}".encode()).decode()
            hdrs["Authorization"] = "Basic " + token
        data = body
        if body is not None and not isinstance(body, (bytes, bytearray)):
            data = json.dumps(body).encode()
            hdrs.setdefault("Content-Type", "application/json")
        req = urllib.request.Request(url, data=data, method=method, headers=hdrs)
        try:
            with urllib.request.urlopen(req, timeout=120) as r:
                status, rhdrs, payload = r.status, r.headers, r.read()
        except urllib.error.HTTPError as e:
            status, rhdrs, payload = e.code, e.headers, e.read()
        if not raw and payload and (rhdrs.get("Content-Type") or "").startswith("application/json"):
            payload = json.loads(payload)
        return status, rhdrs, payload

    def rss_kb(self, field="VmRSS"):
        """Resident size now, or at its peak with ``field="VmHWM"``."""
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
        return 0

    def alive(self):
        """Whether the process still runs and answers."""
        if self.proc.poll() is not None:
            return False
        try:
            with urllib.request.urlopen(self.endpoint + "/about", timeout=10) as r:
                return r.status == 200
        except OSError:
            return False

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream:
                stream.close()


def with_homes(root, *owners, **kw):
    """A started ``Server`` over ``root`` with HSDS's ``/home/`` folder and
    a ``/home/<owner>/`` folder for each owner (made by admin)."""
    s = Server(root, **kw)
    assert s.request("PUT", "/", {"folder": 1}, params={"domain": "/home/"})[0] == 201
    for owner in owners:
        status = s.request("PUT", "/", {"folder": 1, "owner": owner},
                           params={"domain": f"/home/{owner}/"})[0]
        assert status == 201
    return s


@contextlib.contextmanager
def running(root, count=1, **kw):
    """``count`` servers on one store directory; yields their endpoints."""
    started = []
    try:
        for _ in range(count):
            started.append(Server(root, **kw))
        yield [s.endpoint for s in started]
    finally:
        for s in started:
            s.stop()
