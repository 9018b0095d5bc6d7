"""Sphinx configuration of the structfs documentation (``sphinx-build -W docs docs/_build/html``)."""
import os
import re
import warnings

import structfs

project = "structfs"
author = "the structfs developers"
copyright = "the structfs developers, BSD-3-Clause"
release = version = structfs.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "sphinx.ext.intersphinx",
    "numpydoc",
    "myst_parser",
    "sphinx_gallery.gen_gallery",
]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build", "auto_examples/*.ipynb", "auto_examples/*.py", "auto_examples/*.zip",
                    "auto_examples/*.md5", "auto_examples/*.codeobj.json"]
templates_path = ["_templates"]

autosummary_generate = True
autodoc_default_options = {"inherited-members": False}
numpydoc_show_class_members = False       # the API pages list members through autosummary templates
numpydoc_class_members_toctree = False
myst_heading_anchors = 3
myst_enable_extensions = ["dollarmath"]

intersphinx_mapping = {}                  # no network when the docs build in CI

html_theme = "pydata_sphinx_theme"
html_title = f"structfs {version}"
html_theme_options = {"navigation_with_keys": False, "show_prev_next": False}

sphinx_gallery_conf = {
    "examples_dirs": "../examples",
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "download_all_examples": False,
    "remove_config_comments": True,
    "abort_on_example_error": True,
    "within_subsection_order": "FileNameSortKey",
}

os.environ.setdefault("MPLBACKEND", "Agg")
# the examples' own progress and convergence messages are part of their output, not build warnings
warnings.filterwarnings("ignore", category=UserWarning, message="Matplotlib is currently using agg")
autosummary_imported_members = False


def _plain_scikit_learn_references(app, what, name, obj, options, lines):
    """Methods inherited from scikit-learn (get_params, score, ...) cite its own documentation's labels and
    glossary, which this site does not have (no network for intersphinx in CI): show them as literals."""
    if getattr(obj, "__module__", "").startswith("sklearn"):
        lines[:] = [re.sub(r":(?:ref|term|class|func|meth|attr|mod):`~?([^`<]*?)\s*(?:<[^>]*>)?`", r"``\1``", line)
                    for line in lines]


def setup(app):
    app.connect("autodoc-process-docstring", _plain_scikit_learn_references)
