"""Reports that remember the mechanism that produced them.

A collector must estimate with the channel of the mechanism that *actually*
produced the reports, also inside a Pipeline after ``set_params``, ``clone``
or a grid search. So every mechanism attaches its channel (the public spec)
to the reports it returns, and every estimator reads it back:

* numpy output: :class:`Reports`, a light ``ndarray`` subclass with a
  ``channel`` attribute (slices keep it; ``np.asarray`` drops it);
* pandas output (``set_output(transform="pandas")``): ``DataFrame.attrs``
  under the key :data:`CHANNEL_ATTR`;
* sparse output: an attribute on the scipy sparse matrix.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import scipy.sparse as sp

if TYPE_CHECKING:
    from ._channel import Channel

__all__ = ["Reports", "SparseReports", "attach_channel", "get_channel", "CHANNEL_ATTR"]

CHANNEL_ATTR = "sklearn_uldp_channel"


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
        reports.attrs[CHANNEL_ATTR] = None if channel is None else channel.to_dict()
        return reports
    if sp.issparse(reports):
        sparse = SparseReports(reports.tocsr())
        sparse.channel = channel
        return sparse
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
    if isinstance(reports, (Reports, SparseReports)):
        return reports.channel
    attrs = getattr(reports, "attrs", None)
    if isinstance(attrs, dict):
        spec = attrs.get(CHANNEL_ATTR)
        if isinstance(spec, dict):
            from ._channel import Channel

            return Channel.from_dict(spec)
        return spec
    return getattr(reports, "uldp_channel", None)
