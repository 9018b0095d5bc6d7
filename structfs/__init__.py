"""structfs: sparse linear classifiers that optimise multivariate measures under a feature budget."""
__version__ = "0.1.0"

from . import losses, metrics  # noqa: E402
from .estimators import StructSVM  # noqa: E402

__all__ = ["StructSVM", "losses", "metrics", "__version__"]
