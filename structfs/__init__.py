"""structfs: sparse linear classifiers that optimise multivariate measures under a feature budget."""
__version__ = "0.1.0"

from . import losses, metrics  # noqa: E402
from .estimators import OneVsRestStructSVM, StructSVM  # noqa: E402
from .model_io import load_model, save_model  # noqa: E402
from .model_selection import StructSVMCV  # noqa: E402

__all__ = ["StructSVM", "StructSVMCV", "OneVsRestStructSVM", "save_model", "load_model", "losses", "metrics", "__version__"]
