#!/usr/bin/env python3
"""`h5lake serve` against a real HSDS (PyPI ``hsds``, ``--count 2``), side by
side on the same machine, the same data and the same clients.  Writes
RESULTS-server.md.

Both servers run on 127.0.0.1 with POSIX storage in a temporary directory and
a password file; every timed operation is done once per server per run
(servers alternate), the median of ``--runs`` is reported.  The stores go to
/dev/shm when it has room: on a disk, sustained writes of both servers run
into the device's bandwidth (~410 MB/s for ``dd`` on the machine this was
written on) and the bulk-write rows compare the disk with itself; ``--disk``
measures on disk anyway.

Cases, for each server:

  h5pyd write / read   a float32 array of ``--mb`` MiB, shape (rows, 1024),
                       1 MiB chunks, written with ``d[...] = a`` and read with
                       ``d[...]`` through h5pyd (which splits requests as it
                       sees fit).  Values are checked.
  HTTP write / read    the same through raw HTTP (``http.client``), binary
                       bodies, in 64 MiB slabs (HSDS refuses requests above
                       its ``max_request_size`` of 100 MB).
  HTTP one request     h5lake only: the whole array in one PUT and one GET
                       (HSDS answers 413).
  small selections     ``--small`` random 16x16 reads: through h5pyd, and
                       as raw HTTP GETs on one keep-alive session (req/s).
  8 clients            8 processes, each ``--small`` requests over raw
                       HTTP: random 16x16 reads, and every other request a
                       16x16 write into a chunk of its own (req/s).
  Raw HTTP for small requests is ``LightHttp``, a minimal keep-alive client:
  with http.client, 8 Python clients took 60% of this 2-core machine's CPU
  for h5lake, so the row measured them more than the server.
  1000 groups          through h5pyd: create 1,000 groups with an attribute
                       each (h5pyd batches them), then open the domain and
                       list its 1,001 links, then open it and read the
                       1,000 attributes.
  server RSS           peak resident memory of the server's processes,
                       sampled every 50 ms over all cases.

Targets (issue 4): throughput >= 5x HSDS, requests/s >= 10x HSDS, bounded RSS.

Usage:  python3 bench/server.py                     # 256 MiB, 3 runs
        python3 bench/server.py --mb 1024 --runs 1  # the 1 GiB case
        python3 bench/server.py --disk              # stores on disk
"""

import argparse
import base64
import datetime
import http.client
import multiprocessing as mp
import os
import platform
import shutil
import socket
import statistics
import sys
import tempfile
import threading
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))
import hsds_server  # noqa: E402
import servers as lake_servers  # noqa: E402  (tests/servers.py: `h5lake serve` as a subprocess)

import h5pyd  # noqa: E402

USERS = {"admin": "admin", "test_user1": "test"}
DOMAIN = "/home/bench/data.h5"
COLS = 1024
SLAB = 64 << 20


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def tree_pids(root_pid):
    """The process and all its descendants."""
    pids, frontier = {root_pid}, [root_pid]
    while frontier:
        p = frontier.pop()
        try:
            with open(f"/proc/{p}/task/{p}/children") as f:
                kids = [int(x) for x in f.read().split()]
        except OSError:
            kids = []
        for k in kids:
            if k not in pids:
                pids.add(k)
                frontier.append(k)
    return pids


def rss_bytes(pids):
    total = 0
    for p in pids:
        try:
            with open(f"/proc/{p}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1]) * 1024
        except OSError:
            pass
    return total


class RssSampler(threading.Thread):
    def __init__(self, root_pid):
        super().__init__(daemon=True)
        self.root_pid, self.peak, self.stop_flag = root_pid, 0, False

    def run(self):
        while not self.stop_flag:
            self.peak = max(self.peak, rss_bytes(tree_pids(self.root_pid)))
            time.sleep(0.05)


def auth_header(user="admin"):
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:{USERS[user]}".encode()).decode()}


def kw(endpoint):
    return dict(endpoint=endpoint, username="admin", password="admin")


def prepare(endpoint):
    for folder in ("/home/", "/home/bench/"):
        h5pyd.Folder(folder, mode="w", **kw(endpoint)).close()


def sel(rows):
    return f"[{rows[0]}:{rows[1]},0:{COLS}]"


def dataset_id(endpoint, name):
    with h5pyd.File(DOMAIN, "r", **kw(endpoint)) as f:
        return f[name].id.id


# --------------------------------------------------------------------------
# the operations (each returns seconds)

class Timed:
    """Wall time of a block, and how much of it this (client) process
    spent on the CPU: near 100% means the client, not the server, sets
    the pace."""

    def __enter__(self):
        self.t, self.c = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc):
        self.wall = time.perf_counter() - self.t
        self.cpu = time.process_time() - self.c

    def result(self):
        return self.wall, self.cpu


