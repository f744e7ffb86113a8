"""Files of the command line: chunked readers, safe writers, spec binding.

The rules that keep the command line from destroying or losing data live
here, once:

* an output is never an input (compared with :func:`os.path.samefile`, so
  symbolic and hard links count), nor another output;
* an existing output is replaced only with ``--overwrite``, also when
  several runs race for it: exactly one of them succeeds;
* every output is written to a part file next to it, and a command's
  outputs (reports and spec) are published together once complete
  (:class:`OutputFiles`), so a failed or killed run leaves no partial file,
  no half of a pair and any existing file intact;
* every line of a CSV file is a row (a blank line is a row of missing
  values), text values are written quoted and read back exactly;
* an output's format comes from its extension, and an unknown extension is
  refused rather than written as CSV;
* Parquet is read and written one row group per chunk, so memory stays
  bounded by ``--chunksize`` rows.
"""

import contextlib
import csv
import hashlib
import json
import os
import re
import stat
import tempfile
import time

import pandas as pd

__all__ = [
    "TABLE_FORMATS",
    "table_format",
    "check_table_output",
    "check_input_format",
    "check_outputs",
    "read_chunks",
    "integer_reports",
    "TableWriter",
    "OutputFiles",
    "recover_outputs",
    "stale_parts",
    "pending_publish",
    "atomic_path",
    "file_digest",
    "canonical_digest",
    "parquet_metadata",
    "default_spec_path",
]

#: Key of the spec's digest in the key-value metadata of Parquet reports.
PARQUET_SPEC_KEY = "sklearn_uldp.spec_sha256"

#: Extensions of the tables the command line reads and writes.
TABLE_FORMATS = {".csv": "csv", ".parquet": "parquet", ".pq": "parquet"}


def table_format(path, what="output"):
    """Return ``"csv"`` or ``"parquet"`` from a file name's extension.

    Parameters
    ----------
    path : str or path-like
    what : str
        Named in the error message.

    Returns
    -------
    format : {"csv", "parquet"}

    Examples
    --------
    >>> from sklearn_uldp.cli._io import table_format
    >>> table_format("reports.PARQUET")
    'parquet'
    >>> table_format("reports.xlsx")
    Traceback (most recent call last):
    ...
    ValueError: Cannot write the output 'reports.xlsx' ...
    """
    ext = os.path.splitext(str(path))[1].lower()
    if ext not in TABLE_FORMATS:
        raise ValueError(
            f"Cannot write the {what} {str(path)!r} with extension {ext or '(none)'!r}: "
            f"give a file name ending in {', '.join(TABLE_FORMATS)}."
        )
    return TABLE_FORMATS[ext]


def check_input_format(path):
    """``"parquet"`` for a ``.parquet``/``.pq`` input, else ``"csv"``."""
    ext = os.path.splitext(os.fspath(path))[1].lower()
    return "parquet" if ext in (".parquet", ".pq") else "csv"


def check_table_output(path, what="output"):
    """:func:`table_format`, and pyarrow must be importable for Parquet."""
    fmt = table_format(path, what)
    if fmt == "parquet":
        _need_pyarrow(path, "Writing")
    return fmt


def _same_file(a, b):
    """True if ``a`` and ``b`` are (or would be) the same file."""
    if os.path.exists(a) and os.path.exists(b):
        return os.path.samefile(a, b)
    return os.path.realpath(a) == os.path.realpath(b)


