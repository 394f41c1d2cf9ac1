"""h5pyd against `h5lake serve` and against HSDS 1.0.2, side by side.

Starts both servers on 127.0.0.1 over fresh temporary buckets (HSDS with
`--count 2` data nodes), runs the same h5pyd workload on each and writes
`bench/RESULTS-serve.md` (median of --runs runs, ratio HSDS time / h5lake
time: > 1 means h5lake serve is faster).

    python3 bench/serve_vs_hsds.py --size-mb 64 --runs 3
"""

import argparse
import os
import platform
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

import numpy as np

USER, PW = "bench", "bench"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_about(endpoint, proc, timeout=90):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(endpoint + "/about", timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"{endpoint} did not come up")


def start_h5lake(root, passwd):
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "h5lake", "serve", "--root", root, "--port", str(port),
                             "--password-file", passwd], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    endpoint = f"http://127.0.0.1:{port}"
    wait_about(endpoint, proc)
    return proc, endpoint


def start_hsds(root, passwd):
    port = free_port()
    hsds = shutil.which("hsds")
    if hsds is None:
        raise RuntimeError("hsds is not installed (pip install hsds)")
    proc = subprocess.Popen([hsds, "--root_dir", root, "--bucket_name", "hsdstest", "--password_file", passwd,
                             "--host", "127.0.0.1", "--port", str(port), "--count", "2",
                             "--logfile", os.path.join(root, "..", "hsds.log"), "--loglevel", "ERROR"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    endpoint = f"http://127.0.0.1:{port}"
    wait_about(endpoint, proc, timeout=120)
    return proc, endpoint


def stop(proc, group=False):
    if proc.poll() is None:
        if group:
            os.killpg(proc.pid, signal.SIGINT)
        else:
            proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            if group:
                os.killpg(proc.pid, signal.SIGKILL)
            else:
                proc.kill()
            proc.wait()


def make_home(endpoint):
    import h5pyd
    kw = dict(endpoint=endpoint, username="admin", password="admin")
    for path, extra in (("/home/", {}), (f"/home/{USER}/", {"owner": USER})):
        try:
            h5pyd.Folder(path, mode="w", **kw, **extra).close()
        except OSError as e:
            if e.errno != 409:       # HSDS may have made it already
                raise


def workload(endpoint, tag, size_mb, run):
    """Times of each step, in seconds."""
    import h5pyd
    kw = dict(endpoint=endpoint, username=USER, password=PW)
    side = int((size_mb * 2**20 / 4) ** 0.5)
    data = np.random.default_rng(run).random((side, side), dtype="f4")
    t = {}
    dom = f"/home/{USER}/{tag}-{run}.h5"
    t0 = time.perf_counter()
    with h5pyd.File(dom, "w", **kw) as f:
        f.create_dataset("a", data=data, chunks=(512, 512))
    t["write 2-D f4 (MB/s)"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    with h5pyd.File(dom, "r", **kw) as f:
        back = f["a"][...]
    t["read 2-D f4 (MB/s)"] = time.perf_counter() - t0
    assert np.array_equal(back, data)
    t0 = time.perf_counter()
    with h5pyd.File(dom, "r", **kw) as f:
        d = f["a"]
        for i in range(200):
            d[i, 0:100]
    t["200 small reads (s)"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    with h5pyd.File(dom, "a", **kw) as f:
        for i in range(1000):
            g = f.create_group(f"g{i}")
            g.attrs["i"] = i
    t["1000 groups + attrs (s)"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    with h5pyd.File(dom, "r", **kw) as f:
        n = sum(1 for _ in f)
    assert n == 1001
    t["open + list 1001 links (s)"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    with h5pyd.File(dom, "r", **kw) as f:
        total = sum(int(f[f"g{i}"].attrs["i"]) for i in range(1000))
    assert total == sum(range(1000))
    t["open + read 1000 attributes (s)"] = time.perf_counter() - t0
    return t


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size-mb", type=int, default=64)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "RESULTS-serve.md"))
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="serve-bench-")
    passwd = os.path.join(tmp, "passwd.txt")
    with open(passwd, "w") as f:
        f.write(f"admin:admin\n{USER}:{PW}\n")
    results = {}
    servers = []
    try:
        lake_root = os.path.join(tmp, "lake")
        hsds_root = os.path.join(tmp, "hsds")
        # HSDS 1.0.2 answers requests without a bucket from its configured
        # default bucket, "hsdstest", whatever --bucket_name says
        os.makedirs(os.path.join(hsds_root, "hsdstest"))
        lake, lake_ep = start_h5lake(lake_root, passwd)
        servers.append((lake, False))
        hs, hs_ep = start_hsds(hsds_root, passwd)
        servers.append((hs, True))
        for ep in (lake_ep, hs_ep):
            make_home(ep)
        for run in range(args.runs):
            # alternate who goes first
            order = [("h5lake", lake_ep), ("hsds", hs_ep)]
            if run % 2:
                order.reverse()
            for tag, ep in order:
                for k, v in workload(ep, tag, args.size_mb, run).items():
                    results.setdefault(k, {}).setdefault(tag, []).append(v)
    finally:
        for proc, group in servers:
            stop(proc, group)
        shutil.rmtree(tmp, ignore_errors=True)
    import h5pyd
    lines = ["# h5pyd: `h5lake serve` vs HSDS 1.0.2", "",
             f"{args.size_mb} MiB float32 2-D array (512×512 chunks, no filters), median of {args.runs} runs; "
             "both servers on 127.0.0.1, HSDS with 2 data nodes, POSIX storage. h5pyd opens "
             "read-only domains with `getobjs=1`: h5lake serve answers with every object (up to "
             "10,000), HSDS only once its background scan has summarised the domain. "
             f"Python {platform.python_version()}, h5pyd {h5pyd.version.version}, {os.cpu_count()} CPUs.", "",
             "| step | h5lake serve | HSDS | HSDS / h5lake |", "|---|---|---|---|"]
    mb = args.size_mb * 2**20 / 1e6
    for step, by in results.items():
        lt, ht = statistics.median(by["h5lake"]), statistics.median(by["hsds"])
        if "MB/s" in step:
            lines.append(f"| {step} | {mb / lt:.0f} | {mb / ht:.0f} | {ht / lt:.2f} |")
        else:
            lines.append(f"| {step} | {lt:.2f} | {ht:.2f} | {ht / lt:.2f} |")
    text = "\n".join(lines) + "\n"
    with open(args.out, "w") as f:
        f.write(text)
    print(text)


if __name__ == "__main__":
    main()