def h5pyd_write(endpoint, arr, name):
    with h5pyd.File(DOMAIN, "a", **kw(endpoint)) as f:
        d = f.create_dataset(name, shape=arr.shape, dtype=arr.dtype, chunks=(256, COLS))
        timed = Timed().__enter__()
        d[...] = arr
    # h5pyd may hold writes until the file is flushed or closed.
    timed.__exit__()
    return timed.result()


def h5pyd_read(endpoint, arr, name):
    with h5pyd.File(DOMAIN, "r", **kw(endpoint)) as f:
        d = f[name]
        with Timed() as timed:
            got = d[...]
    if not np.array_equal(got, arr):
        raise AssertionError(f"{endpoint}: h5pyd read back different values")
    return timed.result()


def _conn(endpoint):
    host, port = endpoint.split("//")[1].split(":")
    return http.client.HTTPConnection(host, int(port), timeout=600)


def http_write(endpoint, arr, name, slab=SLAB):
    """Binary PUTs of ``slab`` bytes over one keep-alive connection
    (http.client: requests' own overhead would hide the servers')."""
    with h5pyd.File(DOMAIN, "a", **kw(endpoint)) as f:
        f.create_dataset(name, shape=arr.shape, dtype=arr.dtype, chunks=(256, COLS))
    did = dataset_id(endpoint, name)
    rows_per = max(1, slab // (COLS * arr.itemsize))
    conn = _conn(endpoint)
    hdr = dict(auth_header(), **{"Content-Type": "application/octet-stream"})
    t = time.perf_counter()
    for r0 in range(0, arr.shape[0], rows_per):
        r1 = min(arr.shape[0], r0 + rows_per)
        conn.request("PUT", f"/datasets/{did}/value?domain={DOMAIN}&select={sel((r0, r1))}",
                     body=memoryview(arr[r0:r1]).cast("B"), headers=hdr)
        rsp = conn.getresponse()
        text = rsp.read()
        if rsp.status >= 300:
            raise RuntimeError(f"{endpoint}: PUT value {rsp.status} {text[:200]!r}")
    dt = time.perf_counter() - t
    conn.close()
    return dt


def http_read(endpoint, arr, name, slab=SLAB):
    did = dataset_id(endpoint, name)
    rows_per = max(1, slab // (COLS * arr.itemsize))
    conn = _conn(endpoint)
    hdr = dict(auth_header(), Accept="application/octet-stream")
    # Touched before the clock starts: on a VM, first-touch page faults of
    # a fresh 256 MiB+ buffer can take longer than the transfer itself, the
    # same for both servers, and they are the client's cost, not the server's.
    out = np.empty_like(arr)
    out.fill(0)
    t = time.perf_counter()
    for r0 in range(0, arr.shape[0], rows_per):
        r1 = min(arr.shape[0], r0 + rows_per)
        conn.request("GET", f"/datasets/{did}/value?domain={DOMAIN}&select={sel((r0, r1))}", headers=hdr)
        rsp = conn.getresponse()
        if rsp.status >= 300:
            raise RuntimeError(f"{endpoint}: GET value {rsp.status} {rsp.read()[:200]!r}")
        view = memoryview(out[r0:r1]).cast("B")
        got = rsp.readinto(view)
        if got != len(view) or rsp.read(1):
            raise RuntimeError(f"{endpoint}: GET value sent {got} bytes, {len(view)} expected")
    dt = time.perf_counter() - t
    conn.close()
    if not np.array_equal(out, arr):
        raise AssertionError(f"{endpoint}: HTTP read back different values")
    return dt


def small_picks(shape, n, seed):
    rng = np.random.default_rng(seed)
    return [(int(rng.integers(0, shape[0] - 16)), int(rng.integers(0, shape[1] - 16))) for _ in range(n)]


def h5pyd_small(endpoint, arr, name, n):
    picks = small_picks(arr.shape, n, 1)
    with h5pyd.File(DOMAIN, "r", **kw(endpoint)) as f:
        d = f[name]
        with Timed() as timed:
            for i, j in picks:
                got = d[i:i + 16, j:j + 16]
    i, j = picks[-1]
    if not np.array_equal(got, arr[i:i + 16, j:j + 16]):
        raise AssertionError(f"{endpoint}: small read differs")
    return timed.result()


class LightHttp:
    """A minimal HTTP/1.1 keep-alive client for the request-rate rows: one
    socket, requests sent as prepared bytes, answers framed by
    Content-Length or chunked encoding. http.client parses every header
    through the email package (~100 us of Python per request); with 8
    clients on a 2-core machine that, not the server, would set the pace.
    Both servers get the same client."""

    def __init__(self, endpoint):
        host, port = endpoint.split("//")[1].split(":")
        self.host = f"{host}:{port}"
        self.sock = socket.create_connection((host, int(port)))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""

    def request(self, method, target, headers, body=b""):
        head = [f"{method} {target} HTTP/1.1", f"Host: {self.host}"]
        head += [f"{k}: {v}" for k, v in headers.items()]
        if body or method in ("PUT", "POST"):
            head.append(f"Content-Length: {len(body)}")
        self.sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode() + body)
        return self._answer()

    def _fill(self):
        more = self.sock.recv(1 << 16)
        if not more:
            raise ConnectionError("the server closed the connection")
        self.buf += more

    def _take(self, n):
        while len(self.buf) < n:
            self._fill()
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def _line(self):
        while (i := self.buf.find(b"\r\n")) < 0:
            self._fill()
        out, self.buf = self.buf[:i], self.buf[i + 2:]
        return out

    def _answer(self):
        while (end := self.buf.find(b"\r\n\r\n")) < 0:
            self._fill()
        lines = self.buf[:end].decode("latin-1").split("\r\n")
        self.buf = self.buf[end + 4:]
        status = int(lines[0].split(" ", 2)[1])
        fields = {}
        for line in lines[1:]:
            k, _, v = line.partition(":")
            fields[k.strip().lower()] = v.strip()
        if "content-length" in fields:
            return status, self._take(int(fields["content-length"]))
        if fields.get("transfer-encoding", "").lower() == "chunked":
            parts = []
            while (n := int(self._line().split(b";")[0], 16)) > 0:
                parts.append(self._take(n))
                self._take(2)
            while self._line():       # trailers, then the blank line
                pass
            return status, b"".join(parts)
        if status in (204, 304) or 100 <= status < 200:
            return status, b""
        raise RuntimeError(f"answer without a length: {lines[0]}")

    def close(self):
        self.sock.close()


def http_small(endpoint, arr, name, n, seed=2, did=None, write_block=None):
    """``n`` 16x16 selections over one keep-alive connection of the light
    client (``LightHttp``); with ``write_block`` every other request writes
    it."""
    did = did or dataset_id(endpoint, name)
    conn = LightHttp(endpoint)
    hdr = dict(auth_header(), Accept="application/octet-stream")
    whdr = dict(auth_header(), **{"Content-Type": "application/octet-stream"})
    picks = small_picks(arr.shape, n, seed)
    base = f"/datasets/{did}/value?domain={DOMAIN}&select="
    wbody = write_block[1].tobytes() if write_block is not None else b""
    t = time.perf_counter()
    for k, (i, j) in enumerate(picks):
        if write_block is not None and k % 2:
            r = write_block[0]
            status, body = conn.request("PUT", base + f"[{r}:{r + 16},0:16]", whdr, wbody)
        else:
            status, body = conn.request("GET", base + f"[{i}:{i + 16},{j}:{j + 16}]", hdr)
        if status >= 300:
            raise RuntimeError(f"{endpoint}: {status} {body[:200]!r}")
    dt = time.perf_counter() - t
    conn.close()
    if write_block is None:
        got = np.frombuffer(body, dtype=arr.dtype).reshape(16, 16)
        i, j = picks[-1]
        if not np.array_equal(got, arr[i:i + 16, j:j + 16]):
            raise AssertionError(f"{endpoint}: small HTTP read differs")
    return dt


def meta_create(endpoint, name):
    dom = f"/home/bench/{name}.h5"
    t = time.perf_counter()
    with h5pyd.File(dom, "w", **kw(endpoint)) as f:
        for i in range(1000):
            f.create_group(f"g{i}").attrs["i"] = i
    return time.perf_counter() - t


def meta_list(endpoint, name):
    t = time.perf_counter()
    with h5pyd.File(f"/home/bench/{name}.h5", "r", **kw(endpoint)) as f:
        n = sum(1 for _ in f)
    dt = time.perf_counter() - t
    if n != 1000:
        raise AssertionError(f"{endpoint}: {n} links listed, 1000 made")
    return dt


def meta_attrs(endpoint, name):
    t = time.perf_counter()
    with h5pyd.File(f"/home/bench/{name}.h5", "r", **kw(endpoint)) as f:
        total = sum(int(f[f"g{i}"].attrs["i"]) for i in range(1000))
    dt = time.perf_counter() - t
    if total != sum(range(1000)):
        raise AssertionError(f"{endpoint}: attributes read back wrong")
    return dt


def _warm(_):
    time.sleep(0.2)


def _client(args):
    endpoint, shape, did, n, k = args
    arr = np.zeros(shape, np.float32)   # only its shape and dtype are used
    block = np.full((16, 16), k, np.float32)
    # Each client writes into a chunk of its own (rows 256k..): writers of
    # one chunk are serialised by its conditional puts, in HSDS by its data node.
    c = time.process_time()
    http_small(endpoint, arr, None, n, seed=100 + k, did=did, write_block=(256 * k, block))
    return time.process_time() - c


def clients8(endpoint, arr, name, n):
    """Wall time, and the CPU time of the 8 clients over the machine's
    cores: their busy share is then the part of the whole machine they
    took, which the server could not have."""
    did = dataset_id(endpoint, name)
    with mp.get_context("spawn").Pool(8) as pool:
        pool.map(_warm, range(8), chunksize=1)   # start-up and imports are not timed
        t = time.perf_counter()
        cpu = pool.map(_client, [(endpoint, arr.shape, did, n, k) for k in range(8)], chunksize=1)
        return time.perf_counter() - t, sum(cpu) / (os.cpu_count() or 1)


# --------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mb", type=int, default=256)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--small", type=int, default=1000)
    ap.add_argument("--tmp", default=None,
                    help="directory for both servers' stores (default: /dev/shm when it "
                         "has room, so that the servers rather than this machine's disk "
                         "are compared; see --disk)")
    ap.add_argument("--disk", action="store_true",
                    help="put the stores in the system temporary directory (on disk)")
    ap.add_argument("--out", default=os.path.join(HERE, "RESULTS-server.md"))
    args = ap.parse_args()

    rows = max(256, (args.mb << 20) // (COLS * 4))
    where = args.tmp or (None if args.disk else ram_disk(need=(rows * COLS * 4) * 12))
    tmp = tempfile.mkdtemp(prefix="h5lake-serverbench-", dir=where)
    storage = describe_storage(tmp)
    arr = np.random.default_rng(0).standard_normal((rows, COLS)).astype(np.float32)
    nbytes = arr.nbytes
    started = datetime.datetime.now(datetime.timezone.utc)
    hsds = hsds_server.HsdsServer(os.path.join(tmp, "hsds"), users=dict(USERS))
    h5l = None
    servers = {}
    try:
        hsds.start()
        h5l = lake_servers.Server(os.path.join(tmp, "h5lake", "hsdstest"), users=dict(USERS))
        servers = {"HSDS": (hsds.endpoint, hsds.proc.pid), "h5lake": (h5l.endpoint, h5l.proc.pid)}
        samplers = {}
        for name, (ep, pid) in servers.items():
            prepare(ep)
            with h5pyd.File(DOMAIN, "w", **kw(ep)):
                pass
            samplers[name] = RssSampler(pid)
            samplers[name].start()
        base_rss = {name: rss_bytes(tree_pids(pid)) for name, (ep, pid) in servers.items()}

        ops = [
            ("h5pyd write", lambda ep, r: h5pyd_write(ep, arr, f"pw{r}"), nbytes),
            ("h5pyd read", lambda ep, r: h5pyd_read(ep, arr, f"pw{r}"), nbytes),
            ("HTTP write (64 MiB requests)", lambda ep, r: http_write(ep, arr, f"hw{r}"), nbytes),
            ("HTTP read (64 MiB requests)", lambda ep, r: http_read(ep, arr, f"hw{r}"), nbytes),
            ("h5pyd 16x16 reads", lambda ep, r: h5pyd_small(ep, arr, f"hw{r}", args.small), args.small),
            ("HTTP 16x16 reads", lambda ep, r: http_small(ep, arr, f"hw{r}", args.small), args.small),
            ("8 clients, 16x16 reads+writes", lambda ep, r: clients8(ep, arr, f"hw{r}", args.small),
             8 * args.small),
            ("1000 groups + attributes, created", lambda ep, r: meta_create(ep, f"m{r}"), "s"),
            ("open + list 1000 links", lambda ep, r: meta_list(ep, f"m{r}"), "s"),
            ("open + read 1000 attributes", lambda ep, r: meta_attrs(ep, f"m{r}"), "s"),
        ]
        res, busy = {}, {}
        for r in range(args.runs):
            for op, fn, _ in ops:
                for name in (list(servers) if r % 2 == 0 else list(servers)[::-1]):
                    ep = servers[name][0]
                    cpu = None
                    try:
                        dt = fn(ep, r)
                        if isinstance(dt, tuple):
                            dt, cpu = dt
                    except Exception as e:  # noqa: BLE001 - report, keep going
                        log(f"{name} {op}: {e}")
                        dt = None
                    res.setdefault((op, name), []).append(dt)
                    if cpu is not None:
                        busy.setdefault((op, name), []).append(cpu / dt)
                    log(f"run {r} {op:32s} {name:7s} {dt if dt is None else round(dt, 3)}")
        one = {}
        for label, fn in (("HTTP write, one request", lambda: http_write(h5l.endpoint, arr, "one", slab=nbytes)),
                          ("HTTP read, one request", lambda: http_read(h5l.endpoint, arr, "one", slab=nbytes))):
            try:
                one[label] = fn()
            except Exception as e:  # noqa: BLE001
                log(f"{label}: {e}")
                one[label] = None
        try:
            hs = http_write(hsds.endpoint, arr[: min(rows, (200 << 20) // (COLS * 4))], "one", slab=200 << 20)
            hsds_one = f"accepted ({hs:.2f} s)"
        except Exception as e:  # noqa: BLE001
            hsds_one = f"failed: {type(e).__name__}: {str(e)[:80]}"
        peak = {}
        for name, s in samplers.items():
            s.stop_flag = True
            s.join()
            peak[name] = (base_rss[name], s.peak)
    finally:
        hsds.stop()
        if h5l is not None:
            h5l.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    finished = datetime.datetime.now(datetime.timezone.utc)
    write_report(args, ops, res, busy, one, hsds_one, peak, nbytes, started, finished, storage)


def ram_disk(need):
    """/dev/shm when it is a tmpfs with ``need`` bytes free, else None."""
    try:
        st = os.statvfs("/dev/shm")
    except OSError:
        return None
    return "/dev/shm" if st.f_bavail * st.f_frsize >= need else None


def describe_storage(path):
    """The file system under ``path``, as /proc/mounts names it."""
    best, fstype = "", "unknown"
    try:
        with open("/proc/mounts") as f:
            for line in f:
                _dev, mnt, fs = line.split()[:3]
                if (path == mnt or path.startswith(mnt.rstrip("/") + "/")) and len(mnt) >= len(best):
                    best, fstype = mnt, fs
    except OSError:
        pass
    kind = "RAM (tmpfs)" if fstype == "tmpfs" else f"disk ({fstype})"
    return f"{kind} at `{best or path}`"


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def write_report(args, ops, res, busy, one, hsds_one, peak, nbytes, started, finished, storage):
    L = ["# h5lake serve vs HSDS", ""]
    L.append(f"Run {started:%Y-%m-%d %H:%M} – {finished:%H:%M} UTC on {platform.node()}: "
             f"{os.cpu_count()} cores, Python {platform.python_version()}, "
             f"h5pyd {h5pyd.version.version}, HSDS 1.0.2 (`--count 2`, POSIX storage). "
             f"Both servers on 127.0.0.1, their stores side by side on {storage}; "
             f"median of {args.runs} run(s); "
             f"array {nbytes / 2**20:.0f} MiB float32, 1 MiB chunks. Command: "
             f"`python3 bench/server.py {' '.join(sys.argv[1:])}`.".rstrip())
    L.append("")
    L.append("*client busy*: the share of the h5pyd rows' wall time that the client "
             "process itself spent on the CPU (HSDS / h5lake); near 100% the client, "
             "not the server, sets the pace. For the 8 clients: the share of all the "
             "machine's cores that the client processes took, left neither server.")
    L.append("")
    L.append("| operation | HSDS | h5lake | h5lake ÷ HSDS (speed) | target | client busy |")
    L.append("|---|---:|---:|---:|---:|---:|")
    for op, _, amount in ops:
        th, tl = med(res.get((op, "HSDS"), [])), med(res.get((op, "h5lake"), []))
        if amount == "s":
            rate, target = (lambda t: f"{t:.2f} s"), ""
        elif amount == nbytes:
            rate, target = (lambda t: f"{nbytes / t / 1e6:.0f} MB/s"), "≥ 5×"
        else:
            rate, target = (lambda t, a=amount: f"{a / t:.0f} req/s"), "≥ 10×"
        ratio = f"{th / tl:.1f}×" if th and tl else "n/a"
        bh, bl = med(busy.get((op, "HSDS"), [])), med(busy.get((op, "h5lake"), []))
        client = f"{bh:.0%} / {bl:.0%}" if bh is not None and bl is not None else ""
        L.append(f"| {op} | {rate(th) if th else 'failed'} | {rate(tl) if tl else 'failed'} "
                 f"| {ratio} | {target} | {client} |")
    L.append("")
    # What the client alone costs bounds a row: were h5lake's server to take
    # no time at all, the run would still take the client's CPU time.
    for op, _, _ in ops:
        th, tl = med(res.get((op, "HSDS"), [])), med(res.get((op, "h5lake"), []))
        bl = med(busy.get((op, "h5lake"), []))
        if op.startswith("h5pyd") and th and tl and bl:
            L.append(f"- {op}: h5pyd itself spends {bl * tl:.2f} s of CPU per run with h5lake, "
                     f"so no server could make this row faster than {th / (bl * tl):.1f}× HSDS "
                     "on this machine")
    for label, t in one.items():
        L.append(f"- h5lake, {label} of {nbytes / 2**20:.0f} MiB: "
                 + (f"{t:.2f} s ({nbytes / t / 1e6:.0f} MB/s)" if t else "failed"))
    L.append(f"- HSDS, one 200 MiB PUT: {hsds_one}")
    failed = [(op, name, sum(t is None for t in ts), len(ts))
              for (op, name), ts in res.items() if any(t is None for t in ts)]
    for op, name, n, of in failed:
        L.append(f"- {name}, {op}: {n} of {of} runs failed (see the log); "
                 "the median is over the others")
    L.append("")
    L.append("Server memory (resident, all processes of the server):")
    L.append("")
    for name, (base, pk) in peak.items():
        L.append(f"- {name}: {base / 2**20:.0f} MiB idle, peak {pk / 2**20:.0f} MiB")
    L.append("")
    with open(args.out, "w") as f:
        f.write("\n".join(L))
    print("\n".join(L))


if __name__ == "__main__":
    main()
