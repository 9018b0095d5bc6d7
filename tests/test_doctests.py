"""The Examples sections of the public classes run as written."""
import doctest
import importlib

import pytest


@pytest.mark.parametrize("module", ["structfs.estimators", "structfs.model_selection._search", "structfs.mil",
                                    "structfs.losses.base", "structfs.losses.error", "structfs.losses.fmeasure",
                                    "structfs.losses.ranking", "structfs.losses.auc", "structfs.losses.retrieval",
                                    "structfs.losses.weighted", "structfs.losses.per_query",
                                    "structfs.metrics", "structfs.datasets", "structfs.preprocessing"])
def test_examples_in_docstrings_run(module):
    result = doctest.testmod(importlib.import_module(module), optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0


def test_every_public_class_has_an_examples_section():
    import inspect

    import structfs
    import structfs.losses
    import structfs.metrics
    import structfs.mil

    missing = [name for module in (structfs, structfs.losses, structfs.metrics, structfs.mil) for name in module.__all__
               if inspect.isclass(getattr(module, name)) and "Examples\n" not in (getattr(module, name).__doc__ or "")]
    assert not missing
