"""The users' side of range queries: one grid cell per user (HDG, TDG)."""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from numbers import Integral, Real
from typing import Any, TypeVar

import numpy as np
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions

from ..exceptions import PrivacyLeakWarning
from ..mechanisms._base import PARAMETER_HINTS, RANDOM_STATE_CONSTRAINT
from ..mechanisms._core import PrivatizerBase
from ..numeric._base import _check_frame_dtypes, check_bounds, warn_clipped
from ..utils._docstrings import COMMON, fill_doc
from ..utils._validation import check_epsilon, validate_params_with_hints
from ._design import MAX_CELLS, choose_oracle
from ._one_report import _OneReportPrivatizerMixin
from ._range_channel import (
    METHODS,
    RangeQueryChannel,
    check_column_ranges,
    range_grids,
    sensitive_bins,
)
from ._range_design import MAX_G1, SMOOTH_EXPONENT, choose_granularity

__all__ = ["RangeQueryPrivatizer"]

_PrivT = TypeVar("_PrivT", bound="RangeQueryPrivatizer")

#: epsilon -> the oracles' tables by (cells, sensitive cells) (see
#: ``choose_oracle``'s ``cache``): deterministic public computations, tens of
#: milliseconds each, that every fit (searches, repeated collections) would
#: otherwise redo. Cleared when it grows past _MAX_TABLES.
_ORACLE_TABLES: dict = {}
_MAX_TABLES = 512

#: Name keying the seeded stream of the grid assignment (it never reads the
#: data: no hash of the input enters it).
ASSIGNMENT_KEY = "(range grid assignment)"
#: Name keying the seeded stream of the oracles' noise.
NOISE_KEY = "(range reports)"

_HINTS = {
    **PARAMETER_HINTS,
    "bounds": (
        "Pass {column: (low, high)} (the public range of every numeric column to "
        "privatize), or 'auto' to learn them from X (which reveals the data's extremes)."
    ),
    "method": "Pass 'hdg' (1-D and 2-D grids) or 'tdg' (2-D grids only).",
    "granularity": (
        "Pass 'auto' (the measured default rule), 'smooth' (HDG's rule for columns of "
        "smooth densities), an int g (every grid cuts a column into "
        "g bins) or a pair (g1, g2): g1 bins for the 1-D grids, g2 per column for "
        "the 2-D grids, g2 dividing g1."
    ),
    "sensitive_ranges": (
        "Pass None (plain LDP) or {column: [(a, b), ...]} (closed ranges of the "
        "column's values); columns left out are sensitive in every value."
    ),
}


