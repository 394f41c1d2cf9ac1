"""Start and stop a real HSDS (PyPI ``hsds``) for interop tests and benchmarks.

HSDS runs with POSIX storage: ``<root_dir>/<bucket>/`` is the bucket
directory, which is exactly an h5lake store (HSDS's object-store schema v2),
so h5lake can open what HSDS wrote and the other way round.

HSDS binds every interface by default; a ``sitecustomize`` on the child
processes' ``PYTHONPATH`` makes aiohttp listen on 127.0.0.1 only.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
import base64
import json

_LOOPBACK_ONLY = '''
import aiohttp.web as _web
_run_app = _web.run_app
def _loopback_run_app(app, *args, **kwargs):
    if kwargs.get("sock") is None and kwargs.get("path") is None:
        kwargs.setdefault("host", "127.0.0.1")
    return _run_app(app, *args, **kwargs)
_web.run_app = _loopback_run_app
'''


def _listening(port):
    """Whether something accepts connections on 127.0.0.1:``port``."""
    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex(("127.0.0.1", port)) == 0


def _port_free(port):
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


DN_PORT = 6101   # HSDS 1.0.2 --standalone puts its data nodes on 6101, 6102, ...


def _pick_ports(count):
    """A free service-node port P with P+1000 … P+1000+count-1 also free;
    the data nodes' fixed ports must be free too."""
    taken = [p for p in range(DN_PORT, DN_PORT + count) if _listening(p)]
    if taken:
        raise RuntimeError(
            f"port(s) {taken} are taken: HSDS puts its data nodes there, so it would talk "
            "to whatever listens (a stale HSDS data node? see `pgrep -af hsds-node`)")
    for _ in range(200):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port + 1000 + count > 65535:
            continue
        if all(_port_free(port + 1000 + i) for i in range(count)):
            return port
    raise RuntimeError("no free ports for HSDS")


def _hsds_command():
    """HSDS's launcher next to this interpreter (a venv's bin/ need not be on
    PATH), else whatever PATH finds."""
    here = os.path.join(os.path.dirname(sys.executable), "hsds")
    return here if os.access(here, os.X_OK) else shutil.which("hsds")


def available():
    return _hsds_command() is not None


def _reap_group(pgid, grace=10):
    """Waits for the rest of HSDS's process group (its service and data
    nodes outlive the launcher while they write back), then kills what is
    left: a data node left running keeps its fixed port (6101, ...) and the
    next HSDS on this machine talks to it instead of its own."""
    deadline = time.time() + grace
    while time.time() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass


class HsdsServer:
    """A running HSDS: ``endpoint``, ``bucket_dir`` (the store directory),
    ``users`` ({name: password}; ``admin`` is the admin)."""

    def __init__(self, root_dir, bucket="hsdstest", users=None, count=2):
        self.root_dir = os.path.abspath(root_dir)
        self.bucket = bucket
        self.bucket_dir = os.path.join(self.root_dir, bucket)
        self.users = users or {"admin": "admin", "test_user1": "test", "test_user2": "test"}
        self.count = count
        self.proc = None
        self.endpoint = None
        self._tmp = None

    def start(self, timeout=60):
        if not available():
            raise RuntimeError("HSDS is not installed: pip install hsds==1.0.2 h5pyd")
        os.makedirs(self.bucket_dir, exist_ok=True)
        self._tmp = tempfile.mkdtemp(prefix="hsds-run-")
        with open(os.path.join(self._tmp, "sitecustomize.py"), "w") as f:
            f.write(_LOOPBACK_ONLY)
        passwd = os.path.join(self._tmp, "passwd.txt")
        with open(passwd, "w") as f:
            f.writelines(f"{u}:{p}\n" for u, p in self.users.items())
        port = _pick_ports(self.count)
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [self._tmp, env.get("PYTHONPATH")]))
        self.log = open(os.path.join(self._tmp, "hsds.log"), "w")
        self.proc = subprocess.Popen(
            [_hsds_command(), "--root_dir", self.root_dir, "--bucket_name", self.bucket,
             "--password_file", passwd, "--host", "127.0.0.1", "--port", str(port),
             "--count", str(self.count), "--loglevel", "ERROR",
             "--logfile", os.path.join(self._tmp, "hsds-nodes.log")],
            stdout=self.log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        self.endpoint = f"http://127.0.0.1:{port}"
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"HSDS exited at start-up; see {self.log.name}")
            try:
                if self.get("/about").get("state") == "READY":
                    return self
            except OSError:
                pass
            time.sleep(0.3)
        self.stop()
        raise RuntimeError(f"HSDS did not become ready in {timeout} s")

    def request(self, method, path, user="admin", body=None, params=""):
        req = urllib.request.Request(self.endpoint + path + params, method=method,
                                     data=None if body is None else json.dumps(body).encode())
        token = base64.b64encode(f"{user}:{self.users[user]}".encode()).decode()
        req.add_header("Authorization", f"Basic {token}")
        with urllib.request.urlopen(req, timeout=10) as r:
            return json.loads(r.read() or b"{}")

    def get(self, path, **kw):
        return self.request("GET", path, **kw)

    def make_folder(self, folder, owner="admin"):
        """Create a folder (``/home/``) as admin, owned by ``owner``."""
        import h5pyd
        kw = {} if owner == "admin" else {"owner": owner}
        h5pyd.Folder(folder, mode="w", **self.h5pyd_kwargs("admin"), **kw).close()

    def flush(self, domain):
        """Make HSDS write everything it caches for ``domain`` to the bucket
        (it writes back lazily)."""
        self.request("PUT", "/", body={"flush": True}, params=f"?domain={domain}")

    def h5pyd_kwargs(self, user="test_user1"):
        return dict(endpoint=self.endpoint, username=user, password=self.users[user])

    def stop(self):
        """SIGINT makes HSDS write back what it still caches, then exit."""
        if self.proc is not None and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGINT)
                self.proc.wait(timeout=20)
            except (subprocess.TimeoutExpired, ProcessLookupError):
                try:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                self.proc.wait()
            _reap_group(self.proc.pid)
        self.proc = None
        if self._tmp:
            self.log.close()
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


if __name__ == "__main__":   # manual use: python tests/hsds_server.py ROOT_DIR
    srv = HsdsServer(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp()).start()
    print(srv.endpoint, srv.bucket_dir, flush=True)
    try:
        signal.pause()
    finally:
        srv.stop()
