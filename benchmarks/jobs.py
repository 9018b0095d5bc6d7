"""Serial against parallel: each search with ``n_jobs=1``, ``2`` and ``-1`` (every core), in one warm
process (numba's cache filled), twice in alternation (the first parallel call also starts joblib's
workers, which load the compiled kernels once).

    python -m benchmarks.jobs [--r8] [--sms] [--mil musk1]

digits (10 classes) always; --r8: R8's 8 topics; --sms: SMS spam; --mil NAME: a MIL set of STRUCTFS_DATA.
"""
import argparse
import os
import time
import warnings

from sklearn.datasets import load_digits

from structfs import OneVsRestStructSVM, StructSVMCV
from structfs.warmup import compile_kernels


def _seconds(make, n_jobs, X, y):
    t0 = time.perf_counter()
    make(n_jobs).fit(X, y)
    return time.perf_counter() - t0


def _problems(args):
    """(data, estimator, factory(n_jobs), X, y) rows of the table."""
    X, y = load_digits(return_X_y=True)
    rows = [("digits, 10 classes", "OneVsRestStructSVM(StructSVMCV())",
             lambda j: OneVsRestStructSVM(estimator=StructSVMCV(), n_jobs=j), X / 16.0, y),
            ("digits, 10 classes", "StructSVMCV(), '0' against the rest", lambda j: StructSVMCV(n_jobs=j),
             X / 16.0, (y == 0).astype(int))]
    if args.r8 or args.sms:
        from sklearn.feature_extraction.text import TfidfVectorizer
    if args.r8:
        from structfs.datasets import load_r8

        xtr, ytr, _, _ = load_r8(None)
        Xr = TfidfVectorizer(sublinear_tf=True, min_df=2).fit_transform(xtr)
        rows += [("R8, 8 topics", "OneVsRestStructSVM(StructSVMCV())",
                  lambda j: OneVsRestStructSVM(estimator=StructSVMCV(), n_jobs=j), Xr, ytr),
                 ("R8, 8 topics", "StructSVMCV(), 'earn' against the rest", lambda j: StructSVMCV(n_jobs=j),
                  Xr, (ytr == "earn").astype(int))]
    if args.sms:
        from structfs.datasets import load_sms_spam

        texts, labels = load_sms_spam(None)
        rows.append(("SMS spam", "StructSVMCV()", lambda j: StructSVMCV(n_jobs=j),
                     TfidfVectorizer(sublinear_tf=True, min_df=2).fit_transform(texts), (labels == "spam").astype(int)))
    if args.mil:
        from structfs.datasets import get_data_home, load_mil_csv
        from structfs.mil import MILESClassifier

        bags, yb, _ = load_mil_csv(os.path.join(get_data_home(None), "mil", f"{args.mil}.csv.xz"))
        rows.append((args.mil, "MILESClassifier()", lambda j: MILESClassifier(n_jobs=j), bags, yb.astype(int)))
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--r8", action="store_true")
    parser.add_argument("--sms", action="store_true")
    parser.add_argument("--mil", default=None, help="a MIL set's name, e.g. musk1")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    compile_kernels()
    print(f"{os.cpu_count()} cores\n")
    print("| problem | estimator | call | n_jobs=1, s | n_jobs=2, s | n_jobs=-1, s | 2 / 1 | -1 / 1 |\n"
          "|---|---|---|---|---|---|---|---|")
    for name, label, make, X, y in _problems(args):
        for call in (1, 2):
            serial = _seconds(make, 1, X, y)
            two = _seconds(make, 2, X, y)
            every = _seconds(make, -1, X, y)
            print(f"| {name} | {label} | {call} | {serial:.1f} | {two:.1f} | {every:.1f} | {two / serial:.2f} | "
                  f"{every / serial:.2f} |", flush=True)


if __name__ == "__main__":
    main()