def check_outputs(outputs, inputs, overwrite):
    """Refuse outputs that would destroy an input, each other or a file.

    Parameters
    ----------
    outputs : dict of {str: path or None}
        Description (e.g. ``"reports file"``) -> path; None entries are skipped.
    inputs : dict of {str: path or None}
        Files the command reads; no output may be one of them, even with
        ``overwrite``.
    overwrite : bool
        Whether an existing output may be replaced.

    Raises
    ------
    ValueError
        Naming the conflict and what to do.
    """
    outputs = {k: os.fspath(v) for k, v in outputs.items() if v is not None}
    inputs = {k: os.fspath(v) for k, v in inputs.items() if v is not None}
    seen = {}
    for what, path in outputs.items():
        if path == "":
            raise ValueError(f"The {what} name is empty: give a file name.")
        if path.endswith(("/", os.sep)) or os.path.isdir(path):
            raise ValueError(
                f"The {what} {path!r} is a directory: give a file name, e.g. "
                f"{os.path.join(path, 'reports.csv')!r}."
            )
        directory = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(directory):
            raise FileNotFoundError(
                f"The folder {directory!r} of the {what} does not exist; create it first."
            )
        for in_what, in_path in inputs.items():
            if os.path.exists(path) and _same_file(path, in_path):
                raise ValueError(
                    f"The {what} {path!r} is the {in_what} {in_path!r} (same file): "
                    "writing it would destroy the input. Choose another output name."
                )
        for other_what, other in seen.items():
            if _same_file(path, other):
                raise ValueError(
                    f"The {what} and the {other_what} are the same file {path!r}; "
                    "give them different names."
                )
        seen[what] = path
        if os.path.lexists(path) and not overwrite:
            raise ValueError(
                f"The {what} {path!r} already exists; pass --overwrite to replace "
                "it, or choose another name."
            )


# ------------------------------------------------------------ publishing
# Every output is written to a part file next to it (".NAME.<pid>-<random>.part")
# and published when complete. A command's outputs (reports and spec, a
# distribution and its plot) are published together:
#
# 1. under an exclusive lock per output name (``flock`` on ".NAME.lock", which
#    the kernel releases when the process dies), taken in sorted order;
# 2. a journal ".NAME.commit" listing the moves is written (fsynced) first;
# 3. each part is moved into place: ``os.link`` without --overwrite (it fails
#    if the name exists, so two runs can never both succeed), ``os.replace``
#    with it;
# 4. the journal is removed.
#
# A run killed between 2 and 4 leaves a journal whose parts are complete:
# the next command that takes the lock of one of its names (privatize or
# estimate on the same output) finishes the moves, so a pair is never left
# half published. A run killed while writing leaves its part file, held by
# nobody: the next run on that output removes it (only a file named as this
# module names parts and owned by the user: see stale_parts). A part file
# whose lock is held belongs to a live run and is never touched. SIGTERM and
# SIGINT stop a command by an exception (cli._messages), so its part files are
# removed on the way out; only SIGKILL leaves them, for the next run.

_LOCK_WAIT_SECONDS = 60.0


