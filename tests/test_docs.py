"""The documentation covers the public API, and its gallery runs without private data."""
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _documented():
    text = (ROOT / "docs" / "api.rst").read_text()
    names, module = set(), "structfs"
    for line in text.splitlines():
        current = re.match(r"\.\. currentmodule:: (\S+)", line)
        if current:
            module = current.group(1)
        entry = re.match(r"   ([A-Za-z_][\w.]*)$", line)
        if entry:
            names.add(f"{module}.{entry.group(1)}")
        data = re.match(r"\.\. autodata:: (\S+)", line)
        if data:
            name = data.group(1)
            names.add(name if name.startswith("structfs.") else f"{module}.{name}")
    return names


@pytest.mark.parametrize("module", ["structfs", "structfs.losses", "structfs.metrics", "structfs.mil",
                                    "structfs.testing"])
def test_the_api_reference_lists_every_public_name(module):
    import importlib

    mod = importlib.import_module(module)
    documented = _documented()
    missing = [name for name in mod.__all__
               if f"{module}.{name}" not in documented and not isinstance(getattr(mod, name), type(mod))]
    assert not missing, f"docs/api.rst does not list {missing}"


def test_gallery_examples_need_no_private_data():
    for example in sorted((ROOT / "examples").glob("*.py")):
        text = example.read_text()
        assert "STRUCTFS_DATA" not in text and "load_r8" not in text and "load_sms_spam" not in text, example.name
        assert example.name.startswith("plot_"), f"{example.name}: sphinx-gallery runs plot_*.py only"


def test_the_package_is_typed_for_its_users():
    """py.typed ships with the package, and the public names are visible to type checkers (the lazy
    imports of ``structfs/__init__.py`` are mirrored under TYPE_CHECKING)."""
    import typing

    import structfs
    from structfs import StructSVM

    assert (ROOT / "structfs" / "py.typed").exists()
    assert 'structfs = ["py.typed"]' in (ROOT / "pyproject.toml").read_text()
    init = (ROOT / "structfs" / "__init__.py").read_text()
    for name in structfs.__all__:
        assert name == "__version__" or name in init.split("if TYPE_CHECKING:")[1].split("\n\n")[0], name
    from numpy.typing import ArrayLike

    hints = typing.get_type_hints(StructSVM.__init__, localns={"ArrayLike": ArrayLike})
    assert hints["C"] is float and hints["budget"] == int | None


def test_every_public_function_and_method_has_a_docstring():
    import inspect

    import structfs
    import structfs.losses
    import structfs.metrics
    import structfs.mil
    import structfs.testing

    missing = []
    for module in (structfs, structfs.losses, structfs.metrics, structfs.mil, structfs.testing):
        for name in module.__all__:
            obj = getattr(module, name)
            if inspect.isclass(obj):
                missing += [f"{name}.{m}" for m, f in inspect.getmembers(obj, inspect.isfunction)
                            if not m.startswith("_") and not inspect.getdoc(getattr(obj, m))]
            elif inspect.isfunction(obj) and not inspect.getdoc(obj):
                missing.append(name)
    assert not missing
