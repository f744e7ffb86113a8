"""Blocks of a bit-row store kept on disk (``BitRows.spill``).

A spilled block is a raw file in a private directory (0700, files 0600, made
with O_EXCL), read back for each use and removed with its last reference or,
after a crash, by :func:`remove_stale_spill_directories` on the next run. The
block's in-memory kind rebuilds it (``kind.from_arrays``), so this module
needs nothing of the store above it.
"""

from __future__ import annotations

import hashlib
import itertools
import os
import re
import shutil
import socket
import stat
import tempfile
import weakref

import numpy as np

try:  # optional: compiled products (several times faster per EM step)
    import numba
except ImportError:  # pragma: no cover - numba is optional
    numba = None  # type: ignore[assignment]


_SPILL_PREFIX = "sklearn_uldp-reports-"
# <prefix><host key>-<pid>-<random suffix of mkdtemp>
_SPILL_NAME = re.compile(re.escape(_SPILL_PREFIX) + r"([0-9a-f]{8})-([0-9]+)-")


def _host_key():
    """A short stable key of this machine's name (directories may be shared)."""
    return hashlib.sha256(socket.gethostname().encode("utf-8")).hexdigest()[:8]


def _process_exists(pid):
    """Whether a process ``pid`` exists on this machine (True when unsure)."""
    if pid == os.getpid():
        return True
    if pid <= 0:
        return True
    try:
        os.kill(pid, 0)  # signal 0: an existence and permission check only
    except ProcessLookupError:
        return False
    except OSError:  # e.g. PermissionError: it exists, as another user
        return True
    return True


def remove_stale_spill_directories(parent=None):
    """Remove spill directories left by processes of this user that died.

    Only directories named by :class:`_SpillDirectory` for this host, owned
    by this user, real directories (not symbolic links) and whose process no
    longer exists are removed; directories of live processes, of other
    hosts sharing the file system, and of unknown format are kept.

    Parameters
    ----------
    parent : str or path-like, default=None
        The directory to clean (the system's temporary directory by default).

    Returns
    -------
    removed : list of str
        The directories removed.
    """
    if os.name == "nt":  # os.kill(pid, 0) terminates processes on Windows
        return []
    parent = tempfile.gettempdir() if parent is None else os.fspath(parent)
    host, uid = _host_key(), os.getuid()
    removed = []
    try:
        entries = list(os.scandir(parent))
    except OSError:
        return removed
    for entry in entries:
        match = _SPILL_NAME.match(entry.name)
        if match is None or match.group(1) != host:
            continue
        try:
            info = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != uid:
            continue
        if _process_exists(int(match.group(2))):
            continue
        shutil.rmtree(entry.path, ignore_errors=True)
        removed.append(entry.path)
    return removed


class _SpillDirectory:
    """A private directory of block files, removed with the last block in it.

    Every spilled block holds a reference to its directory, so the directory
    lives exactly as long as some store still reads from it (and is removed
    at interpreter exit at the latest). Its name holds the host and process
    id, so that the next spill removes it if this process is killed.
    """

    def __init__(self, parent=None):
        self.parent = None if parent is None else os.fspath(parent)
        remove_stale_spill_directories(self.parent)
        # mkdtemp creates the directory 0700.
        self.path = tempfile.mkdtemp(
            prefix=f"{_SPILL_PREFIX}{_host_key()}-{os.getpid()}-", dir=self.parent
        )
        self._names = itertools.count()
        weakref.finalize(self, shutil.rmtree, self.path, ignore_errors=True)

    def new_file(self):
        return os.path.join(self.path, f"block-{next(self._names)}.bin")

    def __reduce__(self):
        # An unpickled store spills again, into a fresh directory under the
        # same parent when it exists there (else the system's temporary one).
        parent = self.parent if self.parent and os.path.isdir(self.parent) else None
        return _SpillDirectory, (parent,)


class _SpilledBlock:
    """A full block kept in a file and read back for each use."""

    __slots__ = (
        "directory",
        "path",
        "kind",
        "n_rows",
        "n_cols",
        "nbytes",
        "nnz",
        "layout",
        "__weakref__",
    )

    def __init__(self, block, directory):
        self.directory = directory
        self.path = directory.new_file()
        self.kind = type(block)
        self.n_rows, self.n_cols = block.n_rows, block.n_cols
        self.nbytes, self.nnz = block.nbytes, block.nnz
        arrays = block.arrays()
        # (dtype, shape) of each array, in file order: the file is raw data.
        self.layout = tuple((a.dtype, a.shape) for a in arrays)
        # 0600 whatever the umask; O_EXCL refuses a file planted in advance.
        fd = os.open(
            self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o600
        )
        with os.fdopen(fd, "wb") as file:
            for array in arrays:
                np.ascontiguousarray(array).tofile(file)
        weakref.finalize(self, _remove_file, self.path)

    def load(self):
        """The block, read into memory (owned arrays, no memory map)."""
        sizes = [int(np.prod(shape)) for _, shape in self.layout]
        try:
            with open(self.path, "rb") as file:
                arrays = [
                    np.fromfile(file, dtype=dtype, count=size)
                    for (dtype, _), size in zip(self.layout, sizes, strict=True)
                ]
        except FileNotFoundError:
            arrays = []
        if [a.size for a in arrays] != sizes:
            raise OSError(
                f"The reports kept on disk in {self.path} are missing or "
                "truncated (was the temporary directory cleaned while they "
                "were in use?). Fit the estimator again, or keep the reports "
                "in a directory of your own: report_store=<directory>."
            )
        arrays = [a.reshape(shape) for a, (_, shape) in zip(arrays, self.layout, strict=True)]
        return self.kind.from_arrays(arrays, self.n_cols)

    def row_sizes(self, compiled=True):
        return self.load().row_sizes(compiled)

    def em_terms(self, A, b, shared, weights=None, out=None, compiled=True):
        return self.load().em_terms(A, b, shared, weights, out, compiled)

    def row_sums(self, A, b, shared, compiled=True):
        return self.load().row_sums(A, b, shared, compiled)

    def restrict(self, new_index, columns, scratch=None, compiled=True):
        block = self.load().restrict(new_index, columns, scratch, compiled)
        return _SpilledBlock(block, self.directory)

    def __reduce__(self):
        # Pickles carry the data, and the copy spills again when loaded.
        return _SpilledBlock, (self.load(), self.directory)


def _remove_file(path):
    try:
        os.remove(path)
    except OSError:  # already removed with its directory
        pass
