"""Paired differences between two runs of benchmarks/cv.py r8 or sms, read from their printed tables.

    python benchmarks/cv.py r8 --loss ap > /tmp/shipped.txt
    python benchmarks/cv.py r8 --loss ap --budgets 5 20 > /tmp/variant.txt
    python benchmarks/experiments/paired_tables.py /tmp/shipped.txt /tmp/variant.txt

Both runs print one row per problem (an R8 topic, or an SMS split) whose second column is
StructSVMCV's test measure and whose third is its feature count; the rows are paired by their first
column. Prints every problem's (a), (b) and (b) - (a), then the mean difference with its standard error
and the mean features of each run.
"""
import re
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))        # benchmarks/
from mil import paired  # noqa: E402

ROW = re.compile(r"^\| ([\w-]+) \| ([0-9.]+) \| ([0-9]+) \| ")


def rows(path):
    """{problem: (measure, features)} from the per-problem rows of a cv.py table."""
    out = {}
    with open(path) as f:
        for line in f:
            m = ROW.match(line)
            if m and m.group(1) not in out:             # the first table: the per-problem results
                out[m.group(1)] = (float(m.group(2)), int(m.group(3)))
    return out


def main():
    a, b = rows(sys.argv[1]), rows(sys.argv[2])
    common = [k for k in a if k in b]
    if not common:
        sys.exit("no problem in common: are both files outputs of benchmarks/cv.py?")
    print("| problem | (a) | (b) | (b) − (a) |")
    print("|---|---|---|---|")
    for k in common:
        print(f"| {k} | {a[k][0]:.2f} ({a[k][1]}) | {b[k][0]:.2f} ({b[k][1]}) | {b[k][0] - a[k][0]:+.2f} |")
    difference = paired([b[k][0] for k in common], [a[k][0] for k in common], digits=2)
    print(f"\nmean (b) − (a) over {len(common)} problems: {difference}; "
          f"(a) {np.mean([a[k][0] for k in common]):.2f} with {np.mean([a[k][1] for k in common]):.1f} features, "
          f"(b) {np.mean([b[k][0] for k in common]):.2f} with {np.mean([b[k][1] for k in common]):.1f}")


if __name__ == "__main__":
    main()
