"""Runs h5py's own test suite (shipped inside the h5py wheel) twice — on
native HDF5, and with the h5lake VOL connector active — and writes a report
of the pass counts and of every test that passes natively but fails through
the connector, with the first line of its error.

    python3 tests/vol_h5py_suite.py [--plugin-dir DIR] [--out tests/H5PY-SUITE.md] [-k EXPR]
                                    [--connector "h5lake layout=columnar" --out REPORT.md]

Without --plugin-dir the connector is built (cargo build -p h5lake-vol).
--connector sets HDF5_VOL_CONNECTOR for the run through the connector (the
connector's name and its settings; default "h5lake"). The report of another
setting than the default goes where --out says (never over the committed
tests/H5PY-SUITE.md, which is the default setting's).
"""

import argparse
import collections
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# Tests that probe HDF5's native file format itself, which a store of
# objects does not have (the issue allows excluding them, by name, with the
# reason): matched against "module.Class::test" ids.
NATIVE_FORMAT = [
    ("test_file_image", "file images are native-format byte images"),
    ("test_h5d_direct_chunk", "direct chunk I/O reads and writes the native layout's chunk records"),
    ("test_file.TestDrivers", "file drivers (VFDs) sit under the native connector"),
    ("test_h5f.TestFileID::test_descriptor", "the file descriptor of a file driver (VFD); a store is a directory of objects"),
    ("test_file.TestFileLocking", "native file locking"),
    ("test_file.TestUserblock", "the user block is a region of a native file"),
    ("test_file.TestNewLibver", "library version bounds select native format versions"),
    ("test_file.TestPageBuffering", "page buffering and file space pages are native-format settings"),
    ("test_file.TestSpaceStrategy", "file space strategies are native-format settings"),
    ("test_file2.TestCache", "the metadata cache configuration of a native file"),
    ("test_file2.TestFileMetaBlockSize", "the native metadata block size"),
    ("test_file_alignment", "native file-space alignment"),
    ("test_h5f.TestCacheConfig", "the metadata cache configuration of a native file"),
    ("test_highlevel_vds.VDSUnlimitedTestCase", "copies the file with shutil.copyfile, which a store (a directory) is not; the same steps on a store pass (tests/test_vds.py::test_unlimited_axis_as_in_h5pys_own_test)"),
    ("test_dataset.TestExternal", "external raw storage is a native layout"),
    ("test_base::test_is_hdf5", "h5py.is_hdf5 asks HDF5 only about a regular file (os.path.isfile); a store is a directory"),
    ("test_file::test_reproducible_file", "compares the bytes of two native files"),
    ("test_file.TestFileOpen::test_default", "overwrites the file's bytes with non-HDF5 bytes itself; a store is a directory"),
    ("test_dtype.TestBitfield", "PyTables writes a native HDF5 file with its own libhdf5 (run when tables is installed), which h5py then reads natively"),
    ("test_group.TestCopy::test_copy_external_links", "removes the linked file with os.unlink, which a store (a directory) is not; the copy itself passes"),
]


def native_reason(tid):
    for prefix, why in NATIVE_FORMAT:
        if tid.startswith(prefix) or tid.startswith("h5py.tests." + prefix):
            return why
    return None


def build_plugin(dest):
    out = subprocess.run(
        ["cargo", "build", "-q", "-p", "h5lake-vol", "--message-format=json"],
        cwd=ROOT, check=True, capture_output=True, text=True).stdout
    libs = [f for line in out.splitlines() if line.startswith("{")
            for f in json.loads(line).get("filenames", []) if f.endswith("libh5lake_vol.so")]
    if not libs:
        sys.exit("cargo built no libh5lake_vol.so")
    shutil.copy(libs[-1], dest)
    return dest


def tests_root():
    import h5py
    return os.path.join(os.path.dirname(h5py.__file__), "tests")


def test_files():
    root = tests_root()
    return sorted(os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs
                  if f.startswith("test_") and f.endswith(".py"))


def test_groups():
    """The suite's tests as groups that share set-up: each test class, and
    each file's module-level tests. Returns lists of pytest node ids."""
    out = subprocess.run([sys.executable, "-m", "pytest", "--co", "-q", "-p", "no:cacheprovider",
                          *test_files()], capture_output=True, text=True, cwd=ROOT).stdout
    groups = {}
    for line in out.splitlines():
        if "::" not in line:
            continue
        parts = line.split("::")
        # pytest prints paths relative to the suite's own rootdir
        path = os.path.join(tests_root(), parts[0])
        key = (path, parts[1] if len(parts) > 2 else None)
        groups.setdefault(key, []).append("::".join([path] + parts[1:]))
    return list(groups.values())


def run_suite(env, workdir, extra):
    """Runs each test class (and each file's module-level tests) in a
    process of its own: a crash, or state a test leaves in the library,
    stays with its group. Returns {test id: (outcome, message)}."""
    results = {}
    for n, nodes in enumerate(test_groups()):
        junit = os.path.join(workdir, "%d.xml" % n)
        node = nodes[0].split("::")[0]
        with tempfile.TemporaryDirectory() as work:
            cmd = [sys.executable, "-m", "pytest", *nodes, "-q", "-p", "no:cacheprovider",
                   "--junitxml", junit, "-o", "junit_family=xunit1", *extra]
            r = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True, timeout=1800)
        if not os.path.exists(junit):
            if r.returncode == 5:  # nothing collected
                continue
            results[node.split("/tests/")[-1] + " (whole group)"] = ("error", "the test process died (exit %d): %s" % (
                r.returncode, (r.stderr.strip().splitlines() or [""])[-1][:200]))
            continue
        for case in ET.parse(junit).getroot().iter("testcase"):
            tid = "%s::%s" % (case.get("classname"), case.get("name"))
            outcome, msg = "passed", ""
            for tag in ("failure", "error", "skipped"):
                el = case.find(tag)
                if el is not None:
                    outcome = {"failure": "failed", "error": "error", "skipped": "skipped"}[tag]
                    msg = (el.get("message") or el.text or "").strip().splitlines()
                    msg = msg[0][:200] if msg else ""
                    break
            results[tid] = (outcome, msg)
    return results


