"""Base of the open-domain mechanisms (users' side, scikit-learn transformers)."""

from __future__ import annotations

import warnings
from numbers import Integral, Real
from typing import Any, TypeVar

import numpy as np
import pandas as pd
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from ..exceptions import ItemTruncationWarning
from ..mechanisms._base import PARAMETER_HINTS, RANDOM_STATE_CONSTRAINT
from ..mechanisms._core import PrivatizerBase
from ..utils._typing import ArrayLike, TransformOutput
from ..utils._validation import validate_params_with_hints
from ._protocol import PROTOCOL_ATTR, _Protocol, protocol_from_dict

__all__ = ["OpenDomainMechanism", "PROTOCOL_ATTR", "get_protocol"]

HINTS = {
    **PARAMETER_HINTS,
    "item_type": "Pass 'str' (text), 'bytes' or 'int' (non-negative integers).",
    "max_bytes": (
        "max_bytes is the length of an item in bytes (UTF-8 for text): an integer in "
        "[1, 64] (at most 8 for integers), e.g. 8."
    ),
    "normalization": "Pass 'NFC' (the default), 'NFKC' or None (see the Heavy hitters page).",
    "on_long": "Pass 'truncate' (report a prefix, with a warning) or 'error'.",
    "top_k": "top_k is the number of heavy hitters to find: an integer >= 1, e.g. 20.",
    "step_bits": "step_bits is the number of bits added per level: None (auto) or 1..16.",
    "final_fraction": (
        "final_fraction is the share of users in the held-out estimation group: a float "
        "strictly between 0 and 1, e.g. 0.5 (PEM also takes None: an equal share)."
    ),
    "n_hashes": "n_hashes is the number of public hash functions: an integer in [1, 65536].",
    "hash_range": "hash_range is OLH's g: 'optimal' (about e^eps + 1) or an integer >= 2.",
    "memo_label": (
        "memo_label names the collection in the memoized answers' context: pass a "
        "string, e.g. 'homepage' (one label per question asked with the same users' secrets)."
    ),
}

ENCODING_CONSTRAINTS: dict[str, list[Any]] = {
    "item_type": [StrOptions({"str", "bytes", "int"})],
    "max_bytes": [Interval(Integral, 1, 64, closed="both")],
    "normalization": [StrOptions({"NFC", "NFKC"}), None],
    "on_long": [StrOptions({"truncate", "error"})],
}

ORACLE_CONSTRAINTS: dict[str, list[Any]] = {
    "hash_range": [StrOptions({"optimal"}), Interval(Integral, 2, None, closed="left")],
    "n_hashes": [Interval(Integral, 1, 65536, closed="both")],
    "hash_seed": [Interval(Integral, 0, (1 << 32) - 1, closed="both")],
}


def require_items(X):
    """``X`` as one column of items (see ``_column``), refusing an empty one."""
    from ._encoding import _column

    column = _column(X)
    if column.size == 0:
        raise ValueError(
            "The column of items is empty (0 rows): pass at least one item (one per "
            "user); to fit the public spec alone, call fit() without X."
        )
    return column


def get_protocol(reports: Any) -> Any:
    """The protocol (public spec) that open-domain reports carry, or None.

    Examples
    --------
    >>> from sklearn_uldp.heavy_hitters import PrefixExtendingMethod, get_protocol
    >>> mech = PrefixExtendingMethod(epsilon=2.0, random_state=0)
    >>> reports = mech.fit_transform(["a", "b"])
    >>> get_protocol(reports) == mech.channel_
    True
    """
    channel = getattr(reports, "channel", None)
    if isinstance(channel, _Protocol):
        return channel
    attrs = getattr(reports, "attrs", None)
    if isinstance(attrs, dict) and attrs.get(PROTOCOL_ATTR) is not None:
        return protocol_from_dict(attrs[PROTOCOL_ATTR])
    return None


_MechanismT = TypeVar("_MechanismT", bound="OpenDomainMechanism")


