"""check_loss refuses every kind of broken loss a researcher can write, and passes the honest ones."""
import numpy as np
import pytest

from structfs.losses import ContingencyLoss, F1Loss, Loss, get_loss
from structfs.testing import check_loss


def error_rate(a, b, c, d):
    return 100.0 * (b + c) / (a + b + c + d)


class NoOutputs(Loss):
    """A structured loss that cannot be enumerated, with an oracle that is always wrong."""

    name = "no-outputs"

    def oracle(self, y, s):
        return np.zeros_like(y), 0.0

    def _score(self, y, s):
        return 100.0


class DeclinesEverything(ContingencyLoss):
    def __init__(self):
        super().__init__(error_rate)

    def _check_classes(self, y):
        raise ValueError("no labels suit me")


class ExactOnlyForSmallN(ContingencyLoss):
    """The grid oracle up to n = 8, then the labeling 'all negative' (a plausible bug of a fast oracle)."""

    def __init__(self):
        super().__init__(error_rate)

    def oracle(self, y, s):
        if y.shape[0] <= 8:
            return self._grid_oracle(y, s)
        y_bar = -np.ones_like(y)
        return (50.0 / y.shape[0]) * (y - y_bar), self.delta(y, y_bar)


class ConstantScore(ContingencyLoss):
    def __init__(self):
        super().__init__(error_rate)

    def _score(self, y, s):
        return 42.0


class OrderDependentScore(ContingencyLoss):
    def __init__(self):
        super().__init__(error_rate)

    def _score(self, y, s):            # the measure of the first half of the examples only
        half = max(2, y.shape[0] // 2)
        return 100.0 - self.delta(y[:half], np.where(s[:half] > 0, 1.0, -1.0))


class ContingencyByFlag(Loss):
    """``is_contingency`` set on a plain Loss, with its own delta and an exact oracle, no ``feasible``."""

    name = "flagged"
    is_contingency = True

    def delta(self, y, y_bar):
        return float(100.0 * np.mean(y != y_bar))

    def oracle(self, y, s):
        y_bar = np.where(1.0 - y * s > 0, -y, y)          # flip every example inside the margin
        return (50.0 / y.shape[0]) * (y - y_bar), self.delta(y, y_bar)

    def _score(self, y, s):
        return 100.0 - self.delta(y, np.where(s > 0, 1.0, -1.0))


def positive_on_truth(a, b, c, d):
    return 5.0 + 100.0 * (b + c) / (a + b + c + d)


def nan_somewhere(a, b, c, d):
    return np.where(a == 1, np.nan, 100.0 * (b + c) / (a + b + c + d))


def beyond_percent(a, b, c, d):
    return 150.0 * (b + c) / (a + b + c + d)


@pytest.mark.parametrize("loss,match", [
    (NoOutputs(), "cannot verify"),
    (DeclinesEverything(), "checked no case"),
    (ExactOnlyForSmallN(), "n=1[02].*best output"),
    (ConstantScore(), "_score = 42"),
    (OrderDependentScore(), "reordered"),
    (ContingencyLoss(positive_on_truth), r"Delta\(y, y\)"),
    (ContingencyLoss(nan_somewhere), "NaN"),
    (ContingencyLoss(beyond_percent), "0..100"),
])
def test_check_loss_refuses(loss, match):
    with pytest.raises(AssertionError, match=match):
        check_loss(loss)


def test_a_contingency_flag_on_a_plain_loss_is_checked_not_crashed():
    assert check_loss(ContingencyByFlag()) > 0


@pytest.mark.parametrize("name", ["f1", "prec@k", "auc", "prec@rec"])
def test_built_in_losses_pass(name):
    assert check_loss(get_loss(name)) > 0


class Quadratic(F1Loss):
    def oracle(self, y, s):
        for i in range(0, s.shape[0], 1000):                             # O(n^2) work in bounded memory
            np.subtract.outer(s[i:i + 1000], s).max()
        return super().oracle(y, s)


def test_timing_probe_warns_on_a_quadratic_oracle():
    with pytest.warns(UserWarning, match="n log n"):
        check_loss(Quadratic(), sizes=(2, 3), timing=True)
