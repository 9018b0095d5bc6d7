"""The examples run end to end (quick mode) on the shared data; skipped without it."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

DATA = os.environ.get("STRUCTFS_DATA")
ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
@pytest.mark.skipif(not DATA, reason="STRUCTFS_DATA is not set: the shared datasets are absent")
@pytest.mark.parametrize("script", ["custom_loss.py", "mil_elephant.py", "text_f1_r8.py"])
def test_example_runs(script, tmp_path):
    args = [sys.executable, str(ROOT / "examples" / script), DATA, "--quick"]
    if script == "text_f1_r8.py":
        args += ["--plot", str(tmp_path / "path.png")]
    done = subprocess.run(args, capture_output=True, text=True, timeout=900, env=dict(os.environ, MPLBACKEND="Agg"))
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip()