def _lock_file(fd, blocking):
    """Lock an open file exclusively; False if ``blocking`` is False and it is held."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        import msvcrt

        mode = msvcrt.LK_LOCK if blocking else msvcrt.LK_NBLCK
        try:
            msvcrt.locking(fd, mode, 1)
        except OSError:
            return False
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
    except BlockingIOError:
        return False
    return True


def _same_inode(fd, path):
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return False
    here = os.fstat(fd)
    return (st.st_ino, st.st_dev) == (here.st_ino, here.st_dev)


def _hidden(path, suffix):
    path = os.path.abspath(os.fspath(path))
    return os.path.join(os.path.dirname(path), f".{os.path.basename(path)}.{suffix}")


class _NameLocks:
    """Exclusive locks on output names, held together (sorted: no deadlock)."""

    def __init__(self, paths):
        self.paths = sorted({_hidden(p, "lock") for p in paths})
        self._held = []

    def __enter__(self):
        deadline = time.monotonic() + _LOCK_WAIT_SECONDS
        try:
            for path in self.paths:
                self._held.append((path, self._acquire(path, deadline)))
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    @staticmethod
    def _acquire(path, deadline):
        while True:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
            if _lock_file(fd, blocking=False):
                # The lock file may have been removed (and recreated) by the
                # holder we waited for: only the file at ``path`` counts.
                if _same_inode(fd, path):
                    return fd
            os.close(fd)
            if time.monotonic() > deadline:
                raise ValueError(
                    f"Another sklearn-uldp run holds the lock {path!r} for more "
                    f"than {_LOCK_WAIT_SECONDS:.0f} s; wait for it to finish."
                )
            time.sleep(0.01)

    def __exit__(self, exc_type, exc, tb):
        while self._held:
            path, fd = self._held.pop()
            with contextlib.suppress(OSError):
                os.unlink(path)  # while locked: a waiter sees it is gone
            os.close(fd)


def _journal_moves(journal):
    """The (part, target) moves of a journal, [] if there is none."""
    try:
        with open(journal, encoding="utf-8") as fh:
            entry = json.load(fh)
        return [(str(part), str(target)) for part, target in entry["moves"]]
    except (OSError, ValueError, KeyError, TypeError):
        return []


def _finish_journal(journal):
    """Complete the moves of a journal whose run died (we hold the name locks)."""
    try:
        with open(journal, encoding="utf-8") as fh:
            entry = json.load(fh)
        moves, overwrite = entry["moves"], bool(entry["overwrite"])
    except (OSError, ValueError, KeyError, TypeError):
        # Unreadable: written only partly, so no move had started.
        with contextlib.suppress(OSError):
            os.unlink(journal)
        return
    for part, target in moves:
        if not os.path.exists(part):
            continue  # already moved
        if overwrite:
            os.replace(part, target)
        elif os.path.lexists(target):
            if _same_file(part, target):
                os.unlink(part)
            # else: another file took the name; the part stays for cleanup
        else:
            os.link(part, target)
            os.unlink(part)
    os.unlink(journal)


def pending_publish(path):
    """Whether a run was killed while publishing ``path`` (a journal is left)."""
    return os.path.exists(_hidden(path, "commit"))


def recover_outputs(paths):
    """Finish publishing interrupted by a killed run; remove its stale part files.

    Parameters
    ----------
    paths : list of path-like
        Output names. Part files of a run that is still alive (whose lock
        is held) are never touched.
    """
    paths = [os.path.abspath(os.fspath(p)) for p in paths]
    names = set(paths)
    for path in paths:  # a journal names the other outputs of its run: lock them too
        names.update(target for _, target in _journal_moves(_hidden(path, "commit")))
    with _NameLocks(names):
        for path in paths:
            journal = _hidden(path, "commit")
            if os.path.exists(journal):
                _finish_journal(journal)
        for path in paths:
            _remove_stale_parts(path)


#: The name of a part file of ``NAME``: ``.NAME.<pid>-<8 random characters>.part``
#: (``tempfile.mkstemp``'s characters). Only such names are ever removed.
_PART_NAME = r"\.{base}\.[0-9]+-[a-z0-9_]{{8}}\.part"


def _ours(part):
    """Whether a file is a part file this user may remove (owned by them)."""
    try:
        st = os.lstat(part)
    except OSError:
        return False
    if not stat.S_ISREG(st.st_mode):
        return False
    getuid = getattr(os, "getuid", None)
    return getuid is None or st.st_uid == getuid()


def stale_parts(path):
    """The part files of the output ``path`` left by runs that died.

    A part file is stale when its name is one this module gives
    (``.NAME.<pid>-<random>.part``), it belongs to the current user, and no
    live process holds its lock (a run locks its part files until it
    publishes or removes them; the kernel releases the lock of a killed
    process). Any other file, a user's ``.NAME.old.part`` or another user's
    part, is never listed.

    Parameters
    ----------
    path : path-like
        An output's name.

    Returns
    -------
    parts : list of str
    """
    path = os.path.abspath(os.fspath(path))
    folder, base = os.path.dirname(path), os.path.basename(path)
    pattern = re.compile(_PART_NAME.format(base=re.escape(base)))
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    found = []
    for name in names:
        part = os.path.join(folder, name)
        if pattern.fullmatch(name) and _ours(part):
            found.append(part)
    return found


def _remove_stale_parts(path):
    for part in stale_parts(path):
        try:
            fd = os.open(part, os.O_RDONLY)
        except OSError:
            continue
        try:
            if _lock_file(fd, blocking=False) and _same_inode(fd, part):
                os.unlink(part)  # its writer is gone
        finally:
            os.close(fd)


class OutputFiles:
    """Write several output files, then publish them together or not at all.

    Use as a context manager: ``parts[path]`` is the part file to write for
    the output ``path``. When the block completes, every part is moved into
    place as one step (see the comments above); when it fails, every part is
    removed and no existing file changes. Without ``overwrite``, an output
    that appears meanwhile (another run) makes this run fail, with nothing
    published; exactly one of several runs racing for the same outputs
    succeeds.

    Parameters
    ----------
    outputs : dict of {str: path-like or None}
        Description (``"reports file"``) -> path; None entries are skipped.
    overwrite : bool
        Whether existing files may be replaced.
    private : bool, default=False
        Publish the outputs readable and writable by their owner only
        (mode 0600), e.g. a file of user secrets.
    """

    def __init__(self, outputs, overwrite, *, private=False):
        # private: readable by the owner only (a file of user secrets).
        self.private = bool(private)
        self.outputs = {
            what: os.path.abspath(os.fspath(p)) for what, p in outputs.items() if p is not None
        }
        self.overwrite = bool(overwrite)
        self.parts = {}
        self._fds = []

    def __enter__(self):
        recover_outputs(list(self.outputs.values()))
        try:
            for path in self.outputs.values():
                self.parts[path] = self._new_part(path)
        except BaseException:
            self._discard()
            raise
        return self

    def __getitem__(self, path):
        return self.parts[os.path.abspath(os.fspath(path))]

    def _new_part(self, path):
        folder, base = os.path.dirname(path), os.path.basename(path)
        while True:
            # The process id is for people looking at the folder; the lock,
            # held until the part is published, is what keeps cleaners away.
            fd, part = tempfile.mkstemp(
                prefix=f".{base}.{os.getpid()}-", suffix=".part", dir=folder, text=False
            )
            if _lock_file(fd, blocking=False) and _same_inode(fd, part):
                self._fds.append(fd)
                return part
            os.close(fd)  # a cleaner removed it in between: take another

    def _discard(self):
        for part in self.parts.values():
            with contextlib.suppress(OSError):
                os.unlink(part)
        self._close()

    def _close(self):
        while self._fds:
            os.close(self._fds.pop())

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None:
            self._discard()
            return False
        try:
            self._publish()
        except BaseException:
            self._discard()
            raise
        self._close()
        return False

    def _publish(self):
        if not self.outputs:
            return
        umask = os.umask(0)
        os.umask(umask)
        for part in self.parts.values():
            # mkstemp creates the file 0600; give outputs the usual permissions.
            os.chmod(part, 0o600 if self.private else 0o666 & ~umask)
            _fsync(part)
        moves = [(self.parts[p], p) for p in self.outputs.values()]
        with _NameLocks(self.outputs.values()):
            if not self.overwrite:
                for what, path in self.outputs.items():
                    if os.path.lexists(path):
                        raise ValueError(
                            f"The {what} {path!r} was created by another run while "
                            "this one worked; nothing was written. Pass --overwrite "
                            "to replace it, or choose another name."
                        )
            journal = _hidden(moves[0][1], "commit")
            with open(journal, "w", encoding="utf-8") as fh:
                json.dump({"pid": os.getpid(), "overwrite": self.overwrite, "moves": moves}, fh)
                fh.flush()
                os.fsync(fh.fileno())
            linked = []
            try:
                for part, target in moves:
                    if self.overwrite:
                        os.replace(part, target)
                    else:
                        os.link(part, target)  # fails if the name exists
                        linked.append(target)
                        os.unlink(part)
            except FileExistsError as exc:
                # A writer that does not take our locks: undo, publish nothing.
                for target in linked:
                    os.unlink(target)
                os.unlink(journal)
                raise ValueError(
                    f"{exc.filename2 or exc.filename!r} was created by another "
                    "program while this run worked; nothing was written. Pass "
                    "--overwrite to replace it, or choose another name."
                ) from None
            os.unlink(journal)
            for folder in {os.path.dirname(p) for _, p in moves}:
                _fsync(folder)


def _fsync(path):
    """Flush a file, or a folder's entries, to disk (best effort)."""
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


