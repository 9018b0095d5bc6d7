"""Build hook: the wheel carries structfs's compiled numba kernels.

numba compiles a kernel at its first call and keeps the machine code in a cache beside the module
(``__pycache__``), keyed on the content of structfs's kernel files (``structfs._jit``), numba's version and
the CPU. Compiled while the wheel is built -- on the machine that installs it, for ``pip install .`` --
the kernels arrive with the package, and the first fit after installing loads them instead of
compiling them for a minute or two.
Where the cache cannot be used (another numba version or CPU than the build's) numba compiles at the
first call, as without this step. Setting STRUCTFS_SKIP_KERNELS=1 skips it; a failure only warns.
"""
import os
import subprocess
import sys

from setuptools import setup
from setuptools.command.build_py import build_py


class BuildPyWithKernels(build_py):
    def run(self):
        super().run()
        if getattr(self, "editable_mode", False) or os.environ.get("STRUCTFS_SKIP_KERNELS"):
            return
        environment = {key: value for key, value in os.environ.items() if key != "NUMBA_CACHE_DIR"}
        # pip's isolated build environment reaches its packages through PYTHONPATH: keep it, the package first
        environment["PYTHONPATH"] = os.pathsep.join(filter(None, (os.path.abspath(self.build_lib),
                                                                  os.environ.get("PYTHONPATH"))))
        print("structfs: compiling the numba kernels into the wheel (one to two minutes)", file=sys.stderr, flush=True)
        try:
            subprocess.run([sys.executable, "-m", "structfs.warmup"], env=environment, cwd=self.build_lib,
                           check=True, timeout=3600)
        except (OSError, subprocess.SubprocessError) as exc:
            print(f"structfs: the kernels were not compiled at build time ({exc}); the first fit after "
                  "installing compiles them", file=sys.stderr)


setup(cmdclass={"build_py": BuildPyWithKernels})
