"""Serial against parallel: ``OneVsRestStructSVM(estimator=StructSVMCV())`` and one ``StructSVMCV`` search
with ``n_jobs=1`` and ``n_jobs=2``, in one warm process (numba's cache filled), each twice in alternation
(the first parallel call also starts joblib's workers, which load the compiled kernels once).

    python -m benchmarks.jobs [--r8]        # digits (10 classes); --r8: also R8's 8 topics
"""
import argparse
import time
import warnings

from sklearn.datasets import load_digits

from structfs import OneVsRestStructSVM, StructSVMCV
from structfs.warmup import compile_kernels


def _seconds(make, n_jobs, X, y):
    t0 = time.perf_counter()
    make(n_jobs).fit(X, y)
    return time.perf_counter() - t0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--r8", action="store_true")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    compile_kernels()
    X, y = load_digits(return_X_y=True)
    problems = [("digits, 10 classes", X / 16.0, y)]
    if args.r8:
        from sklearn.feature_extraction.text import TfidfVectorizer

        from structfs.datasets import load_r8

        xtr, ytr, _, _ = load_r8(None)
        problems.append(("R8, 8 topics", TfidfVectorizer(sublinear_tf=True, min_df=2).fit_transform(xtr), ytr))
    print("| problem | estimator | call | n_jobs=1, s | n_jobs=2, s | ratio |\n|---|---|---|---|---|---|")
    for name, X, y in problems:
        binary = (y == y[0]).astype(int)
        for label, make, target in (("OneVsRestStructSVM(StructSVMCV())",
                                     lambda j: OneVsRestStructSVM(estimator=StructSVMCV(), n_jobs=j), y),
                                    ("StructSVMCV(), the first row's class against the rest",
                                     lambda j: StructSVMCV(n_jobs=j), binary)):
            for call in (1, 2):
                serial = _seconds(make, 1, X, target)
                parallel = _seconds(make, 2, X, target)
                print(f"| {name} | {label} | {call} | {serial:.1f} | {parallel:.1f} | {parallel / serial:.2f} |",
                      flush=True)


if __name__ == "__main__":
    main()
