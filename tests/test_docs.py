"""Every public estimator documents every __init__ parameter (numpy-style "Parameters" section)."""
import inspect
import re

import pytest

from structfs import OneVsRestStructSVM, StructSVM, StructSVMCV
from structfs.mil import MILESClassifier, MILESEmbedding


def _documented(cls):
    doc = inspect.getdoc(cls) or ""
    section = doc.split("Parameters\n----------\n", 1)[1].split("\nAttributes\n", 1)[0]
    names = set()
    for line in section.splitlines():
        if line and not line[0].isspace():                       # "name : type" or "a, b, c : ..."
            head = line.split(" : ")[0].rstrip(" :")
            names.update(n.strip() for n in re.split(r",\s*", head))
    return names


@pytest.mark.parametrize("cls", [StructSVM, StructSVMCV, OneVsRestStructSVM, MILESClassifier, MILESEmbedding])
def test_every_init_parameter_is_documented(cls):
    params = set(inspect.signature(cls.__init__).parameters) - {"self"}
    missing = params - _documented(cls)
    assert not missing, f"{cls.__name__} does not document {sorted(missing)}"
