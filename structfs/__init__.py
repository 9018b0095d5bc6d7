"""structfs: sparse linear classifiers that optimise multivariate measures under a feature budget.

The public names are imported on first use (PEP 562), so that ``structfs --help`` and other light
uses do not pay for numba, scikit-learn and scipy.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:       # what type checkers and IDEs see; at run time the names load on first use
    from . import cluster as cluster
    from . import datasets as datasets
    from . import losses, metrics
    from . import mil as mil
    from . import preprocessing as preprocessing
    from . import shards as shards
    from . import solvers as solvers
    from . import testing as testing
    from .estimators import OneVsRestStructSVM, StructSVM
    from .model_io import load_model, save_model
    from .model_selection import StructSVMCV
    from .multilabel import MultiLabelStructSVM, MultiLabelStructSVMCV

_PUBLIC = {
    "StructSVM": "estimators", "OneVsRestStructSVM": "estimators", "StructSVMCV": "model_selection",
    "save_model": "model_io", "load_model": "model_io",
    "MultiLabelStructSVM": "multilabel", "MultiLabelStructSVMCV": "multilabel",
}
_SUBMODULES = ("losses", "metrics", "mil", "multilabel", "solvers", "datasets", "testing", "shards", "cluster",
               "preprocessing")

__all__ = ["StructSVM", "StructSVMCV", "OneVsRestStructSVM", "MultiLabelStructSVM", "MultiLabelStructSVMCV",
           "save_model", "load_model", "losses", "metrics",
           "__version__"]


def __getattr__(name: str) -> Any:
    import importlib

    if name in _PUBLIC:
        value = getattr(importlib.import_module(f".{_PUBLIC[name]}", __name__), name)
    elif name in _SUBMODULES:
        value = importlib.import_module(f".{name}", __name__)
    else:
        raise AttributeError(f"module 'structfs' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
