"""Out-of-core data: a directory of CSR row blocks ("shards") on disk, read one shard at a time.

Feature generation touches all of X only through one product X' v per outer iteration; every cutting
plane needs just the columns of the selected groups, which are few and kept in memory. So a matrix
that is streamed from disk row block by row block serves the solver as well as one in memory, and
memory follows one shard, the selected columns and a few vectors of length n -- not the data.

Format (``manifest.json`` plus four ``.npy`` files per shard): each shard is a scipy CSR matrix's
``indptr`` (int64), ``indices`` and ``data`` and its rows' labels ``y``. The column indices are
*compact*: the columns that occur anywhere, renumbered 0..k-1 in order, with ``columns.npy`` mapping
them back to the original indices (absent when every column occurs). So a hashed space of 2^31
indices costs what is used, as in memory (:func:`structfs.solvers.data.occurring_columns`).

Why ``.npy``: it is NumPy's own versioned, self-describing binary format; ``np.load(mmap_mode="r")``
maps a shard without reading or copying it, and the mapping is dropped after the shard's product,
so resident memory holds one shard at a time. zarr or HDF5 would add a dependency and chunk
compression (CPU per pass) for no gain here: shards are written once and read sequentially.

The manifest records every file's size and SHA-256, and its own digest; each shard's files are verified against it the
first time a matrix reads them and again whenever their modification time changes (their sizes on
every pass), so a copy of the directory (``cp -r``,
``tar``, ``rsync``) stays valid while a shard that is missing, truncated or edited, or whose contents
are out of range, is a ValueError naming it. A directory is written under a temporary name beside its
destination and renamed into place when complete: a failed or interrupted write leaves nothing behind.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from typing import Any, NoReturn

import numpy as np
import scipy.sparse as sp

from ._files import DIR_MODE, crc32_of_file, file_digests, read_small_text, sha256_of_file
from ._jit import njit
from ._validation import MAX_ABS_VALUE, check_magnitude
from .solvers.data import RowBlocks, column_positions, compressed_dot, sorted_unique

__all__ = ["ShardWriter", "ShardedMatrix", "write_shards", "svmlight_to_shards", "is_shard_directory"]

FORMAT, VERSION = "structfs-shards", 2
MANIFEST = "manifest.json"
_PARTS = ("indptr", "indices", "data", "y")


def is_shard_directory(path: Any) -> bool:
    return os.path.isdir(path) and os.path.isfile(os.path.join(path, MANIFEST))


class ShardWriter:
    """Write a shard directory block by block: ``append(X_block, y_block)`` per row block, then
    ``close()`` (renumbers the columns compactly, writes the manifest) returns the ShardedMatrix.

    ``n_features``: the index space (default: the largest index seen + 1). The directory must not
    exist or be empty: an existing shard directory is never overwritten. Until ``close()`` the shards
    are written to a temporary directory beside ``path``; ``abort()`` removes it.
    """

    def __init__(self, path: Any, n_features: int | None = None, dtype: Any = np.float64) -> None:
        path = os.fspath(path)
        _check_destination(path)
        parent = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(parent):
            raise ValueError(f"cannot write {path!r}: no such directory {parent}.")
        self.destination = path
        self.path = tempfile.mkdtemp(prefix=f".{os.path.basename(os.path.abspath(path))}.", suffix=".tmp", dir=parent)
        os.chmod(self.path, DIR_MODE)              # mkdtemp's 0700 would outlive the rename
        self.n_features, self.dtype = n_features, np.dtype(dtype)
        self.shards: list[dict[str, Any]] = []
        self.columns = np.zeros(0, dtype=np.int64)
        self._pending: list[np.ndarray] = []
        self.labels: set[Any] = set()

    def _merge_columns(self) -> None:
        self.columns = sorted_unique(np.concatenate([self.columns] + self._pending))
        self._pending = []

    def append(self, X: Any, y: Any, source: str | None = None) -> None:
        """Add a row block; ``source`` (e.g. 'file.svm, bytes 0-1000') names it in errors."""
        name = f"shard-{len(self.shards):05d}"
        where = f"{name}" + (f" ({source})" if source else "")
        X = sp.csr_matrix(X, dtype=self.dtype)
        if not X.has_canonical_format:     # summing in place would rewrite arrays shared with the caller's X
            X = X.copy()
            X.sum_duplicates()
        y = np.asarray(y, dtype=np.float64).ravel()
        if y.shape[0] != X.shape[0]:
            raise ValueError(f"{where}: y has {y.shape[0]} labels for {X.shape[0]} rows of X.")
        if not (np.isfinite(X.data).all() and np.isfinite(y).all()):
            raise ValueError(f"{where}: X and y must be finite.")
        check_magnitude(X, f"{where}: X")
        labels = self.labels | set(np.unique(y).tolist())
        if len(labels) > 2:
            raise ValueError(f"{where} has labels {sorted(set(np.unique(y).tolist()))} where the earlier rows have "
                             f"{sorted(self.labels)}: a shard directory holds one binary problem (one label "
                             "convention, two values).")
        indices = X.indices.astype(np.int64)
        self._pending.append(sorted_unique(indices))
        if sum(p.shape[0] for p in self._pending) > max(self.columns.shape[0], 2 ** 20):
            self._merge_columns()          # merged in batches: one sort per batch, memory ~ the columns in use
        self.labels = labels
        for part, values in zip(_PARTS, (X.indptr.astype(np.int64), indices, X.data, y)):
            np.save(self._file(name, part), values)
        self.shards.append(dict(name=name, n_rows=int(X.shape[0]), nnz=int(X.nnz)))

    def _file(self, name: str, part: int | str) -> str:
        return os.path.join(self.path, f"{name}.{part}.npy")

    def abort(self) -> None:
        """Remove what this writer wrote (a failed conversion leaves no half directory behind)."""
        shutil.rmtree(self.path, ignore_errors=True)

    def close(self) -> ShardedMatrix:
        """Renumber every shard's columns compactly, write the manifest; the ShardedMatrix."""
        if not self.shards:
            raise ValueError("no rows were appended; a shard directory needs at least one row.")
        self._merge_columns()
        largest = int(self.columns[-1]) + 1 if self.columns.size else 0
        n_features = largest if self.n_features is None else int(self.n_features)
        if n_features < largest:
            raise ValueError(f"n_features={n_features} but a feature index {largest - 1} occurs.")
        compact_dtype = np.int32 if self.columns.size < 2 ** 31 else np.int64
        # a position table when the index space is no larger than the entries (binary searches took
        # 6.4 of 25 s writing 6e6 entries)
        position = None
        if n_features <= sum(s["nnz"] for s in self.shards):
            position = column_positions(self.columns, n_features, compact_dtype)
        for shard in self.shards:
            raw = np.load(self._file(shard["name"], "indices"))
            if position is not None:
                compact = position[raw]
            else:
                compact = np.searchsorted(self.columns, raw).astype(compact_dtype)
            np.save(self._file(shard["name"], "indices"), compact)
            del raw, compact
        identity = self.columns.size == n_features
        if not identity:
            np.save(os.path.join(self.path, "columns.npy"), self.columns)
        for shard in self.shards:
            shard["files"] = {part: _stamp(self._file(shard["name"], part)) for part in _PARTS}
        manifest = dict(format=FORMAT, version=VERSION, n_features=n_features, n_columns=int(self.columns.size),
                        n_samples=sum(s["n_rows"] for s in self.shards), dtype=self.dtype.name,
                        labels=sorted(self.labels), shards=self.shards,
                        columns=None if identity else _stamp(os.path.join(self.path, "columns.npy")))
        manifest["digest"] = _digest(manifest)
        with open(os.path.join(self.path, MANIFEST), "w") as fh:
            json.dump(manifest, fh, indent=1)
            fh.flush()
            os.fsync(fh.fileno())
        _check_destination(self.destination)       # another writer may have finished first
        try:
            os.replace(self.path, self.destination)    # a directory may replace an empty one (POSIX rename)
        except OSError as exc:
            raise ValueError(f"cannot write {self.destination!r}: {exc.strerror} (another writer?).") from None
        self.path = self.destination
        return ShardedMatrix(self.path)


