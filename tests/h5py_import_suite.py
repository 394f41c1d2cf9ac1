"""Runs h5py's own high-level test files (shipped inside the h5py wheel) with
``import h5py`` bound to h5lake — the README's promise, "change the import;
everything else stays", checked by h5py's tests themselves (issue 24).

    python3 tests/h5py_import_suite.py [--out tests/H5PY-IMPORT-SUITE.md] [-k EXPR]
                                       [--floor N] [--files test_group.py,...]

The test files are copied into a scratch package whose conftest binds
``sys.modules["h5py"]`` (and ``h5py.<sub>`` for the submodules h5lake has)
to h5lake before any test module is imported. Prints per-file counts and
writes a report listing every failing test with the first line of its
error. With ``--floor N`` it exits 1 when fewer than N tests pass (the
floor only goes up: tests/h5py_import_floor.txt).
"""

import argparse
import collections
import os
import re
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# The files issue 24 names.
FILES = ["test_group.py", "test_dataset.py", "test_dataset_getitem.py", "test_attrs.py",
         "test_attrs_data.py", "test_attribute_create.py", "test_slicing.py",
         "test_selections.py", "test_file.py", "test_dtype.py", "test_datatype.py",
         "test_base.py", "test_objects.py", "test_dimension_scales.py",
         "test_completions.py"]

# Tests that probe HDF5's native file format or library internals, which a
# store of objects does not have: (id prefix, reason).
EXCLUDED = [
    ("test_file.py::TestDrivers", "file drivers (VFDs) sit under HDF5's native file format"),
    ("test_file.py::TestFileLocking", "HDF5's native file locking"),
    ("test_file.py::TestUserblock", "the user block is a region of a native HDF5 file"),
    ("test_file.py::TestNewLibver", "library version bounds choose native format versions"),
    ("test_file.py::TestPageBuffering", "page buffering is a native-format setting"),
    ("test_file.py::TestSpaceStrategy", "file space strategies are native-format settings"),
    ("test_dataset.py::TestExternal", "external raw storage is a native layout"),
]

CONFTEST = '''
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys

import h5lake


TESTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "h5py", "tests")


class _H5pyIsH5lake(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    # `import h5py.X` gives the module h5lake.X itself (one module object,
    # so classes and isinstance checks are shared), or fails as h5lake
    # lacking it; h5py.tests is h5py's test package, copied here.
    def find_spec(self, name, path=None, target=None):
        if name == "h5py.tests":
            return importlib.util.spec_from_file_location(
                name, os.path.join(TESTS, "__init__.py"), submodule_search_locations=[TESTS])
        if name.startswith("h5py.tests."):
            return importlib.machinery.PathFinder.find_spec(name, [TESTS])
        if name.startswith("h5py."):
            return importlib.util.spec_from_loader(name, self)
        return None

    def create_module(self, spec):
        return importlib.import_module("h5lake" + spec.name[len("h5py"):])

    def exec_module(self, module):
        pass


sys.modules["h5py"] = h5lake
sys.meta_path.insert(0, _H5pyIsH5lake())
'''


def h5py_tests_dir():
    out = subprocess.run([sys.executable, "-c",
                          "import h5py, os; print(os.path.dirname(h5py.__file__))"],
                         capture_output=True, text=True, check=True)
    return os.path.join(out.stdout.strip(), "tests")


def excluded(tid):
    for prefix, why in EXCLUDED:
        if tid.startswith(prefix):
            return why
    return None


def _stable(msg):
    """A failure message without the temporary names that change each run
    (so that the report changes only when results do)."""
    msg = re.sub(r"/tmp/[^\s'\"]*/([^/\s'\"]+)", r"<tmp>/\1", msg)
    msg = re.sub(r"\btmp[a-z0-9_]{8}\.hdf5\b", "<tmpfile>.hdf5", msg)
    return re.sub(r"\b([dgt])-[0-9a-f]{8}-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{6}-[0-9a-f]{6}\b",
                  r"\1-<id>", msg)