@contextlib.contextmanager
def atomic_path(path, overwrite=True):
    """Yield a part file for ``path``; publish it on success (one output).

    A failure (or an interrupt) removes the part file and leaves any
    existing ``path`` untouched.
    """
    with OutputFiles({"output": path}, overwrite) as files:
        yield files[path]


def default_spec_path(output):
    """The spec of ``r.csv`` is ``r.csv.spec.json``: one spec per output."""
    return os.fspath(output) + ".spec.json"


def canonical_digest(document):
    """SHA-256 of a JSON document in canonical form (sorted keys, no spaces).

    Examples
    --------
    >>> from sklearn_uldp.cli._io import canonical_digest
    >>> canonical_digest({"b": 1, "a": [1.0]}) == canonical_digest({"a": [1.0], "b": 1})
    True
    """
    text = json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def file_digest(path, chunk=1 << 20):
    """SHA-256 of a file, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(chunk), b""):
            digest.update(block)
    return digest.hexdigest()


def _need_pyarrow(path, action):
    try:
        import pyarrow  # noqa: F401
        import pyarrow.parquet  # noqa: F401
    except ImportError as exc:
        raise ValueError(
            f"{action} Parquet needs pyarrow ({exc}): pip install pyarrow, or use "
            f"a .csv file instead of {str(path)!r}."
        ) from None


def _as_strings(frame):
    # Values read as text keep missing values as None (not the string 'nan');
    # binary columns (packed reports) keep their bytes.
    columns = {}
    for c in frame.columns:
        s = frame[c]
        if "binary" not in str(s.dtype):
            s = s.astype(object)
            s = s.astype(str).where(s.notna(), None)
        columns[c] = s
    return pd.DataFrame(columns, index=frame.index, columns=frame.columns)


def _binary_as_arrow(kind):
    """Arrow binary columns stay Arrow-backed bytes (packed reports), read without a copy."""
    import pyarrow as pa

    if pa.types.is_binary(kind) or pa.types.is_large_binary(kind):
        return pd.ArrowDtype(kind)
    return None


def read_chunks(path, columns, chunksize, dtype=None, exact=False):
    """Yield DataFrame chunks of ``columns`` from a CSV or Parquet file.

    Parquet files are read one batch of ``chunksize`` rows at a time. Every
    CSV line after the header is a row: a blank line is a row whose values
    are all missing (it is never skipped), and values keep their spaces.
    With ``dtype=str``, every value is a string (missing values are None).

    Parameters
    ----------
    path : path-like
    columns : list of str
    chunksize : int
    dtype : type or None, default=None
    exact : bool, default=False
        Only an empty CSV field is missing (for reports, whose labels are
        categories, written by ``privatize``). Otherwise pandas' usual
        markers (``NA``, ``NaN``, ``null``, ...) are missing values too.
    """
    if not os.path.exists(path):
        raise FileNotFoundError(f"Input file {str(path)!r} does not exist.")
    if os.path.isdir(path):
        raise ValueError(f"Input {str(path)!r} is a directory, not a table file.")
    if check_input_format(path) == "parquet":
        yield from _read_parquet(path, columns, chunksize, dtype)
        return
    options = {"skip_blank_lines": False}
    if exact:
        options.update(keep_default_na=False, na_values=[""])
    try:
        header = pd.read_csv(path, nrows=0).columns
    except (pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise ValueError(f"Cannot read {str(path)!r} as CSV: {exc}") from None
    except pd.errors.EmptyDataError:
        raise ValueError(f"Input file {str(path)!r} is empty (no header).") from None
    absent = [c for c in columns if c not in header]
    if absent:
        raise ValueError(
            f"Columns {absent} are not in {str(path)!r} (its columns: {list(header)[:20]})."
        )
    try:
        yield from pd.read_csv(path, usecols=columns, dtype=dtype, chunksize=chunksize, **options)
    except (pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise ValueError(f"Cannot read {str(path)!r} as CSV: {exc}") from None


def parquet_metadata(path, key):
    """A key-value entry of a Parquet file's metadata (str), or None."""
    import pyarrow.parquet as pq

    meta = pq.ParquetFile(path).schema_arrow.metadata or {}
    value = meta.get(key.encode("utf-8"))
    return None if value is None else value.decode("utf-8", "replace")