def _check_destination(path: Any) -> None:
    if os.path.exists(path) and (not os.path.isdir(path) or os.listdir(path)):
        raise ValueError(f"path {path!r} exists and is not an empty directory; shards are written to a new one.")


def _stamp(path: str) -> dict[str, Any]:
    return dict(size=os.path.getsize(path), sha256=sha256_of_file(path))


def write_shards(X: Any, y: Any, path: Any, rows_per_shard: int = 100000) -> ShardedMatrix:
    """An in-memory (X, y) as a shard directory of ``rows_per_shard`` rows each; the ShardedMatrix."""
    if isinstance(rows_per_shard, (bool, np.bool_)) or not isinstance(rows_per_shard, (int, np.integer)) \
            or rows_per_shard < 1:
        raise ValueError(f"rows_per_shard must be an integer >= 1, got {rows_per_shard!r}.")
    X = sp.csr_matrix(X)
    writer = ShardWriter(path, n_features=X.shape[1], dtype=X.dtype if X.dtype == np.float32 else np.float64)
    try:
        for start in range(0, X.shape[0], rows_per_shard):
            writer.append(X[start:start + rows_per_shard], np.asarray(y)[start:start + rows_per_shard])
        return writer.close()
    except BaseException:
        writer.abort()
        raise


def svmlight_to_shards(sources: Any, path: Any, shard_bytes: int = 256 * 2 ** 20,
                       dtype: Any = np.float64) -> ShardedMatrix:
    """SVMlight/LIBSVM file(s) (1-based indices, as svm_perf) to a shard directory, each file read
    ``shard_bytes`` of whole lines at a time, so a file larger than memory converts in pieces (a
    line longer than that is a piece of its own). Returns the ShardedMatrix."""
    from .svmlight import svmlight_chunks

    if isinstance(shard_bytes, (bool, np.bool_)) or not isinstance(shard_bytes, (int, np.integer)) or shard_bytes < 1:
        raise ValueError(f"shard_bytes must be an integer >= 1, got {shard_bytes!r}.")
    sources = [sources] if isinstance(sources, (str, os.PathLike)) else list(sources)
    for source in sources:
        if not os.path.isfile(source):
            raise ValueError(f"no such file: {source}")
    writer = ShardWriter(path, dtype=dtype)
    try:
        for source in sources:
            for X, y, where in svmlight_chunks(source, int(shard_bytes), dtype):
                writer.append(X, y, source=where)
        return writer.close()
    except BaseException:
        writer.abort()
        raise


