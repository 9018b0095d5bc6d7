"""What a new user meets: install into a fresh virtual environment, then the first demo against the
second, and a first fit on R8 in a new process.

    python -m benchmarks.first_run [--keep DIR]

Clones this repository (its last commit) and creates a virtual environment in a temporary directory
(or DIR), runs ``pip install`` of the clone there (current versions from the configured index, as
``.ci/run`` does), then from a directory outside the repository: ``structfs demo`` twice, and twice a
new process that reads R8 (``STRUCTFS_DATA``), builds TF-IDF features and fits ``StructSVM(loss="f1")``
on "grain" against the rest. Prints one table.
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

_FIRST_FIT = """
import time
t0 = time.perf_counter()
from sklearn.feature_extraction.text import TfidfVectorizer
from structfs import StructSVM
from structfs.datasets import load_r8
xtr, ytr, _, _ = load_r8(None)
X = TfidfVectorizer(sublinear_tf=True, min_df=2).fit_transform(xtr)
t1 = time.perf_counter()
StructSVM(loss="f1").fit(X, (ytr == "grain").astype(int))
print(f"{t1 - t0:.1f} {time.perf_counter() - t1:.1f}")
"""


def _timed(command, **kwargs):
    t0 = time.perf_counter()
    out = subprocess.run(command, capture_output=True, text=True, check=True, **kwargs)
    return time.perf_counter() - t0, out


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--keep", default=None, help="make the environment here and keep it")
    args = parser.parse_args()
    root = Path(__file__).resolve().parents[1]
    work = Path(args.keep or tempfile.mkdtemp())
    environment = {key: value for key, value in os.environ.items() if key not in ("NUMBA_CACHE_DIR", "PYTHONPATH")}
    subprocess.run([sys.executable, "-m", "venv", str(work / "venv")], check=True)
    python, structfs = str(work / "venv" / "bin" / "python"), str(work / "venv" / "bin" / "structfs")
    subprocess.run([python, "-m", "pip", "install", "-q", "--upgrade", "pip"], check=True, capture_output=True)
    # a clean clone: pip builds in the source tree, and a build/ left there would hold compiled kernels
    subprocess.run(["git", "clone", "-q", str(root), str(work / "clone")], check=True)
    install, _ = _timed([python, "-m", "pip", "install", "-q", str(work / "clone")], env=environment)
    print("| what | first run, s | second run, s | first / second |")
    print("|---|---|---|---|")
    print(f"| `pip install .` (fresh environment; compiles the kernels) | {install:.1f} | | |", flush=True)
    demos = [_timed([structfs, "demo"], cwd=work, env=environment) for _ in range(2)]
    notice = "compiling" in demos[0][1].stderr
    print(f"| `structfs demo`, whole run{' (compiled at its start)' if notice else ''} | {demos[0][0]:.1f} | "
          f"{demos[1][0]:.1f} | {demos[0][0] / demos[1][0]:.2f} |", flush=True)
    fits = [_timed([python, "-c", _FIRST_FIT], cwd=work, env=environment)[1].stdout.split() for _ in range(2)]
    print(f"| `StructSVM(loss=\"f1\").fit` on R8 \"grain\", in a new process (reading and TF-IDF before it: "
          f"{fits[0][0]} s) | {fits[0][1]} | {fits[1][1]} | |", flush=True)


if __name__ == "__main__":
    main()
