"""The gallery's examples run end to end without STRUCTFS_DATA (the documentation build runs them too,
with their figures; here a failure names the example)."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
@pytest.mark.parametrize("script", sorted(p.name for p in (ROOT / "examples").glob("plot_*.py")))
def test_example_runs(script, tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "STRUCTFS_DATA"}
    done = subprocess.run([sys.executable, str(ROOT / "examples" / script)], capture_output=True, text=True,
                          timeout=600, cwd=tmp_path, env=dict(env, MPLBACKEND="Agg"))
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip()