def _read_parquet(path, columns, chunksize, dtype):
    _need_pyarrow(path, "Reading")
    import pyarrow
    import pyarrow.parquet as pq

    try:
        source = pq.ParquetFile(path)
    except pyarrow.ArrowException as exc:
        raise ValueError(f"Cannot read {str(path)!r} as Parquet: {exc}") from None
    names = source.schema_arrow.names
    absent = [c for c in columns if c not in names]
    if absent:
        raise ValueError(f"Columns {absent} are not in {str(path)!r} (its columns: {names[:20]}).")
    empty = True
    start = 0
    for batch in source.iter_batches(batch_size=chunksize, columns=list(columns)):
        frame = batch.to_pandas(types_mapper=_binary_as_arrow)
        # Rows numbered through the file, as the CSV reader does: messages
        # name rows by it.
        frame.index = pd.RangeIndex(start, start + len(frame))
        start += len(frame)
        empty = False
        yield _as_strings(frame) if dtype is str else frame
    if empty:
        frame = (
            source.schema_arrow.empty_table()
            .select(list(columns))
            .to_pandas(types_mapper=_binary_as_arrow)
        )
        yield _as_strings(frame) if dtype is str else frame


#: How CSV outputs quote: every text value is quoted, so that a label made
#: of spaces (or empty) is read back as itself by any CSV reader.
CSV_QUOTING = csv.QUOTE_NONNUMERIC


