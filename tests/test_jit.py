"""The notice of a first compilation: said once, on stderr, for structfs's own kernels only."""
from types import SimpleNamespace

import numba

from structfs import _jit


def test_a_structfs_compilation_is_announced_once(capsys, monkeypatch):
    monkeypatch.setattr(_jit._CompileNotice, "announced", False)
    notice = _jit._CompileNotice()
    other = numba.njit(lambda x: x)                       # not structfs's: no notice
    notice.on_start(SimpleNamespace(data={"dispatcher": other}))
    assert capsys.readouterr().err == ""
    ours = SimpleNamespace(data={"dispatcher": _jit.sort_in_place})
    notice.on_start(ours)
    notice.on_start(ours)
    err = capsys.readouterr().err
    assert err.count("compiling its numba kernels") == 1 and "structfs compile" in err


def test_an_object_mode_block_is_not_news(capsys, monkeypatch):
    monkeypatch.setattr(_jit._CompileNotice, "announced", False)
    _jit._CompileNotice().on_start(SimpleNamespace(data={"dispatcher": object()}))
    assert capsys.readouterr().err == ""
