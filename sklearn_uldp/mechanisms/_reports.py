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

import numpy as np

__all__ = ["Reports", "attach_channel", "get_channel", "CHANNEL_ATTR"]

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


def attach_channel(reports, channel):
    """Attach ``channel`` to ``reports`` (ndarray, DataFrame or sparse matrix)."""
    if hasattr(reports, "attrs"):  # pandas
        reports.attrs[CHANNEL_ATTR] = channel
        return reports
    if hasattr(reports, "tocsr"):  # scipy sparse
        reports.uldp_channel = channel
        return reports
    return Reports(reports, channel)


def get_channel(reports):
    """Return the channel attached to ``reports``, or None."""
    if isinstance(reports, Reports):
        return reports.channel
    attrs = getattr(reports, "attrs", None)
    if isinstance(attrs, dict):
        return attrs.get(CHANNEL_ATTR)
    return getattr(reports, "uldp_channel", None)
