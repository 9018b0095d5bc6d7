"""The Examples sections of the public classes run as written."""
import doctest
import importlib

import pytest


@pytest.mark.parametrize("module", ["structfs.estimators", "structfs.model_selection._search", "structfs.mil"])
def test_examples_in_docstrings_run(module):
    result = doctest.testmod(importlib.import_module(module), optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0
