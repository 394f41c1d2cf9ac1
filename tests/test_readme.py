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