class ShardedMatrix(RowBlocks):
    """A shard directory as a read-only (n_samples, n_features) matrix streamed from disk.

    It provides what feature generation needs (:mod:`structfs.solvers.data`): ``rmatvec`` (X' v over
    every column, one pass), ``take_columns`` (a few columns in memory, one pass), ``matvec`` (X w,
    one pass), the occurring columns and the compact view the solver works on. ``y`` holds the labels
    stored with the rows; ``passes`` counts the passes over the data. ``StructSVM.fit`` accepts it
    (with a budget: the unbudgeted problem needs all of X at once).
    """

    def __init__(self, path: Any, _compact: bool = False, _passes: list[int] | None = None) -> None:
        self.path = os.fspath(path)
        manifest_path = os.path.join(self.path, MANIFEST)
        if not os.path.exists(manifest_path):
            raise ValueError(f"{self.path} is not a shard directory: no {MANIFEST}.")
        try:
            meta = json.loads(read_small_text(manifest_path, "shard manifest"))
        except RecursionError:
            raise ValueError(f"{manifest_path} is unreadable: JSON nested too deeply.") from None
        except ValueError as exc:
            raise ValueError(f"{manifest_path} is unreadable: {exc}") from None
        self.meta = _checked_manifest(meta, manifest_path)
        self.n_columns = self.meta["n_columns"]
        self.compact = _compact
        n, m = self.meta["n_samples"], self.meta["n_features"]
        self.shape = (n, self.n_columns if _compact else m)
        self.dtype = np.dtype(self.meta["dtype"])
        self._passes = [0] if _passes is None else _passes     # shared with the compact view
        self._verified: dict[str, tuple[int, int]] = {}   # file -> (modification time, CRC-32) when it matched
        self._valid: set[int] = set()    # shards whose CSR arrays were checked
        self._compact_view: ShardedMatrix | None = None
        starts = np.cumsum([0] + [s["n_rows"] for s in self.meta["shards"]])
        self._rows = list(zip(starts[:-1], starts[1:]))
        for shard in self.meta["shards"]:          # at open, the sizes (cheap); contents on first read
            for part in _PARTS:
                self._check_size(shard["name"], part, shard["files"][part])

    @property
    def passes(self) -> int:
        """Passes over the data so far (by this matrix and its compact view)."""
        return self._passes[0]

    @property
    def nnz(self) -> int:
        return sum(s["nnz"] for s in self.meta["shards"])

    @property
    def n_shards(self) -> int:
        return len(self.meta["shards"])

    def _file(self, name: str, part: int | str) -> str:
        return os.path.join(self.path, f"{name}.{part}.npy")

    def _check_stamp(self, name: str, part: int | str, stamp: dict[str, Any]) -> None:
        """The file's size on every read; its SHA-256 on the first read by this matrix (and after its
        modification time changed), and on every later read its CRC-32 against the one of the bytes
        that matched: an edit between two passes that keeps the size and the time is found too, at a
        third of a SHA-256's cost."""
        path, mtime = self._check_size(name, part, stamp)
        known = self._verified.get(path)
        if known is None or known[0] != mtime:       # first read, or written since it was verified
            sha256, crc = file_digests(path)
            if sha256 != stamp["sha256"]:
                raise ValueError(f"shard {name!r}: the contents of {os.path.basename(path)} differ from those "
                                 "written (its checksum); re-create the shard directory.")
            self._verified[path] = (mtime, crc)
        elif crc32_of_file(path) != known[1]:
            raise ValueError(f"shard {name!r}: {os.path.basename(path)} changed since the previous pass of this "
                             "fit (its contents differ from those verified); re-create the shard directory.")

    def _check_size(self, name: str, part: int | str, stamp: dict[str, Any]) -> tuple[str, int]:
        """(path, modification time) of a file whose size is the manifest's."""
        path = self._file(name, part) if part != "columns" else os.path.join(self.path, "columns.npy")
        try:
            st = os.stat(path)
        except OSError:
            raise ValueError(f"shard {name!r}: {os.path.basename(path)} is missing from {self.path}.") from None
        if st.st_size != stamp["size"]:
            raise ValueError(f"shard {name!r}: {os.path.basename(path)} has {st.st_size} bytes, the manifest "
                             f"{stamp['size']}: truncated or rewritten since it was written.")
        return path, st.st_mtime_ns

    def shard_arrays(self, i: int) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray]:
        """(row range, indptr, indices, data) of shard i, memory-mapped, checked."""
        shard = self.meta["shards"][i]
        name = shard["name"]
        arrays = []
        for part in _PARTS[:3]:
            self._check_stamp(name, part, shard["files"][part])
            try:
                arrays.append(np.asarray(np.load(self._file(name, part), mmap_mode="r", allow_pickle=False)))
            except (OSError, ValueError) as exc:
                raise ValueError(f"shard {name!r}: {part} is unreadable: {exc}") from None
        indptr, indices, data = arrays
        if i not in self._valid:
            ok = (indptr.ndim == indices.ndim == data.ndim == 1 and indptr.shape[0] == shard["n_rows"] + 1
                  and indices.shape[0] == data.shape[0] == shard["nnz"] and indptr.dtype == np.int64
                  and indices.dtype.kind == "i" and data.dtype == self.dtype
                  and _valid_csr(indptr, indices, data, self.n_columns, MAX_ABS_VALUE))
            if not ok:
                raise ValueError(f"shard {name!r}: its CSR arrays are inconsistent (row pointers, column index "
                                 f"outside 0..{self.n_columns - 1}, or a value that is not finite or beyond "
                                 f"{MAX_ABS_VALUE:g}).")
            self._valid.add(i)
        return self._rows[i], indptr, indices, data

    # -- what the solver needs -----------------------------------------------------------------
    def occurring_columns(self) -> np.ndarray | None:
        """Sorted original indices of the columns that occur, or None when all do."""
        if self.meta["columns"] is None or self.compact:
            return None
        self._check_stamp("columns", "columns", self.meta["columns"])
        return np.load(os.path.join(self.path, "columns.npy"), allow_pickle=False).astype(np.int64)

    def compacted(self) -> ShardedMatrix:
        """The same data in the compact column numbering (what the solver works on); one view per
        matrix, so its shards are checked once however often it is asked for (every prediction)."""
        if self.compact or self.meta["columns"] is None:
            return self
        if self._compact_view is None:
            view = self._compact_view = ShardedMatrix(self.path, True, self._passes)
            view._verified = self._verified      # the same files: verified once
            return view
        return self._compact_view

    def _require_compact(self) -> None:
        if not self.compact and self.meta["columns"] is not None:
            raise ValueError("this product works on the compact columns; use compacted() (the solver does).")

    def rmatvec(self, v: np.ndarray) -> np.ndarray:
        """X' v, one pass over the shards."""
        self._require_compact()
        v = np.ascontiguousarray(v, dtype=np.float64)
        out = np.zeros(self.n_columns)
        for i in range(self.n_shards):
            (r0, r1), indptr, indices, data = self.shard_arrays(i)
            _rmatvec_add(indptr, indices, data, v[r0:r1], out)
        self._passes[0] += 1
        return out

    def matvec(self, w: np.ndarray) -> np.ndarray:
        """X w (w over the compact columns), one pass."""
        self._require_compact()
        w = np.ascontiguousarray(w, dtype=np.float64)
        out = np.empty(self.shape[0])
        for i in range(self.n_shards):
            (r0, r1), indptr, indices, data = self.shard_arrays(i)
            out[r0:r1] = compressed_dot(indptr, indices, data, w)
        self._passes[0] += 1
        return out

    def take_columns(self, cols: np.ndarray) -> Any:
        """Columns ``cols`` (compact, sorted) as an in-memory CSC matrix (n x len(cols)), one pass."""
        self._require_compact()
        cols = np.asarray(cols, dtype=np.int64)
        position = np.full(self.n_columns, -1, dtype=np.int32 if cols.shape[0] < 2 ** 31 else np.int64)
        position[cols] = np.arange(cols.shape[0])
        rows, where, values = [], [], []
        for i in range(self.n_shards):
            (r0, r1), indptr, indices, data = self.shard_arrays(i)
            r, c, v = _gather(indptr, indices, data, position)
            rows.append(r + r0)
            where.append(c)
            values.append(v)
        self._passes[0] += 1
        return sp.csc_matrix((np.concatenate(values), (np.concatenate(rows), np.concatenate(where))),
                             shape=(self.shape[0], cols.shape[0]))

    @property
    def y(self) -> np.ndarray:
        """The labels stored with the rows (float64)."""
        parts = []
        for shard in self.meta["shards"]:
            self._check_stamp(shard["name"], "y", shard["files"]["y"])
            y = np.load(self._file(shard["name"], "y"), allow_pickle=False)
            if y.shape != (shard["n_rows"],) or not np.isfinite(y).all():
                raise ValueError(f"shard {shard['name']!r}: its labels are inconsistent with the manifest.")
            parts.append(y)
        return np.concatenate(parts)

    def __repr__(self) -> str:
        return (f"ShardedMatrix({self.path!r}: {self.shape[0]} x {self.shape[1]}, {self.nnz} nonzeros in "
                f"{self.n_shards} shards)")


