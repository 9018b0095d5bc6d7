"""Safe file handling: every file the package writes replaces its destination atomically, and
every file it reads is checked to be a regular file of bounded size before it is read.

A write goes to a temporary file in the destination's directory, is flushed to disk (fsync) and
then renamed over the destination (``os.replace``, atomic on POSIX and Windows): a full disk, a
size limit or an interrupt leaves the previous file intact and no partial file behind.
"""
from __future__ import annotations

import contextlib
import hashlib
import os
import stat
import tempfile
import zlib
from collections.abc import Iterator
from typing import IO, Any

# A model file or a manifest is a few MB at most; a larger "file" is not one of ours (or is a device).
MAX_METADATA_BYTES = 1 << 30
# The modes open() and mkdir() would give under the process's umask, read once at import (reading the
# umask means setting it, briefly, for the whole process).
_UMASK = os.umask(0)
os.umask(_UMASK)
FILE_MODE, DIR_MODE = 0o666 & ~_UMASK, 0o777 & ~_UMASK


@contextlib.contextmanager
def atomic_write(path: str | os.PathLike[str], mode: str = "w", encoding: str | None = "utf-8") -> Iterator[IO[Any]]:
    """Open a temporary file beside ``path`` for writing; on success it replaces ``path``.

    Only regular files are replaced, as GNU ``cp`` and ``sort -o`` treat their output: a symbolic link is
    followed (its target is replaced, the link kept), and a device, a FIFO or a socket is written
    through, in place (renaming over /dev/null would replace the device node)."""
    path = os.path.realpath(os.fspath(path))
    try:
        mode_bits = os.stat(path).st_mode
        special = not stat.S_ISREG(mode_bits) and not stat.S_ISDIR(mode_bits)
    except FileNotFoundError:
        special = False
    if special:
        with open(path, mode, encoding=None if "b" in mode else encoding) as fh:
            yield fh
        return
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp", dir=folder)
    try:
        os.chmod(tmp, FILE_MODE)               # mkstemp's 0600 would outlive the rename: a file as open() makes it
        with os.fdopen(fd, mode, encoding=None if "b" in mode else encoding) as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(tmp)
        raise


def read_small_text(path: str | os.PathLike[str], what: str) -> str:
    """The text of a regular file of at most :data:`MAX_METADATA_BYTES`; ValueError naming ``path``
    for anything else (a directory, a FIFO, a device such as /dev/zero, a huge file, not UTF-8)."""
    path = os.fspath(path)
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise ValueError(f"{path}: no such file.") from None
    if not stat.S_ISREG(st.st_mode):
        raise ValueError(f"{path}: not a regular file, so not a {what}.")
    if st.st_size > MAX_METADATA_BYTES:
        raise ValueError(f"{path}: {st.st_size} bytes is too large for a {what}.")
    with open(path, "rb") as fh:
        raw = fh.read(MAX_METADATA_BYTES + 1)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError(f"{path}: not a {what} (not UTF-8 text).") from None


def _blocks(path: str | os.PathLike[str], chunk: int = 1 << 22) -> Iterator[bytes]:
    """A file's bytes, in chunks."""
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            yield block


def sha256_of_file(path: str | os.PathLike[str]) -> str:
    """Hex SHA-256 of a file's bytes."""
    digest = hashlib.sha256()
    for block in _blocks(path):
        digest.update(block)
    return digest.hexdigest()


def file_digests(path: str | os.PathLike[str]) -> tuple[str, int]:
    """(hex SHA-256, CRC-32) of a file's bytes, from one read."""
    digest, crc = hashlib.sha256(), 0
    for block in _blocks(path):
        digest.update(block)
        crc = zlib.crc32(block, crc)
    return digest.hexdigest(), crc


def crc32_of_file(path: str | os.PathLike[str]) -> int:
    """CRC-32 of a file's bytes (about 3 GB/s, where SHA-256 reaches 1.2)."""
    crc = 0
    for block in _blocks(path):
        crc = zlib.crc32(block, crc)
    return crc
