"""structfs: sparse linear classifiers that optimise multivariate measures under a feature budget."""
__version__ = "0.1.0"

from . import losses, metrics  # noqa: E402

__all__ = ["losses", "metrics", "__version__"]