def _checked_manifest(meta: Any, where: str) -> dict[str, Any]:
    """The manifest if its fields have the right types and agree with each other; ValueError naming
    the field otherwise."""
    def bad(field: str, why: str) -> NoReturn:
        raise ValueError(f"{where}: {field} {why}.")

    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        bad("format", f"is not {FORMAT!r}")
    if isinstance(meta.get("version"), bool) or meta.get("version") != VERSION:
        hint = " (an older directory, stamped by modification time: re-create it)" if meta.get("version") == 1 else ""
        bad("version", f"is {meta.get('version')!r}; this structfs reads version {VERSION}{hint}")
    for field in ("n_features", "n_columns", "n_samples"):
        if not _count(meta.get(field)):
            bad(field, "must be a non-negative integer below 2^63")
    if meta["n_columns"] > meta["n_features"]:
        bad("n_columns", "exceeds n_features")
    if meta.get("dtype") not in ("float64", "float32"):
        bad("dtype", "must be float64 or float32")
    shards = meta.get("shards")
    if not isinstance(shards, list) or not shards:
        bad("shards", "must be a non-empty list")
    names = set()
    for s in shards:
        if not isinstance(s, dict) or not isinstance(s.get("name"), str) or s["name"] in names \
                or os.path.basename(s["name"]) != s["name"]:
            bad("shards", f"holds an invalid or repeated entry {s!r}")
        names.add(s["name"])
        for field in ("n_rows", "nnz"):
            if not _count(s.get(field)):
                bad(f"shard {s['name']!r} {field}", "must be a non-negative integer below 2^63")
        if not isinstance(s.get("files"), dict) or set(s["files"]) != set(_PARTS) \
                or not all(_valid_stamp(stamp) for stamp in s["files"].values()):
            bad(f"shard {s['name']!r} files", f"must give the size and sha256 of {', '.join(_PARTS)}")
    if sum(s["n_rows"] for s in shards) != meta["n_samples"]:
        bad("n_samples", "is not the sum of the shards' rows")
    labels = meta.get("labels")
    if not isinstance(labels, list) or len(labels) > 2:
        bad("labels", f"are {labels!r}: a shard directory holds one binary problem (two label values at most)")
    if (meta.get("columns") is None) != (meta["n_columns"] == meta["n_features"]):
        bad("columns", "disagrees with n_columns and n_features")
    if meta["columns"] is not None and not _valid_stamp(meta["columns"]):
        bad("columns", "must give the size and sha256 of columns.npy")
    if meta.get("digest") != _digest(meta):
        bad("digest", "does not match the manifest's contents: it was edited after the directory was written")
    return meta


