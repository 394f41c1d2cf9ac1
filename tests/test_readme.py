"""The README's tour and the demo module run as written."""

import os
import pathlib
import re
import subprocess
import sys

README = pathlib.Path(__file__).resolve().parents[1] / "README.md"


def test_readme_tour_runs(tmp_path, monkeypatch, capsys):
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    assert blocks, "the README has a Python tour"
    monkeypatch.chdir(tmp_path)
    for code in blocks:
        exec(compile(code, str(README), "exec"), {"__name__": "__readme__"})
    out = capsys.readouterr().out
    assert "(200, 1024, 1024) (1, 512, 512) gzip" in out
    assert (tmp_path / "run.h5l" / ".domain.json").is_file()


def test_demo_module_runs(tmp_path):
    env = dict(os.environ)
    r = subprocess.run([sys.executable, "-m", "h5lake.demo", str(tmp_path)], capture_output=True, text=True, env=env,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert "names = ['alpha', 'béta', 'gamma']" in r.stdout
    assert (tmp_path / "tour.h5l" / ".domain.json").is_file()


def test_readme_commands_run(tmp_path):
    """Every `h5lake ...` line of the README's command block, in order, on an
    ICESat-2-like file; each must exit 0."""
    import h5py
    import numpy as np
    block = re.search(r"```sh\n(h5lake load .*?)```", README.read_text(), flags=re.S).group(1)
    # (Shell lines: quotes group words, as the shell reads them.)
    import shlex
    commands = [shlex.split(line.split("#")[0]) for line in block.splitlines() if line.strip()]
    assert len(commands) >= 8 and all(c[0] == "h5lake" for c in commands)
    with h5py.File(tmp_path / "ATL03.h5", "w") as f:
        for beam in ("gt1l", "gt1r"):
            g = f.create_group(beam)
            g.create_dataset("h_ph", data=np.arange(50_000, dtype="f4"), chunks=(10_000,),
                             compression="gzip")
            g.create_dataset("lat_ph", data=np.linspace(-80, 80, 50_000), chunks=(10_000,))
            g.attrs["description"] = f"beam {beam}"
    for cmd in commands:
        r = subprocess.run([sys.executable, "-m", "h5lake", *cmd[1:]], cwd=tmp_path,
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, (cmd, r.stdout, r.stderr)
    with h5py.File(tmp_path / "copy.h5", "r") as f:
        np.testing.assert_array_equal(f["gt1r/h_ph"][...], np.arange(50_000, dtype="f4"))