def shown(path):
    """``path`` relative to the repository when inside it."""
    rel = os.path.relpath(os.path.abspath(path), ROOT)
    return path if rel.startswith(os.pardir) else rel


def h5py_version():
    import h5py
    return h5py.__version__


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--plugin-dir")
    ap.add_argument("--out", default=None,
                    help="the report (default tests/H5PY-SUITE.md, for the default --connector only)")
    ap.add_argument("--connector", default="h5lake",
                    help="HDF5_VOL_CONNECTOR for the connector's run: its name and settings, "
                         "e.g. \"h5lake layout=columnar\" (default: h5lake)")
    ap.add_argument("-k", default=None, help="only tests matching this pytest -k expression")
    args = ap.parse_args()
    if args.connector.split()[:1] != ["h5lake"]:
        ap.error("--connector names the h5lake connector first: \"h5lake [SETTINGS]\"")
    default_setting = args.connector.strip() == "h5lake"
    if args.out is None:
        if not default_setting:
            ap.error("--out is needed with --connector %r (tests/H5PY-SUITE.md is the default "
                     "setting's report)" % args.connector)
        args.out = os.path.join(ROOT, "tests", "H5PY-SUITE.md")
    extra = ["-k", args.k] if args.k else []

    plugin_dir = args.plugin_dir or build_plugin(tempfile.mkdtemp(prefix="h5lake-vol-"))
    base = {k: v for k, v in os.environ.items() if k not in ("HDF5_VOL_CONNECTOR", "HDF5_PLUGIN_PATH")}
    native = run_suite(base, tempfile.mkdtemp(), extra)
    vol = run_suite(dict(base, HDF5_PLUGIN_PATH=plugin_dir, HDF5_VOL_CONNECTOR=args.connector),
                    tempfile.mkdtemp(), extra)

    def count(res):
        return collections.Counter(o for o, _ in res.values())

    cn, cv = count(native), count(vol)
    # A group whose process died reports none of its tests: each of them is
    # lost, with the death as its error (never counted as passing).
    deaths = {k[: -len(" (whole group)")]: v for k, v in vol.items() if k.endswith(" (whole group)")}

    def vol_outcome(t):
        if t in vol:
            return vol[t]
        module = t.split("::")[0].replace("h5py.tests.", "").split(".")[0]
        died = [v for f, v in deaths.items() if os.path.basename(f) == module + ".py"]
        return died[0] if died else ("error", "not reported through the connector")

    lost = sorted(t for t, (o, _) in native.items() if o == "passed" and vol_outcome(t)[0] != "passed")
    excluded = [t for t in lost if native_reason(t)]
    others = [t for t in lost if not native_reason(t)]
    passed_natively = cn["passed"]
    rest = passed_natively - len(excluded)
    lines = ["# h5py's test suite through the h5lake VOL connector", "",
             "h5py's own tests (`python -m pytest --pyargs h5py`, h5py %s with its bundled HDF5), run on "
             "native HDF5 and with `HDF5_VOL_CONNECTOR=%s`, each test class in a process of its own. "
             "Command: `python3 tests/vol_h5py_suite.py%s`." % (
                 h5py_version(), args.connector if default_setting else '"%s"' % args.connector,
                 "" if default_setting else ' --connector "%s" --out %s' % (
                     args.connector, shown(args.out))), "",
             "| run | passed | failed | errors | skipped |", "|---|---:|---:|---:|---:|"]
    for name, c in (("native HDF5", cn), ("h5lake connector", cv)):
        lines.append("| %s | %d | %d | %d | %d |" % (name, c["passed"], c["failed"], c["error"], c["skipped"]))
    lines += ["",
              "Of the %d tests that pass natively, %d probe the native file format itself and are "
              "excluded (listed last, with the reason). Of the other %d, **%d pass through the "
              "connector (%.1f%%)**; the %d that do not are listed first, with the first line of "
              "their error." % (passed_natively, len(excluded), rest, rest - len(others),
                                # rounded down: "100%" only when nothing fails
                                math.floor(1000.0 * (rest - len(others)) / max(rest, 1)) / 10,
                                len(others)), ""]

    def listing(tests, why):
        by_module = collections.defaultdict(list)
        for t in tests:
            by_module[t.split("::")[0]].append(t)
        out = []
        for mod in sorted(by_module):
            out.append("### %s (%d)" % (mod, len(by_module[mod])))
            out.append("")
            for t in by_module[mod]:
                out.append("- `%s`: %s" % (t.split("::", 1)[1], why(t).replace("|", "\\|")))
            out.append("")
        return out

    lines += ["## Failing through the connector", ""] + listing(others, lambda t: vol_outcome(t)[1])
    lines += ["## Excluded: native-format tests", ""] + listing(
        excluded, lambda t: "%s (%s)" % (native_reason(t), vol_outcome(t)[1][:100]))
    with open(args.out, "w") as f:
        f.write("\n".join(lines))
    print("native: %s\nvol:    %s\nreport: %s" % (dict(cn), dict(cv), args.out))


if __name__ == "__main__":
    main()
