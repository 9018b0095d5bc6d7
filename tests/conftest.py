"""Hypothesis runs derandomised under CI (``CI`` set, as ``.ci/run`` does): a property test then draws
the same cases on every run, so a red run is reproducible and a green one is not luck. Locally it keeps
exploring new cases; a failure it finds is shrunk and printed with its ``@example``."""
import os

from hypothesis import settings

settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")
