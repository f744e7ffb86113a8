"""Files of the command line: chunked readers, safe writers, spec binding.

The rules that keep the command line from destroying data live here, once:

* an output is never an input (compared with :func:`os.path.samefile`, so
  symbolic and hard links count), nor another output;
* an existing output is replaced only with ``--overwrite``;
* every output is written to a temporary file next to it and renamed into
  place once complete, so a failed run leaves no partial file and an
  existing file intact;
* an output's format comes from its extension, and an unknown extension is
  refused rather than written as CSV;
* Parquet is read and written one row group per chunk, so memory stays
  bounded by ``--chunksize`` rows.
"""

import contextlib
import hashlib
import os
import tempfile

import pandas as pd

__all__ = [
    "TABLE_FORMATS",
    "table_format",
    "check_table_output",
    "check_outputs",
    "read_chunks",
    "TableWriter",
    "atomic_path",
    "file_digest",
    "default_spec_path",
]

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


@contextlib.contextmanager
def atomic_path(path):
    """Yield a temporary path next to ``path``; rename it to ``path`` on success.

    A failure (or an interrupt) removes the temporary file and leaves any
    existing ``path`` untouched.
    """
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(
        prefix="." + os.path.basename(path) + ".", suffix=".part", dir=directory
    )
    os.close(fd)
    try:
        yield tmp
        # mkstemp creates the file 0600; give the output the usual permissions.
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def default_spec_path(output):
    """The spec of ``r.csv`` is ``r.csv.spec.json``: one spec per output."""
    return os.fspath(output) + ".spec.json"


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
    # Values read as text keep missing values as None (not the string 'nan').
    return frame.astype(object).apply(lambda s: s.astype(str).where(s.notna(), None))


def read_chunks(path, columns, chunksize, dtype=None):
    """Yield DataFrame chunks of ``columns`` from a CSV or Parquet file.

    Parquet files are read one batch of ``chunksize`` rows at a time.
    With ``dtype=str``, every value is a string (missing values are None).
    """
    if not os.path.exists(path):
        raise FileNotFoundError(f"Input file {str(path)!r} does not exist.")
    if os.path.isdir(path):
        raise ValueError(f"Input {str(path)!r} is a directory, not a table file.")
    if os.path.splitext(str(path))[1].lower() in (".parquet", ".pq"):
        yield from _read_parquet(path, columns, chunksize, dtype)
        return
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
        yield from pd.read_csv(path, usecols=columns, dtype=dtype, chunksize=chunksize)
    except (pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise ValueError(f"Cannot read {str(path)!r} as CSV: {exc}") from None


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
    for batch in source.iter_batches(batch_size=chunksize, columns=list(columns)):
        frame = batch.to_pandas()
        empty = False
        yield _as_strings(frame) if dtype is str else frame
    if empty:
        frame = source.schema_arrow.empty_table().select(list(columns)).to_pandas()
        yield _as_strings(frame) if dtype is str else frame


class TableWriter:
    """Write DataFrame chunks to a CSV or Parquet file, atomically.

    CSV chunks are appended; each Parquet chunk becomes a row group of a
    :class:`pyarrow.parquet.ParquetWriter`, so memory does not grow with the
    table. Use as a context manager: the file appears under its name only
    when the block completes without error.

    Parameters
    ----------
    path : str or path-like
        Ends in ``.csv``, ``.parquet`` or ``.pq``.
    """

    def __init__(self, path):
        self.path = os.fspath(path)
        self.format = check_table_output(self.path)
        self.n_rows = 0
        self.columns = None
        self._writer = None
        self._schema = None

    def __enter__(self):
        self._atomic = atomic_path(self.path)
        self._tmp = self._atomic.__enter__()
        return self

    def write(self, frame):
        """Append one chunk."""
        if self.columns is None:
            self.columns = [str(c) for c in frame.columns]
        if self.format == "csv":
            frame.to_csv(
                self._tmp,
                mode="a" if self.n_rows else "w",
                header=not self.n_rows,
                index=False,
            )
        else:
            import pyarrow as pa
            import pyarrow.parquet as pq

            if self._writer is None:
                table = pa.Table.from_pandas(frame, preserve_index=False)
                self._schema = table.schema
                self._writer = pq.ParquetWriter(self._tmp, self._schema)
            else:
                table = pa.Table.from_pandas(frame, schema=self._schema, preserve_index=False)
            self._writer.write_table(table)
        self.n_rows += len(frame)

    def finish(self):
        """Complete the file (still under its temporary name); return that name."""
        if self._writer is not None:
            self._writer.close()
            self._writer = None
        return self._tmp

    def __exit__(self, exc_type, exc, tb):
        self.finish()
        return self._atomic.__exit__(exc_type, exc, tb)


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