def _digest(meta: dict[str, Any]) -> str:
    """SHA-256 of the manifest's other fields (canonical JSON): an edited manifest is refused."""
    fields = {k: v for k, v in meta.items() if k != "digest"}
    return hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2 ** 63


def _valid_stamp(stamp: Any) -> bool:
    return (isinstance(stamp, dict) and _count(stamp.get("size")) and isinstance(stamp.get("sha256"), str)
            and len(stamp["sha256"]) == 64)


@njit(cache=True)
def _valid_csr(indptr: np.ndarray, indices: np.ndarray, data: np.ndarray, n_columns: int, max_abs: float) -> bool:
    if indptr[0] != 0 or indptr[-1] != indices.shape[0]:
        return False
    for i in range(indptr.shape[0] - 1):
        if indptr[i + 1] < indptr[i]:
            return False
    for p in range(indices.shape[0]):
        if indices[p] < 0 or indices[p] >= n_columns or not abs(data[p]) <= max_abs:
            return False
    return True


@njit(cache=True)
def _rmatvec_add(indptr: np.ndarray, indices: np.ndarray, data: np.ndarray, v: np.ndarray, out: np.ndarray) -> None:
    """out += X_block' v: the rows' entries scattered in row order (the same sums, in the same order,
    as the in-memory column loop, so the products agree exactly)."""
    for i in range(indptr.shape[0] - 1):
        vi = v[i]
        if vi != 0.0:
            for p in range(indptr[i], indptr[i + 1]):
                out[indices[p]] += data[p] * vi


@njit(cache=True)
def _gather(indptr: np.ndarray, indices: np.ndarray, data: np.ndarray, position: np.ndarray) -> tuple[np.ndarray,
            np.ndarray, np.ndarray]:
    """(row, new column, value) of the entries whose column has a position >= 0."""
    count = 0
    for p in range(indices.shape[0]):
        if position[indices[p]] >= 0:
            count += 1
    rows = np.empty(count, dtype=np.int64)
    cols = np.empty(count, dtype=np.int64)
    vals = np.empty(count, dtype=np.float64)
    k = 0
    for i in range(indptr.shape[0] - 1):
        for p in range(indptr[i], indptr[i + 1]):
            c = position[indices[p]]
            if c >= 0:
                rows[k], cols[k], vals[k] = i, c, data[p]
                k += 1
    return rows, cols, vals