def run_file(work, name, k):
    junit = os.path.join(work, name + ".xml")
    cmd = [sys.executable, "-m", "pytest", os.path.join("h5py", "tests", name), "-q",
           "-p", "no:cacheprovider", "--junitxml", junit, "-o", "junit_family=xunit1",
           "-p", "no:randomly"]
    if k:
        cmd += ["-k", k]
    r = subprocess.run(cmd, cwd=work, capture_output=True, text=True, timeout=1800)
    results = {}
    if not os.path.exists(junit):
        return {f"{name}::<collection>": ("failed", (r.stdout + r.stderr).strip()[-300:])}
    for case in ET.parse(junit).getroot().iter("testcase"):
        cls = case.get("classname", "").rsplit(".", 1)[-1]
        tid = f"{name}::{cls}::{case.get('name')}" if cls and cls != name[:-3] \
            else f"{name}::{case.get('name')}"
        outcome, msg = "passed", ""
        for tag in ("failure", "error", "skipped"):
            el = case.find(tag)
            if el is not None:
                outcome = "skipped" if tag == "skipped" else "failed"
                msg = (el.get("message") or el.text or "").strip().splitlines()
                msg = msg[0][:200] if msg else ""
                break
        results[tid] = (outcome, _stable(msg.replace(work, "<suite>")))
    if not results or all(t.endswith(name[:-3]) for t in results):
        # A file that does not import: say why, once.
        why = [ln for ln in r.stdout.splitlines() if ln.startswith("E ")]
        return {f"{name}::<import>": ("failed", why[0][1:].strip() if why else "no tests")}
    return results


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(ROOT, "tests", "H5PY-IMPORT-SUITE.md"))
    ap.add_argument("-k", default=None)
    ap.add_argument("--floor", type=int, default=None)
    ap.add_argument("--files", default=None)
    args = ap.parse_args()
    files = args.files.split(",") if args.files else FILES
    work = tempfile.mkdtemp(prefix="h5py-import-suite-")
    try:
        shutil.copytree(h5py_tests_dir(), os.path.join(work, "h5py", "tests"),
                        ignore=shutil.ignore_patterns("__pycache__"))
        # (Marks the directory a package for pytest; `h5py` itself is h5lake.)
        open(os.path.join(work, "h5py", "__init__.py"), "w").close()
        with open(os.path.join(work, "conftest.py"), "w") as f:
            f.write(CONFTEST)
        per_file = collections.OrderedDict()
        for name in files:
            per_file[name] = run_file(work, name, args.k)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    lines = ["# h5py's own tests with `import h5py` bound to h5lake", "",
             "Generated by `python3 tests/h5py_import_suite.py` (issue 24). Excluded tests "
             "probe HDF5's native file format; each is listed with the reason.", "",
             "| file | passed | failed | skipped | excluded | pass rate |",
             "|---|---:|---:|---:|---:|---:|"]
    tot = collections.Counter()
    failures = []
    for name, res in per_file.items():
        c = collections.Counter()
        for tid, (outcome, msg) in sorted(res.items()):
            if outcome == "failed" and excluded(tid):
                c["excluded"] += 1
                continue
            c[outcome] += 1
            if outcome == "failed":
                failures.append((tid, msg))
        tot.update(c)
        counted = c["passed"] + c["failed"]
        rate = f"{100 * c['passed'] / counted:.0f}%" if counted else "-"
        lines.append(f"| {name} | {c['passed']} | {c['failed']} | {c['skipped']} | "
                     f"{c['excluded']} | {rate} |")
        print(f"{name:32s} {c['passed']:4d} passed {c['failed']:4d} failed "
              f"{c['skipped']:4d} skipped {c['excluded']:3d} excluded", flush=True)
    counted = tot["passed"] + tot["failed"]
    rate = 100 * tot["passed"] / counted if counted else 0.0
    lines.append(f"| **all** | **{tot['passed']}** | **{tot['failed']}** | {tot['skipped']} | "
                 f"{tot['excluded']} | **{rate:.0f}%** |")
    lines += ["", "## Excluded", ""] + [f"- `{p}`: {w}" for p, w in EXCLUDED]
    lines += ["", "## Failing", ""] + [f"- `{t}`: {m}" for t, m in failures]
    with open(args.out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"h5py import suite: {tot['passed']}/{counted} passed ({rate:.0f}%), "
          f"{tot['skipped']} skipped, {tot['excluded']} excluded")
    if args.floor is not None and tot["passed"] < args.floor:
        print(f"fewer than the floor of {args.floor} passed", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