class OpenDomainMechanism(PrivatizerBase):
    """Base class of the open-domain mechanisms (no ``categories``).

    ``fit`` builds the public spec (``channel_``, the mechanism's protocol)
    from the parameters alone: there is no domain to learn, so ``X`` is only
    validated. ``transform`` encodes one column of items and privatizes each
    with fresh randomness; the reports are one integer per user (Bloom
    RAPPOR: a cohort and a bit vector) and carry the spec (``.channel`` of
    the returned :class:`~sklearn_uldp.mechanisms.Reports`, or
    ``DataFrame.attrs["sklearn_uldp_protocol"]`` with pandas output).

    The random streams, the output containers, ``spec()`` and
    ``epsilon_spent_`` are :class:`~sklearn_uldp.mechanisms._core.PrivatizerBase`'s,
    as for every other mechanism. The fitted spec is ``channel_`` as
    everywhere else; ``protocol_``, its former name, still reads it with a
    ``FutureWarning``.
    """

    _parameter_constraints: dict[str, list[Any]] = {
        "epsilon": [Interval(Real, 0, None, closed="neither")],
        "random_state": RANDOM_STATE_CONSTRAINT,
    }

    #: The spec ``fit`` builds: one keyword per parameter but ``random_state``
    #: (``hash_range="optimal"`` passed as None, the protocols' optimum).
    _protocol_class: Any = None

    def _make_channel(self):
        if self._protocol_class is None:
            raise NotImplementedError
        params = self.get_params(deep=False)
        del params["random_state"]
        if "hash_range" in params and params["hash_range"] == "optimal":
            params["hash_range"] = None
        return self._protocol_class(**params)

    def fit(self: _MechanismT, X: ArrayLike | None = None, y: object = None) -> _MechanismT:
        """Build the public spec; ``X`` (a column of items), if given, is validated.

        Parameters
        ----------
        X : array-like of shape (n_samples,) or (n_samples, 1), default=None
            Items (only checked: nothing is learned from them).
        y : None
            Ignored.

        Returns
        -------
        self : object
        """
        validate_params_with_hints(self, HINTS)
        self.channel_ = self._make_channel()
        self.n_features_in_ = 1
        self.__dict__.pop("feature_names_in_", None)
        if X is not None:
            self._set_names(X)
            with warnings.catch_warnings():
                # Cutting long items is transform's to report (once per call:
                # fit_transform would otherwise say it twice).
                warnings.simplefilter("ignore", ItemTruncationWarning)
                self._encode(X)
        self._start_random_stream()
        return self

    @property
    def protocol_(self) -> Any:
        """Deprecated name of ``channel_`` (the fitted protocol)."""
        channel = self.channel_  # unfitted: AttributeError, without a warning
        warnings.warn(
            f"{type(self).__name__}.protocol_ is deprecated: the fitted spec is channel_, "
            "as for every mechanism (protocol_ will be removed in a future version).",
            FutureWarning,
            stacklevel=2,
        )
        return channel

    def __setstate__(self, state: dict[str, Any]) -> None:
        # Mechanisms pickled before the rename hold their spec as protocol_.
        if "protocol_" in state and "channel_" not in state:
            state = {**state, "channel_": state["protocol_"]}
            del state["protocol_"]
        super().__setstate__(state)

    def _set_names(self, X):
        if isinstance(X, pd.DataFrame):
            if X.shape[1] != 1:
                raise ValueError(
                    f"Expected one column of items, got {X.shape[1]} columns. "
                    "Privatize one column at a time."
                )
            self.feature_names_in_ = np.asarray([str(X.columns[0])], dtype=object)
        elif isinstance(X, pd.Series) and X.name is not None:
            self.feature_names_in_ = np.asarray([str(X.name)], dtype=object)

    def _encode(self, X):
        return self.channel_.encoding.encode(require_items(X))

    def transform(self, X: ArrayLike) -> TransformOutput:
        """Privatize each item (one report per user).

        Parameters
        ----------
        X : array-like of shape (n_samples,) or (n_samples, 1)
            One column of items.

        Returns
        -------
        reports : Reports of shape (n_samples, 1) or DataFrame
            Integer report codes carrying the protocol.
        """
        check_is_fitted(self, "channel_")
        self._check_column_name(X)
        codes, rows = self._encode(X)
        rng = self._transform_rng(codes)
        out = self._sample(codes, rows, rng)
        return self._container(out.reshape(out.shape[0], -1), X)

    def _check_column_name(self, X):
        if isinstance(X, pd.DataFrame):
            names = getattr(self, "feature_names_in_", None)
            if names is not None and str(X.columns[0]) != str(names[0]) and X.shape[1] == 1:
                raise ValueError(
                    f"X has the column {X.columns[0]!r}, but the mechanism was fitted on "
                    f"{names[0]!r}."
                )

    def _sample(self, codes, rows, rng):
        return self.channel_.sample(codes, rows, rng)

    def get_feature_names_out(self, input_features: ArrayLike | None = None) -> np.ndarray:
        """The report columns, named after the input column (``x0`` by default)."""
        check_is_fitted(self, "channel_")
        names = getattr(self, "feature_names_in_", None)
        if input_features is not None:
            names = np.asarray(input_features, dtype=object)
        name = "x0" if names is None else str(names[0])
        return np.asarray(self.channel_.report_column_names(name), dtype=object)

    def channel_matrix(self, universe, *, realized=False):
        """The exact channel over a finite universe of items (for the privacy checks)."""
        check_is_fitted(self, "channel_")
        return self.channel_.channel_matrix(universe, realized=realized)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = True
        tags.input_tags.string = True
        tags.input_tags.categorical = True
        tags.input_tags.one_d_array = True
        tags.input_tags.two_d_array = True
        tags.transformer_tags.preserves_dtype = []
        return tags
