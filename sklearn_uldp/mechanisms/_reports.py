"""Reports that remember the mechanism that produced them.

A collector must estimate with the channel of the mechanism that *actually*
produced the reports, also inside a Pipeline after ``set_params``, ``clone``
or a grid search. So every mechanism attaches its channel (the public spec)
to the reports it returns, and every estimator reads it back:

* numpy output: :class:`Reports`, a light ``ndarray`` subclass with a
  ``channel`` attribute (slices keep it; ``np.asarray`` drops it);
* pandas output (``set_output(transform="pandas")``): ``DataFrame.attrs``
  under the key :data:`CHANNEL_ATTR`;
* sparse output: an attribute on the scipy sparse matrix;
* packed output (bit-vector reports, ``packed_output=True``):
  :class:`PackedReports`, k/8 bytes a report (the layout is described there
  and on the "Spec and report formats" page).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import scipy.sparse as sp

from ._spec import CHANNEL_ATTR

if TYPE_CHECKING:
    from ._channel import Channel

__all__ = [
    "Reports",
    "SparseReports",
    "PackedReports",
    "attach_channel",
    "get_channel",
    "CHANNEL_ATTR",
]


class Reports(np.ndarray):
    """An ndarray of privatized reports carrying the producing channel.

    Parameters
    ----------
    data : array-like
        The reports.
    channel : Channel
        The public spec of the mechanism that produced them.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_uldp import RandomizedResponse
    >>> mech = RandomizedResponse(epsilon=1.0, categories=["a", "b"],
    ...                           random_state=0)
    >>> reports = mech.fit_transform(np.array([["a"], ["b"]], dtype=object))
    >>> reports.channel.name
    'rr'
    """

    def __new__(cls, data, channel=None):
        obj = np.asarray(data).view(cls)
        obj.channel = channel
        return obj

    def __array_finalize__(self, obj):
        self.channel = getattr(obj, "channel", None)

    def __reduce__(self):
        constructor, args, state = super().__reduce__()
        return constructor, args, (state, self.channel)

    def __setstate__(self, state):
        nd_state, channel = state
        super().__setstate__(nd_state)
        self.channel = channel


class SparseReports(sp.csr_array):
    """A CSR array of bit-vector reports carrying the producing channel.

    Row slices (chunks of users) keep the channel, so a chunked
    ``partial_fit`` over ``reports[i:j]`` works as with dense reports.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_uldp import RAPPOR
    >>> mech = RAPPOR(epsilon=1.0, categories=["a", "b", "c"], sparse_output=True,
    ...               random_state=0)
    >>> reports = mech.fit_transform(np.array([["a"], ["b"], ["c"]], dtype=object))
    >>> chunk = reports[:2]
    >>> type(chunk).__name__, chunk.shape, chunk.channel == mech.channel_
    ('SparseReports', (2, 3), True)
    """

    channel: Channel | None = None

    def __getitem__(self, key):
        out = super().__getitem__(key)
        if sp.issparse(out):
            out = attach_channel(out, self.channel)
        return out

    def __reduce__(self):
        return (_rebuild_sparse, (sp.csr_array(self), self.channel))


def _rebuild_sparse(matrix, channel):
    return attach_channel(matrix, channel)


class PackedReports:
    """Bit-vector reports packed 8 bits to a byte, carrying the producing channel.

    What RAPPOR, OUE, uRAP, uOUE, subset selection, uBD, uSS and the
    count-mean sketch return with ``packed_output=True``: ``ceil(k / 8)``
    bytes a report instead of k (dense) or 4 a set bit (sparse), and what
    every estimator, ``partial_fit``,
    :func:`~sklearn_uldp.parallel.reduce_statistics` and EM read without
    unpacking them.

    **Layout.** ``data`` is a C-ordered uint8 array of shape ``(n, n_blocks *
    ceil(n_bits / 8))``: one row per report, one block of ``ceil(n_bits /
    8)`` bytes per input column of the mechanism. Bit j of a block is bit
    ``j % 8`` of byte ``j // 8``, least significant bit first -- exactly
    ``np.packbits(bits, axis=1, bitorder="little")`` of the dense 0/1
    block, which ``np.unpackbits(block, axis=1, count=n_bits,
    bitorder="little")`` restores -- and the padding bits past ``n_bits``
    in a block's last byte are 0. A count-mean sketch report is a hash
    index followed by m bits: its bits are packed as above and its indices
    are ``index``, one column per block (the dense report is ``[index,
    bits]``).

    It behaves as the dense reports it stands for where that is cheap:
    ``shape`` and ``len`` are the dense ones, row indexing and slicing
    return packed reports of those rows (chunks for ``partial_fit``),
    :meth:`toarray` / :meth:`tocsr` give the dense and sparse reports, and
    ``np.asarray(packed)`` unpacks (k bytes a report). Pickles keep the
    channel. :class:`~sklearn_uldp.EMEstimator` keeps read-only views of
    their rows (the likelihood needs every report, and a copy would double
    the memory): do not modify the reports' ``data`` after fitting on them.

    Parameters
    ----------
    data : array-like of uint8 of shape (n, n_blocks * ceil(n_bits / 8))
        The packed rows.
    n_bits : int
        Bits per report (k for the RAPPOR family and subset selection).
    channel : Channel or None, default=None
        The public spec of the mechanism that produced them.
    index : array-like of unsigned int of shape (n, n_blocks) or None, default=None
        The one-symbol part that precedes each report's bits (the
        count-mean sketch's hash index); None for bit vectors.

    Attributes
    ----------
    data : ndarray of uint8
    n_bits : int
    channel : Channel or None
    index : ndarray or None
    n_blocks : int
        Input columns the reports hold (one block of bytes each).
    row_bytes : int
        Bytes of one block, ``ceil(n_bits / 8)``.
    shape : tuple of int
        ``(n, n_blocks * n_bits)`` (``n_blocks * (n_bits + 1)`` with an
        ``index``), the shape of the dense reports.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_uldp import RAPPOR, EmpiricalEstimator
    >>> X = np.random.default_rng(0).integers(0, 10, size=(1000, 1))
    >>> mech = RAPPOR(2.0, theta=0.5, categories=list(range(10)), packed_output=True,
    ...               random_state=0)
    >>> reports = mech.fit_transform(X)
    >>> reports.shape, reports.data.shape, reports.data.dtype
    ((1000, 10), (1000, 2), dtype('uint8'))
    >>> dense = reports.toarray()
    >>> bool((np.packbits(dense, axis=1, bitorder="little") == reports.data).all())
    True
    >>> EmpiricalEstimator().fit(reports).distribution_.shape
    (10,)
    """

    ndim = 2
    dtype = np.dtype(np.uint8)

    def __init__(
        self, data: Any, n_bits: int, channel: Channel | None = None, index: Any = None
    ) -> None:
        data = np.asarray(data)
        n_bits = int(n_bits)
        if n_bits < 1:
            raise ValueError(f"n_bits must be a positive number of bits, got {n_bits}.")
        row_bytes = -(-n_bits // 8)
        if data.ndim != 2 or data.dtype != np.uint8 or data.shape[1] % row_bytes:
            raise ValueError(
                f"Packed reports of {n_bits} bits are a 2-D uint8 array of "
                f"ceil({n_bits} / 8) = {row_bytes} bytes per report and column; got "
                f"dtype {data.dtype} and shape {data.shape}. Pack dense 0/1 reports "
                'with np.packbits(bits, axis=1, bitorder="little").'
            )
        self.data = np.ascontiguousarray(data)
        self.n_bits = n_bits
        self.channel = channel
        if index is not None:
            index = np.asarray(index)
            if index.ndim == 1:
                index = index[:, None]
            if index.shape != (data.shape[0], self.n_blocks) or index.dtype.kind != "u":
                raise ValueError(
                    f"index must hold one unsigned integer per report and block, shape "
                    f"({data.shape[0]}, {self.n_blocks}); got dtype {index.dtype} and "
                    f"shape {index.shape}."
                )
        self.index = index

    # ------------------------------------------------------------- shape
    @property
    def row_bytes(self) -> int:
        return -(-self.n_bits // 8)

    @property
    def n_blocks(self) -> int:
        return self.data.shape[1] // self.row_bytes

    @property
    def shape(self) -> tuple[int, int]:
        width = self.n_bits + (self.index is not None)
        return (self.data.shape[0], self.n_blocks * width)

    @property
    def nbytes(self) -> int:
        return int(self.data.nbytes) + (0 if self.index is None else int(self.index.nbytes))

    def __len__(self) -> int:
        return self.data.shape[0]

    def __repr__(self) -> str:
        return (
            f"PackedReports(n={len(self)}, n_bits={self.n_bits}, n_blocks={self.n_blocks}, "
            f"channel={self.channel!r})"
        )

    # ------------------------------------------------------------- access
    def __getitem__(self, key: Any) -> PackedReports:
        if isinstance(key, tuple):
            if len(key) == 2 and isinstance(key[1], slice) and key[1] == slice(None):
                key = key[0]
            else:
                raise IndexError(
                    "Packed reports are indexed by rows only (reports[rows]); select "
                    "bits on the dense reports (reports.toarray()[rows, columns]) or "
                    "one input column's block with mechanism.column_reports."
                )
        rows = self.data[key]
        index = None if self.index is None else self.index[key]
        if rows.ndim == 1:  # one report
            rows = rows[None, :]
            index = None if index is None else index[None, :]
        return PackedReports(rows, self.n_bits, self.channel, index)

    def block(self, j: int) -> PackedReports:
        """The reports of input column ``j`` (its block of bytes)."""
        width = self.row_bytes
        if not 0 <= j < self.n_blocks:
            raise IndexError(f"block {j} is out of range: the reports hold {self.n_blocks}.")
        return PackedReports(
            self.data[:, j * width : (j + 1) * width],
            self.n_bits,
            self.channel,
            None if self.index is None else self.index[:, j : j + 1],
        )

    def toarray(self) -> Reports:
        """The dense reports, with the channel: 0/1 uint8 bits, each block
        preceded by its index column when there is one (``[j, bits]``, in
        the index's dtype)."""
        blocks = []
        for j in range(self.n_blocks):
            bits = np.unpackbits(self.block(j).data, axis=1, count=self.n_bits, bitorder="little")
            if self.index is not None:
                bits = np.column_stack([self.index[:, j], bits.astype(self.index.dtype)])
            blocks.append(bits)
        dense = blocks[0] if len(blocks) == 1 else np.hstack(blocks)
        return Reports(dense, self.channel)

    def tocsr(self) -> SparseReports:
        """The sparse (CSR) reports, with the channel (bit vectors only)."""
        from ..utils._bits import packed_to_csr

        if self.index is not None:
            raise TypeError("Count-mean sketch reports have no sparse form: use toarray().")

        blocks = []
        for j in range(self.n_blocks):
            indptr, indices = packed_to_csr(self.block(j).data, self.n_bits)
            blocks.append(
                sp.csr_array(
                    (np.ones(indices.size, dtype=np.uint8), indices, indptr),
                    shape=(len(self), self.n_bits),
                )
            )
        matrix = blocks[0] if len(blocks) == 1 else sp.hstack(blocks, format="csr")
        reports = attach_channel(matrix, self.channel)
        reports.has_canonical_format = True  # sorted, no duplicates
        return reports

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        dense = np.asarray(self.toarray())
        return dense if dtype is None else dense.astype(dtype)

    def to_frame(self, columns: Any = None, index: Any = None) -> Any:
        """The reports as a DataFrame: one column per block, one value per report.

        Each value holds the report's bytes of that block (``bytes`` of
        ``ceil(n_bits / 8)``), in an Arrow binary column (needs pyarrow), the
        form in which Parquet files and Dask DataFrames keep packed reports
        (:meth:`from_frame` and every estimator read it back without a copy
        per report). The channel is attached as for pandas reports.

        Parameters
        ----------
        columns : list of str, default=None
            One name per block (default ``x0, x1, ...``).
        index : pandas Index, default=None

        Returns
        -------
        frame : pandas DataFrame

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn_uldp.mechanisms import PackedReports
        >>> frame = PackedReports.from_dense(np.array([[1, 0, 1], [0, 1, 1]])).to_frame(["age"])
        >>> frame["age"].tolist()
        [b'\\x05', b'\\x06']
        >>> PackedReports.from_frame(frame, n_bits=3).toarray().tolist()
        [[1, 0, 1], [0, 1, 1]]
        """
        import pandas as pd
        import pyarrow as pa

        if self.index is not None:
            raise TypeError(
                "Count-mean sketch reports (a hash index beside the bits) have no "
                "table form yet: use toarray() for a DataFrame of dense reports."
            )
        n, width = len(self), self.row_bytes
        if columns is None:
            columns = [f"x{j}" for j in range(self.n_blocks)]
        if len(columns) != self.n_blocks:
            raise ValueError(f"Expected {self.n_blocks} column names, got {len(columns)}.")
        large = n * width >= 1 << 31  # int32 offsets would overflow
        offsets = np.arange(n + 1, dtype=np.int64 if large else np.int32) * width
        kind = pa.large_binary() if large else pa.binary()
        data = {}
        for j, name in enumerate(columns):
            block = np.ascontiguousarray(self.block(j).data)
            array = pa.Array.from_buffers(
                kind, n, [None, pa.py_buffer(offsets), pa.py_buffer(block)]
            )
            data[name] = pd.Series(pd.arrays.ArrowExtensionArray(array), index=index)
        frame = pd.DataFrame(data, index=index)
        return attach_channel(frame, self.channel)

    @classmethod
    def from_frame(
        cls, frame: Any, n_bits: int | None = None, channel: Channel | None = None
    ) -> PackedReports:
        """Packed reports from a DataFrame of :meth:`to_frame`'s form.

        Each column holds one block: Arrow binary values (as written by
        :meth:`to_frame` and read back from Parquet), or ``bytes`` objects,
        all of ``ceil(n_bits / 8)`` bytes. ``n_bits`` and ``channel`` default
        to the channel the frame carries.
        """
        if channel is None:
            channel = get_channel(frame)
        if n_bits is None:
            if channel is None:
                raise ValueError("Pass n_bits: the frame carries no channel.")
            n_bits = int(channel.n_categories)
        width = -(-int(n_bits) // 8)
        if hasattr(frame, "to_frame") and not hasattr(frame, "columns"):  # a Series
            frame = frame.to_frame()
        blocks = [_packed_column(frame[name], width) for name in frame.columns]
        data = blocks[0] if len(blocks) == 1 else np.hstack(blocks)
        return cls(data, n_bits, channel)

    @classmethod
    def from_dense(
        cls, bits: Any, n_bits: int | None = None, channel: Channel | None = None
    ) -> PackedReports:
        """Pack dense 0/1 reports (``n_bits`` columns a block; default all of them).

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn_uldp.mechanisms import PackedReports
        >>> packed = PackedReports.from_dense(np.array([[1, 0, 1], [0, 1, 1]]))
        >>> packed.data.tolist(), packed.toarray().tolist()
        ([[5], [6]], [[1, 0, 1], [0, 1, 1]])
        """
        if hasattr(bits, "to_numpy"):
            bits = bits.to_numpy()
        bits = np.asarray(bits)
        if bits.ndim != 2:
            raise ValueError(f"Expected 2-D 0/1 reports, got shape {bits.shape}.")
        if bits.dtype != np.uint8 and bits.dtype != bool:
            if not np.isin(bits, (0, 1)).all():
                raise ValueError("Only 0/1 reports can be packed.")
            bits = bits.astype(np.uint8)
        elif bits.dtype == np.uint8 and bits.size and bits.max() > 1:
            raise ValueError("Only 0/1 reports can be packed.")
        n_bits = bits.shape[1] if n_bits is None else int(n_bits)
        if n_bits < 1 or bits.shape[1] % n_bits:
            raise ValueError(f"{bits.shape[1]} columns are not blocks of n_bits={n_bits}.")
        blocks = [
            np.packbits(bits[:, lo : lo + n_bits], axis=1, bitorder="little")
            for lo in range(0, bits.shape[1], n_bits)
        ]
        data = blocks[0] if len(blocks) == 1 else np.hstack(blocks)
        return cls(data, n_bits, channel)


def _packed_column(column: Any, width: int) -> np.ndarray:
    """The (n, width) bytes of a column of binary values of ``width`` bytes."""
    values = column.array
    if hasattr(values, "__arrow_array__"):
        chunks = values.__arrow_array__().chunks
        parts = []
        for chunk in chunks:
            if chunk.null_count:
                raise ValueError(
                    f"Packed reports in column {column.name!r} have missing values: "
                    "every report holds its bytes."
                )
            buffers = chunk.buffers()
            if buffers[-1] is None and len(chunk):
                raise ValueError(f"Column {column.name!r} does not hold binary values.")
            if len(buffers) == 2:  # fixed-size binary
                data = np.frombuffer(buffers[1], dtype=np.uint8)
                parts.append(
                    data[chunk.offset * width : (chunk.offset + len(chunk)) * width].reshape(
                        -1, width
                    )
                )
                continue
            large = str(chunk.type) == "large_binary"
            offsets = np.frombuffer(buffers[1], dtype=np.int64 if large else np.int32)
            offsets = offsets[chunk.offset : chunk.offset + len(chunk) + 1]
            if (np.diff(offsets) != width).any():
                raise ValueError(
                    f"Packed reports in column {column.name!r} must all be {width} "
                    "bytes long (ceil(n_bits / 8)): were they written for another "
                    "domain?"
                )
            data = np.frombuffer(buffers[2], dtype=np.uint8)
            parts.append(data[offsets[0] : offsets[-1]].reshape(-1, width))
        if not parts:
            return np.zeros((0, width), dtype=np.uint8)
        return parts[0] if len(parts) == 1 else np.concatenate(parts)
    items = list(column)
    if not all(isinstance(v, (bytes, bytearray)) and len(v) == width for v in items):
        raise ValueError(
            f"Packed reports in column {column.name!r} must be bytes of {width} bytes "
            "(ceil(n_bits / 8)) each."
        )
    return np.frombuffer(b"".join(items), dtype=np.uint8).reshape(-1, width)


def is_packed_frame(reports: Any) -> bool:
    """Whether ``reports`` is a DataFrame of packed reports (binary columns)."""
    dtypes = getattr(reports, "dtypes", None)
    if dtypes is None or not hasattr(reports, "columns") or not len(reports.columns):
        return False
    for name in reports.columns:
        dtype = reports[name].dtype
        arrow = getattr(dtype, "pyarrow_dtype", None)
        if arrow is not None:
            if "binary" not in str(arrow):
                return False
        elif dtype.kind != "O" or not len(reports) or not isinstance(reports[name].iloc[0], bytes):
            return False
    return True


def attach_channel(reports: Any, channel: Channel | None) -> Any:
    """Attach ``channel`` to ``reports`` (ndarray, DataFrame or sparse matrix).

    Pandas objects store the JSON-able spec (``channel.to_dict()``) in
    ``attrs``, so reports can be written to Parquet/Feather with their spec.

    Parameters
    ----------
    reports : ndarray, DataFrame or sparse matrix
    channel : Channel

    Returns
    -------
    reports : Reports, DataFrame or SparseReports
        The reports with the channel attached (pandas objects in place).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_uldp.mechanisms import RandomizedResponseChannel, attach_channel
    >>> channel = RandomizedResponseChannel(["a", "b"], epsilon=1.0)
    >>> reports = attach_channel(np.array(["a", "b", "a"], dtype=object), channel)
    >>> type(reports).__name__, reports.channel == channel
    ('Reports', True)
    """
    if hasattr(reports, "attrs"):  # pandas
        if channel is None:
            reports.attrs[CHANNEL_ATTR] = None
        else:  # a channel's key, or an open-domain protocol's
            reports.attrs[getattr(channel, "reports_attr", CHANNEL_ATTR)] = channel.to_dict()
        return reports
    if sp.issparse(reports):
        sparse = SparseReports(reports.tocsr())
        sparse.channel = channel
        return sparse
    if isinstance(reports, PackedReports):
        return PackedReports(reports.data, reports.n_bits, channel, reports.index)
    return Reports(reports, channel)


def get_channel(reports: object) -> Channel | None:
    """Return the channel attached to ``reports``, or None.

    Parameters
    ----------
    reports : object
        Reports as returned by a mechanism (or anything else).

    Returns
    -------
    channel : Channel or None

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_uldp import RandomizedResponse, get_channel
    >>> mech = RandomizedResponse(epsilon=1.0, categories=["a", "b"], random_state=0)
    >>> reports = mech.fit_transform(np.array([["a"], ["b"]], dtype=object))
    >>> get_channel(reports) == mech.channel_, get_channel(np.asarray(reports))
    (True, None)
    """
    if isinstance(reports, (Reports, SparseReports, PackedReports)):
        return reports.channel
    attrs = getattr(reports, "attrs", None)
    if isinstance(attrs, dict):
        spec = attrs.get(CHANNEL_ATTR)
        if isinstance(spec, dict):
            from ._channel import Channel

            return Channel.from_dict(spec)
        return spec
    return getattr(reports, "uldp_channel", None)