@fill_doc(COMMON)
class RangeQueryPrivatizer(_OneReportPrivatizerMixin, PrivatizerBase, auto_wrap_output_keys=None):  # type: ignore[call-arg]
    """Privatize rows of bounded numbers for range queries: one grid cell per user.

    HDG and TDG (Yang, Wang, Li, Cheng & Su, *Answering Multi-Dimensional
    Range Queries under Local Differential Privacy*, VLDB 2021). Each column
    is cut into equal-width bins of its public range. HDG measures a 1-D
    grid of every column (``g1`` bins) and a 2-D grid of every pair of
    columns (``g2 x g2`` cells), TDG only the 2-D grids. Each user is
    assigned one grid uniformly at random, independently of the row, and
    reports the grid's cell holding the row through the frequency oracle of
    least variance for the grid's number of cells (k-RR, subset selection,
    local hashing, ... as :func:`~sklearn_uldp.model_selection.choose_mechanism`
    ranks them). One report spends ``epsilon``. The collector answers range
    queries with :class:`~sklearn_uldp.marginals.RangeQueryEstimator`.

    With ``sensitive_ranges``, the release is utility-optimized: a cell is
    sensitive when, along one of its columns, it meets a sensitive range; a
    row whose value lies in a sensitive range always falls in a sensitive
    cell, which keeps epsilon-LDP, and non-sensitive cells may be reported in
    the clear (uRR, uOUE, uBD, ... over the grid's cells).

    Parameters
    ----------
    epsilon : float, default=1.0
        The budget of one report, which is what a user's row spends (> 0).
    bounds : dict of {str: (float, float)} or "auto", default="auto"
        Column -> its public range ``(low, high)``; the dict's columns are
        those privatized (a DataFrame is read by name, an array by position,
        as ``x0``, ``x1``, ...). Values outside are clipped to the range
        with a :class:`~sklearn_uldp.exceptions.ClippingWarning`. ``"auto"``
        privatizes every column of ``X`` within its smallest and largest
        value, with a :class:`~sklearn_uldp.exceptions.PrivacyLeakWarning`
        (the bounds are public and should be fixed before collection).
    method : {"hdg", "tdg"}, default="hdg"
        ``"hdg"``: 1-D grids of every column and 2-D grids of every pair;
        ``"tdg"``: 2-D grids only (at least two columns).
    granularity : {"auto", "smooth"}, int or (int, int), default="auto"
        ``"auto"``: the paper's guideline, with the exact variance of each
        grid's oracle and a 2-D constant four times the paper's, measured
        on real tables (:func:`~sklearn_uldp.marginals.choose_granularity`;
        TDG: its own exponent-3 rule, measured on real and synthetic data);
        ``"smooth"``: for columns whose joint density is smooth at the
        grids' scale (unimodal, continuous: heights, sensor readings; not
        values clustered on a few hundred points), HDG's rule for smooth
        data (``exponent=4``: coarser grids where n epsilon is large;
        on smooth synthetic data 0.86 times the error of ``"auto"``, 0.71
        at epsilon = 4, on real tables 1.02 times: "Marginals" page), and
        TDG's ``"auto"`` rule; an int g: every grid cuts a column into g bins; ``(g1, g2)``: g1
        bins for the 1-D grids and g2 per column for the 2-D grids, g2
        dividing g1 (TDG: ``(None, g2)``).
    sensitive_ranges : dict of {str: list of (float, float)}, default=None
        Column -> its sensitive closed ranges ``[(a, b), ...]`` (a single
        ``(a, b)`` is one range); columns left out are sensitive in every
        value. None: plain LDP.
    %(random_state)s
    mechanism : "auto", str or mechanism, default="auto"
        The oracle of each grid (see :func:`~sklearn_uldp.marginals.choose_oracle`).
    n_users : int, default=None
        The number of users, for ``granularity="auto"`` or ``"smooth"`` when fitting without
        data; by default the number of rows of ``X``.

    Attributes
    ----------
    columns_ : list of str
        The privatized columns, in order.
    bounds_ : dict of {str: (float, float)}
    sensitive_ranges_ : dict of {str: tuple of (float, float)} or None
        Each listed column's ranges, clipped to its bounds.
    granularity_ : (int or None, int or None)
        ``(g1, g2)``.
    grids_ : list of tuple of str
        The grids, in the order of the reports' ``grid`` index.
    mechanisms_ : list of BaseMechanism
        The fitted oracle of each grid (over the codes of its cells).
    oracles_ : list of str
    design_ : DataFrame or None
        With ``granularity="auto"`` or ``"smooth"``, the candidates compared and their
        predicted errors; its ``attrs`` name the rule (``"rule"``) and its
        model (``exponent``, ``alpha1``, ``alpha2``).
    channel_ : RangeQueryChannel
        The public spec of the reports.
    n_features_in_ : int
    feature_names_in_ : ndarray of str

    See Also
    --------
    sklearn_uldp.marginals.RangeQueryEstimator : the collector's side.
    sklearn_uldp.marginals.MarginalPrivatizer : marginals of categorical columns.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from sklearn_uldp.marginals import RangeQueryEstimator, RangeQueryPrivatizer
    >>> rng = np.random.default_rng(0)
    >>> x = rng.uniform(0, 10, 50_000)
    >>> df = pd.DataFrame({"x": x, "y": x / 10 + rng.normal(0, 0.05, 50_000)})
    >>> priv = RangeQueryPrivatizer(2.0, bounds={"x": (0, 10), "y": (-0.5, 1.5)},
    ...                             random_state=0)
    >>> reports = priv.fit_transform(df)
    >>> priv.grids_
    [('x',), ('y',), ('x', 'y')]
    >>> est = RangeQueryEstimator().fit(reports)
    >>> round(est.query({"x": (None, 5)}), 1)                # the truth: 0.50
    0.5

    A box along the strong dependence cuts the cells its users fill: the
    interval holds the truth whatever their spread within the cells.

    >>> low, high = est.confidence_interval({"x": (2, 5), "y": (0, 0.5)})
    >>> bool(low <= 0.279 <= high)                           # the truth: 0.279
    True

    Columns of smooth densities (heights, sensor readings) are answered
    better by coarser grids where n epsilon is large:

    >>> RangeQueryPrivatizer(4.0, bounds={"x": (0, 10), "y": (-0.5, 1.5)},
    ...                      n_users=10**6).fit().granularity_
    (160, 32)
    >>> RangeQueryPrivatizer(4.0, bounds={"x": (0, 10), "y": (-0.5, 1.5)},
    ...                      granularity="smooth", n_users=10**6).fit().granularity_
    (64, 16)
    """

    _parameter_constraints: dict[str, list[Any]] = {
        "epsilon": [Interval(Real, 0, None, closed="neither")],
        "bounds": [StrOptions({"auto"}), dict],
        "method": [StrOptions(set(METHODS))],
        "granularity": [
            StrOptions({"auto", "smooth"}),
            Interval(Integral, 2, None, closed="left"),
            tuple,
        ],
        "sensitive_ranges": [dict, None],
        "random_state": RANDOM_STATE_CONSTRAINT,
        "mechanism": [StrOptions({"auto"}), str, HasMethods(["fit", "transform"])],
        "n_users": [Interval(Integral, 1, None, closed="left"), None],
    }

    def __init__(
        self,
        epsilon: float = 1.0,
        bounds: Any = "auto",
        method: str = "hdg",
        granularity: Any = "auto",
        sensitive_ranges: Mapping[str, Any] | None = None,
        random_state: Any = None,
        *,
        mechanism: Any = "auto",
        n_users: int | None = None,
    ) -> None:
        self.epsilon = epsilon
        self.bounds = bounds
        self.method = method
        self.granularity = granularity
        self.sensitive_ranges = sensitive_ranges
        self.random_state = random_state
        self.mechanism = mechanism
        self.n_users = n_users

    # ------------------------------------------------------------ fitting
    def fit(self: _PrivT, X: Any = None, y: object = None) -> _PrivT:
        """Fix the columns and ranges, choose the granularities and the oracles.

        Parameters
        ----------
        X : DataFrame, array-like of shape (n_samples, n_features) or None
            The table (read for its number of rows with
            ``granularity="auto"`` or ``"smooth"``, and to learn the ranges with
            ``bounds="auto"``). May be None when ``bounds`` is a dict.
        y : None
            Ignored.

        Returns
        -------
        self : RangeQueryPrivatizer
        """
        validate_params_with_hints(self, _HINTS)
        epsilon = check_epsilon(self.epsilon)
        for attr in ("n_features_in_", "feature_names_in_", "design_"):
            self.__dict__.pop(attr, None)
        columns, bounds, frame = self._resolve_bounds(X)
        d = len(columns)
        if self.method == "tdg" and d < 2:
            raise ValueError(
                f"method='tdg' measures pairs of columns; there is {d} column. Use "
                "method='hdg' for one column."
            )
        self.columns_ = columns
        self.bounds_ = bounds
        self.sensitive_ranges_ = self._resolve_sensitive(columns, bounds)
        if frame is not None:
            self._values(frame, clip=False)  # every value is a finite number
        n_users = self.n_users
        if n_users is None and frame is not None:
            n_users = len(frame)
        if sum(len(t) for t in _ORACLE_TABLES.values()) > _MAX_TABLES:
            _ORACLE_TABLES.clear()
        cache = _ORACLE_TABLES.setdefault(float(epsilon), {})
        g1, g2 = self._resolve_granularity(d, epsilon, n_users, cache)
        self.granularity_ = (g1, g2)
        grids = range_grids(d, self.method)
        mechanisms, names = [], []
        for grid in grids:
            n_bins = g1 if len(grid) == 1 else g2
            cells = n_bins ** len(grid)
            if cells > MAX_CELLS:
                raise ValueError(
                    f"A grid of {cells} cells is more than {MAX_CELLS}: pass a smaller granularity."
                )
            name, mech = choose_oracle(
                cells, epsilon, self._cell_mask(grid, n_bins), self.mechanism, cache=cache
            )
            mechanisms.append(mech)
            names.append(name)
        self.grids_ = [tuple(columns[p] for p in grid) for grid in grids]
        self.mechanisms_ = mechanisms
        self.oracles_ = names
        self.channel_ = RangeQueryChannel(
            columns,
            [bounds[c] for c in columns],
            self.method,
            g1,
            g2,
            [m.channel_ for m in mechanisms],
            None
            if self.sensitive_ranges_ is None
            else [self.sensitive_ranges_.get(c) for c in columns],
        )
        self._start_random_stream()
        return self

    def _resolve_granularity(self, d, epsilon, n_users, cache):
        method, value = self.method, self.granularity
        if isinstance(value, str):
            if n_users is None:
                raise ValueError(
                    f"granularity={value!r} chooses the grids from the number of users: "
                    "fit on the data, or pass n_users (or an explicit granularity)."
                )
            # "smooth": HDG's rule for smooth densities; TDG's default rule is
            # already the one measured best on them
            exponent = SMOOTH_EXPONENT if value == "smooth" and method == "hdg" else None
            g1, g2, self.design_ = choose_granularity(
                int(n_users),
                epsilon,
                d,
                method,
                mechanism=self.mechanism,
                exponent=exponent,
                cache=cache,
            )
            self.design_.attrs["rule"] = value
            return g1, g2
        self.design_ = None
        if isinstance(value, tuple):
            if len(value) != 2:
                raise ValueError(
                    f"granularity must be a pair (g1, g2), got {len(value)} values. "
                    + _HINTS["granularity"]
                )
            g1, g2 = value
        else:
            g1 = g2 = value
        for name, g in (("g1", g1), ("g2", g2)):
            if g is not None and (
                isinstance(g, bool) or not isinstance(g, (Integral, np.integer)) or g < 2
            ):
                raise ValueError(f"granularity's {name} must be an integer >= 2, got {g!r}.")
        g1 = None if g1 is None else int(g1)
        g2 = None if g2 is None else int(g2)
        if method == "tdg":
            if isinstance(value, tuple) and g1 is not None:
                raise ValueError(
                    "method='tdg' has no 1-D grids: pass granularity=g2 or (None, g2)."
                )
            g1 = None
            if g2 is None:
                raise ValueError("method='tdg' needs g2, the bins per column of a 2-D grid.")
            return None, g2
        if g1 is None:
            raise ValueError("method='hdg' needs g1, the bins of a 1-D grid.")
        if g1 > MAX_G1:
            raise ValueError(
                f"g1 = {g1} is more than {MAX_G1}: a pair's queries are answered from a "
                "g1 x g1 matrix. Pass a smaller granularity."
            )
        if d < 2:
            return g1, None
        if g2 is None:
            raise ValueError("method='hdg' over several columns needs g2 as well.")
        if g1 % g2:
            raise ValueError(
                f"granularity=({g1}, {g2}): g2 must divide g1 (a 2-D bin is the union of "
                "g1 / g2 consecutive 1-D bins)."
            )
        return g1, g2

    def _cell_mask(self, grid, n_bins):
        if self.sensitive_ranges_ is None:
            return None
        shape = (n_bins,) * len(grid)
        out = np.zeros(shape, dtype=bool)
        for axis, p in enumerate(grid):
            column = self.columns_[p]
            ranges = self.sensitive_ranges_.get(column)
            if ranges is None:
                mask = np.ones(n_bins, dtype=bool)
            else:
                low, high = self.bounds_[column]
                mask = sensitive_bins(ranges, low, high, n_bins)
            view = [1] * len(shape)
            view[axis] = n_bins
            out = out | mask.reshape(view)
        return out.ravel()

    def _resolve_bounds(self, X):
        """(columns, {column: (low, high)}, the input as a named frame or None)."""
        frame = None if X is None else self._frame(X, reset=True)
        if isinstance(self.bounds, dict):
            if not self.bounds:
                raise ValueError("bounds must name at least one column.")
            bad = [c for c in self.bounds if not isinstance(c, str) or not c]
            if bad:
                raise ValueError(
                    "The columns named by bounds must be non-empty strings (name the "
                    "columns of an array x0, x1, ...)."
                )
            columns = list(self.bounds)
            bounds = {c: check_bounds(self.bounds[c], name=f"bounds[{c!r}]") for c in columns}
            if frame is not None:
                frame = self._by_position(frame, X, columns)
                absent = [c for c in columns if c not in frame.columns]
                if absent:
                    raise KeyError(
                        f"Columns {absent} of bounds are not in X (its columns: "
                        f"{list(map(str, frame.columns))[:20]}); an array's columns are "
                        "named x0, x1, ..."
                    )
            else:
                self.n_features_in_ = len(columns)
                self.feature_names_in_ = np.asarray(columns, dtype=object)
            self._fitted_without_data = frame is None
            return columns, bounds, frame
        self._fitted_without_data = False
        if frame is None:
            raise ValueError(
                "bounds='auto' learns the ranges from X, so X is required; pass "
                "bounds={column: (low, high)} to fit without data."
            )
        columns = [str(c) for c in frame.columns]
        if len(set(columns)) != len(columns):
            raise ValueError("X has two columns with the same name.")
        self.columns_ = columns
        values = self._values(frame, clip=False)
        bounds = {}
        for j, c in enumerate(columns):
            low, high = float(values[:, j].min()), float(values[:, j].max())
            if not low < high:
                raise ValueError(
                    f"Column {c!r} holds a single distinct value (n_samples = "
                    f"{len(frame)}); a range needs two. Pass bounds={{column: (low, high)}}."
                )
            bounds[c] = (low, high)
        warnings.warn(
            f"bounds='auto' learns the ranges of {columns[:20]} from the private data, "
            "which reveals their smallest and largest values. Pass the public ranges as "
            "bounds={column: (low, high)} in a deployment.",
            PrivacyLeakWarning,
            stacklevel=3,
        )
        return columns, bounds, frame

    def _resolve_sensitive(self, columns, bounds):
        if self.sensitive_ranges is None:
            return None
        unknown = [c for c in self.sensitive_ranges if c not in bounds]
        if unknown:
            raise ValueError(
                f"sensitive_ranges names {len(unknown)} column(s) that are not privatized: "
                f"{[str(c) for c in unknown][:10]}; its keys must be among {columns[:20]}."
            )
        if not self.sensitive_ranges:
            raise ValueError(
                "sensitive_ranges is empty, which makes every value of every column "
                "sensitive: that is plain LDP; pass sensitive_ranges=None."
            )
        out = {}
        for c in columns:
            if c in self.sensitive_ranges:
                low, high = bounds[c]
                out[c] = check_column_ranges(self.sensitive_ranges[c], low, high, c)
        return out

    # ------------------------------------------------------------ input
    # What the shared input reading (_OneReportPrivatizerMixin._frame) needs.
    _input_kind = "numbers"
    _input_dtype = "numeric"
    _assignment_key = ASSIGNMENT_KEY
    _noise_key = NOISE_KEY

    def _values(self, frame, *, clip=True, checked=True):
        """The privatized columns as floats (n, d): finite, clipped to the bounds.

        ``checked=False``: the columns as floats, as they are (for a caller
        that checks them in its own pass, and calls again if one is not
        within the bounds).
        """
        missing = [c for c in self.columns_ if c not in frame.columns]
        if missing:
            raise KeyError(
                f"Columns {missing[:10]} are not in X (its columns: "
                f"{list(map(str, frame.columns))[:20]}); an array's columns are named "
                "x0, x1, ..."
            )
        sub = frame[self.columns_]
        if sub.shape[1] != len(self.columns_):
            raise ValueError("X has several columns with the same name.")
        _check_frame_dtypes(sub)
        try:
            # A view of a frame of one float block (read only here: copied
            # before clipping), else a new array.
            values = sub.to_numpy(dtype=float)
        except (TypeError, ValueError):
            raise TypeError(
                "X must hold numbers in the privatized columns; convert them "
                "(pd.to_numeric) or privatize categories with MarginalPrivatizer."
            ) from None
        if not checked:
            values = values.view()
            values.flags.writeable = False
            return values
        if not np.isfinite(values).all():  # one pass; the details only on failure
            nan = np.isnan(values)
            if nan.any():
                worst = [c for c, k in zip(self.columns_, nan.sum(axis=0), strict=True) if k]
                raise ValueError(
                    f"X has {int(nan.sum())} missing values (NaN) in the columns "
                    f"{worst[:10]}; impute or drop them: a range query counts the users "
                    "of every row."
                )
            raise ValueError(
                f"X contains {int(np.isinf(values).sum())} infinite values. Replace them "
                "(e.g. by the bounds) or drop them."
            )
        copied = False
        if clip:
            for j, c in enumerate(self.columns_):
                low, high = self.bounds_[c]
                column = values[:, j]
                below, above = int((column < low).sum()), int((column > high).sum())
                if below or above:
                    warn_clipped([(below, above)], (low, high), [c], len(column))
                    if not copied:  # never the caller's data
                        values, copied = values.copy(), True
                    np.clip(values[:, j], low, high, out=values[:, j])
        if not copied:  # maybe a view of X: read, never written
            values = values.view()
            values.flags.writeable = False
        return values

    # ------------------------------------------------------------ transform
    def _row_codes(self, frame):
        """What ``transform`` samples from: the finest bins, their hash input, its range."""
        # Binned in the same pass that checks the values (large jobs), else,
        # or when one is not a number within its bounds, checked (clipped,
        # with a warning) first.
        fine = self.channel_._fine_codes_within(self._values(frame, checked=False))
        if fine is None:
            fine = self.channel_.fine_codes(self._values(frame))
        # (fine.T: the bins are column-major, hashed without a copy)
        return fine, fine.T, self.channel_.fine_bins

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = True
        tags.transformer_tags.preserves_dtype = []
        tags.requires_fit = True
        return tags