class TableWriter:
    """Write DataFrame chunks to a CSV or Parquet part file.

    CSV chunks are appended (text quoted, see :data:`CSV_QUOTING`); each
    Parquet chunk becomes a row group of a
    :class:`pyarrow.parquet.ParquetWriter`, so memory does not grow with the
    table. The file is written under the part name given by
    :class:`OutputFiles`, which publishes it.

    Parameters
    ----------
    path : str or path-like
        The output's name: ends in ``.csv``, ``.parquet`` or ``.pq``.
    part : str or path-like
        Where to write.
    metadata : dict of {str: str}, default=None
        Key-value metadata of a Parquet file (CSV files have none).
    """

    def __init__(self, path, part, metadata=None):
        self.path = os.fspath(path)
        self.part = os.fspath(part)
        self.format = check_table_output(self.path)
        self.metadata = dict(metadata or {})
        self.n_rows = 0
        self.columns = None
        self._writer = None
        self._schema = None

    def write(self, frame):
        """Append one chunk."""
        if self.columns is None:
            self.columns = [str(c) for c in frame.columns]
        if self.format == "csv":
            frame.to_csv(
                self.part,
                mode="a" if self.n_rows else "w",
                header=not self.n_rows,
                index=False,
                quoting=CSV_QUOTING,
            )
        else:
            import pyarrow as pa
            import pyarrow.parquet as pq

            if self._writer is None:
                table = pa.Table.from_pandas(frame, preserve_index=False)
                meta = dict(table.schema.metadata or {})
                meta.update(
                    {k.encode("utf-8"): v.encode("utf-8") for k, v in self.metadata.items()}
                )
                self._schema = table.schema.with_metadata(meta)
                self._writer = pq.ParquetWriter(self.part, self._schema)
            table = pa.Table.from_pandas(frame, schema=self._schema, preserve_index=False)
            self._writer.write_table(table)
        self.n_rows += len(frame)

    def finish(self):
        """Complete the file (still under its part name); return that name."""
        if self._writer is not None:
            self._writer.close()
            self._writer = None
        return self.part

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        self.finish()
        return False


def check_csv_output(path, what):
    """Refuse a CSV output whose name does not end in ``.csv``."""
    if path is not None and os.path.splitext(os.fspath(path))[1].lower() != ".csv":
        raise ValueError(
            f"The {what} {os.fspath(path)!r} is written as CSV: give a file name ending in .csv."
        )


def check_plot_output(path):
    """Refuse a plot path matplotlib cannot write (or no matplotlib)."""
    if path is None:
        return
    try:
        from matplotlib.backend_bases import FigureCanvasBase
    except ImportError:
        raise ValueError("--plot needs matplotlib (pip install 'sklearn-uldp[plot]').") from None
    formats = FigureCanvasBase.get_supported_filetypes()
    ext = os.path.splitext(os.fspath(path))[1].lower().lstrip(".")
    if ext not in formats:
        raise ValueError(
            f"Cannot write the plot {os.fspath(path)!r}: give a file name ending in "
            f"one of {', '.join('.' + f for f in sorted(formats))}."
        )


def integer_reports(chunk: pd.DataFrame, what: str) -> pd.DataFrame:
    """A chunk of report columns read as text, as int64 (what privatize
    wrote), or a ValueError naming the rows (never their values)."""
    try:
        return chunk.apply(pd.to_numeric, errors="raise").astype("int64")
    except (ValueError, TypeError, OverflowError):
        rows = f"rows {int(chunk.index[0]) + 1}-{int(chunk.index[-1]) + 1}"
        raise ValueError(
            f"{what} reports are integers; some of {rows} are not (or are "
            "missing): give the reports file privatize wrote."
        ) from None
