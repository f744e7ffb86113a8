"""How a user with several attributes reports them: split, sample, sample+fake.

The machinery behind ``DataFramePrivatizer(strategy=...)``:

* ``"split"``: every attribute is reported through its mechanism (the budgets
  add up);
* ``"sample"`` (SMP, Wang et al. ICDE 2019): each user reports one attribute,
  drawn uniformly at random, through its mechanism; the report table names
  the sampled attribute and leaves the others missing;
* ``"sample+fake"`` (RS+FD, Arcolezi et al. CIKM 2021): the sampled attribute
  is reported with an amplified budget, every other one with a fake report
  drawn independently of the data, and the table does not say which one is
  real.

The per-attribute channels (:class:`~sklearn_uldp.mechanisms.SampledChannel`,
:class:`~sklearn_uldp.mechanisms.SampledFakeChannel` and their numeric twins,
built by each column's channel: ``sampled_channel``, ``sampled_fake_channel``)
describe one column of such a table, so the estimators need nothing else; the
row's privacy is computed exactly here from each column's likelihood-ratio
classes. Every family-specific step (checking a column, the fake reports and
their law) is a method of the column's mechanism or channel
(``docs/architecture.md``, "The contract each new family implements").
"""

from __future__ import annotations

import copy
import warnings

import numpy as np
import pandas as pd
import scipy.sparse as sp
from sklearn import config_context

from ..estimators._compact import compact_layout, compact_refusal, encode_cells
from ..estimators._table import missing_kind
from ..exceptions import ClippingWarning, PrivacyLeakWarning
from ..mechanisms._attribute_sampling import _guarantees_of, calibrate_fake_epsilons
from ..mechanisms._memo import is_memoized
from ..utils._random import is_secure, transform_generator

__all__ = ["STRATEGIES", "SAMPLING_KEY"]

STRATEGIES = ("split", "sample", "sample+fake")

#: Name keying the seeded stream of the sampled attribute's index (the
#: mechanisms' streams are keyed by their columns' names).
SAMPLING_KEY = "(sampled attribute)"


# ------------------------------------------------------------------ fitting
def check_report_format(priv):
    """``report_format="compact"`` is SMP's (checked before anything is fitted)."""
    if priv.report_format == "compact" and priv.strategy != "sample":
        why = {
            "sample+fake": (
                "every user sends a report of every column (the real one among "
                "fakes, so that the table does not show which is real): there is "
                "no missing report to leave out, and naming the sampled column "
                "would undo the fakes"
            ),
        }.get(
            priv.strategy,
            "every user reports every column (or one marginal, which has its own two-column table)",
        )
        raise ValueError(
            f"report_format='compact' writes one report per row (the sampled "
            f"column's) and is for strategy='sample' only; under "
            f"strategy={priv.strategy!r} {why}. Use report_format='wide' (the default)."
        )


def check_strategy(priv):
    """Validate the strategy parameters against the fitted mechanisms."""
    names = list(priv.mechanisms_)
    d = len(names)
    if d < 2:
        raise ValueError(
            f"strategy={priv.strategy!r} samples one of the privatized columns per "
            f"user, but only {d} column is privatized ({names}). With one column "
            "there is nothing to sample: use strategy='split' (the default)."
        )
    for name, mech in priv.mechanisms_.items():
        channel = mech.channel_
        # A guarantee that is not (X_S, epsilon)-ULDP or LDP: the row's
        # guarantee under sampling cannot be stated as one budget per attribute.
        notion = channel.guarantee_notion
        if notion is not None:
            raise ValueError(
                f"Column {name!r} uses {type(mech).__name__}, whose guarantee is "
                f"{notion}, not a budget over a sensitive set: its sensitive set is "
                "of another type than the LDP/ULDP columns', and the row's "
                f"guarantee under strategy={priv.strategy!r} has no single budget "
                "per attribute. Use strategy='split' for it, or an LDP/ULDP "
                "mechanism (RandomizedResponse, UtilityOptimizedRR, RAPPOR, ...)."
            )
        if priv.strategy == "sample+fake" and is_memoized(mech):
            raise ValueError(
                f"Column {name!r} uses {type(mech).__name__}, which memoizes its "
                "reports over rounds, and strategy='sample+fake' cannot hide which "
                "column is real across rounds: the real column's reports repeat a "
                "permanent answer while fresh fakes do not, so a collector comparing "
                "rounds finds it, and the amplification (a one-round argument) is "
                "lost. Use strategy='sample' (the sampled column is then memoized "
                "too) or 'split'."
            )
        if priv.strategy == "sample+fake":
            refusal = mech._fake_refusal(_fake_of(priv, name), name)
            if refusal is not None:
                raise ValueError(refusal)
    if isinstance(priv.fake, dict):
        unknown = sorted(set(priv.fake) - set(names), key=str)
        if unknown:
            raise ValueError(
                f"fake names columns {unknown} that are not privatized; the privatized "
                f"columns are {names}."
            )


def _fake_of(priv, name):
    fake = priv.fake
    if isinstance(fake, dict):
        return fake.get(name, "auto")
    return fake


def resolved_fakes(priv):
    """Name -> the fake law of each column, as chosen at ``fit``."""
    guarantees = priv._strategy_guarantees or {}
    stored = guarantees.get("fakes")
    if stored is not None:
        return dict(stored)
    return _choose_fakes(priv)


def _choose_fakes(priv):
    """The fake law of each column; "auto": the smallest closed-form variance.

    Compared at the paper's inner budget, by the summed variance of the
    column's unbiased estimate at p(x) = 0 for every x (the null variance,
    as Arcolezi et al.'s adaptive RS+FD compares GRR and OUE-z).
    """
    d = len(priv.mechanisms_)
    out = {}
    for name, mech in priv.mechanisms_.items():
        fake = _fake_of(priv, name)
        kinds = mech.channel_.fake_kinds()
        if fake != "auto":
            out[name] = fake
        elif len(kinds) == 1:
            out[name] = kinds[0]
        else:
            trial = copy.copy(mech)
            trial.epsilon = float(np.log1p(d * np.expm1(mech.channel_.epsilon)))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                base = trial._make_channel()
            variance = {
                kind: float(np.sum(base.sampled_fake_channel(d, kind).null_variance(1)))
                for kind in kinds
            }
            out[name] = min(kinds, key=lambda kind: variance[kind])
    return out


def fit_strategy(priv):
    """After the mechanisms are fitted: inner budgets, channels and guarantees."""
    check_strategy(priv)
    mechanisms = priv.mechanisms_
    names = list(mechanisms)
    d = len(names)
    targets = np.array([float(m.channel_.epsilon) for m in mechanisms.values()])
    if priv.strategy == "sample":
        channels = {}
        for name, mech in mechanisms.items():
            try:
                channels[name] = mech.channel_.sampled_channel(d)
            except ValueError as exc:
                raise ValueError(f"Column {name!r}: {exc}") from None
        if priv.report_format == "compact":
            for name, channel in channels.items():
                refusal = compact_refusal(name, channel)
                if refusal is not None:
                    raise ValueError(refusal)
        return channels, {"attribute": targets, "row": float(targets.max())}
    fakes = _choose_fakes(priv)
    kinds = [fakes[n] for n in names]
    mechs = list(mechanisms.values())
    classes_at = [m._fake_classes_at(f) for m, f in zip(mechs, kinds, strict=True)]
    inner = calibrate_fake_epsilons(
        [f for f, _ in classes_at],
        targets,
        amplification=priv.amplification,
        closed_form=all(closed for _, closed in classes_at),
    )
    for mech, eps in zip(mechs, inner, strict=True):
        # The fitted clone now runs at the inner budget: its channel is the
        # real reports' (no warning per column: they were given at fit).
        mech.epsilon = float(eps)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            mech.channel_ = mech._make_channel()
    attribute, row = _guarantees_of(
        [m.channel_.fake_ratio_classes(f) for m, f in zip(mechs, kinds, strict=True)]
    )
    over = attribute > targets * (1 + 1e-9)
    if over.any():
        worst = int(np.argmax(attribute - targets))
        warnings.warn(
            f"amplification='paper' gives {sum(over)} attribute(s) a larger budget "
            f"than their mechanism's epsilon: {names[worst]!r} gets "
            f"{attribute[worst]:.4g} for {targets[worst]:g} (columns of different "
            "domains, mechanisms or budgets, or random fakes with unary encoding). "
            "The exact budgets are in attribute_epsilons_; amplification='exact' "
            "keeps every attribute's epsilon.",
            PrivacyLeakWarning,
            stacklevel=4,
        )
    channels = {
        name: m.channel_.sampled_fake_channel(d, fakes[name])
        for name, m in zip(names, mechs, strict=True)
    }
    return channels, {"attribute": attribute, "row": row, "targets": targets, "fakes": fakes}


# ------------------------------------------------------------- randomness
def sampling_generator(priv, partition_seed=None):
    """The generator of one call's sampled indices (fresh, secure or seeded).

    ``partition_seed``: ``(seed,)`` for a Dask partition (its own stream of
    the partition's seed), None for a call on the privatizer itself.
    """
    if partition_seed is not None:  # a Dask partition's stream
        return transform_generator(partition_seed[0], column=SAMPLING_KEY, call=0)
    rs = priv.random_state
    if rs is None:
        secure = [is_secure(m.random_state) for m in priv.mechanisms_.values()]
        return transform_generator("secure" if secure and all(secure) else None)
    if is_secure(rs):
        return transform_generator(rs)
    counter = priv._sampling_calls
    if counter is None:  # random_state was set after fit
        counter = priv._sampling_calls = [0]
    call = counter[0]
    counter[0] += 1
    return transform_generator(rs, column=SAMPLING_KEY, call=call)


# ----------------------------------------------------------------- reports
def _rows(X, rows, positions):
    if isinstance(X, pd.DataFrame):
        return X.iloc[rows, positions]
    return np.asarray(X)[np.ix_(rows, positions)]


def _as_array(out):
    if sp.issparse(out):
        return out.toarray()
    if isinstance(out, pd.DataFrame):
        return out.to_numpy()
    return np.asarray(out)


def _privatized(mech, X_part, user_keys=None):
    """Reports of ``mech`` on some rows, as a plain (rows, width) array
    (a memoized mechanism's with the keys of those rows' users)."""
    params = {} if user_keys is None else {"user_secrets": user_keys}
    with config_context(transform_output="default"), warnings.catch_warnings():
        # A numeric column's clipping was counted on the whole column.
        warnings.filterwarnings("ignore", category=ClippingWarning)
        return _as_array(mech.transform(X_part, **params))


def _fakes(mech, fake, m, X_one, name):
    """``m`` fake reports of a column, as ``transform`` would format them."""
    rng = mech._transform_rng(None, column=f"{name}{SAMPLING_KEY}fake")
    return mech._fake_reports(fake, m, rng, X_one)


def transform_sampled(priv, X, keys=None, partition_seed=None, *, checked=False):
    """Privatize a table with ``priv.strategy`` "sample" or "sample+fake".

    ``keys`` (the users' keys of one call, see ``DataFramePrivatizer``):
    the memoized columns are privatized with their keys, and the sampled
    column is derived from them (the same in every round).
    ``partition_seed``: see :func:`sampling_generator`.
    ``checked``: every value of the categorical columns of ``X`` has just
    been checked against its domain (``fit_transform``: the fit read the
    whole columns), so only the sampled rows are encoded.
    """
    X = priv._check_input(X)
    positions = priv._fitted_positions(X)
    numeric = {n for n, m in priv.mechanisms_.items() if not m._categorical_input}
    X = priv._prepared(X, positions, numeric)
    n = X.shape[0]
    names = list(priv.mechanisms_)
    d = len(names)
    if keys is not None:
        # Memoized too: a user who reported another column in every round
        # would end up spending every column's permanent budget.
        sampled = keys.sampled(names)
    else:
        sampled = sampling_generator(priv, partition_seed).integers(0, d, size=n)
    fakes = resolved_fakes(priv) if priv.strategy == "sample+fake" else None
    sampled_rows = _rows_by_column(sampled, d)
    blocks = []
    for i, name in enumerate(names):
        mech = priv.mechanisms_[name]
        pos = positions[name]
        # Every value is checked against the domain, sampled or not (an
        # unknown category is an error, as under "split", never ignored).
        whole = X.iloc[:, pos] if isinstance(X, pd.DataFrame) else np.asarray(X)[:, pos]
        rows = sampled_rows[i]
        user_keys = None
        if keys is not None and name in keys.names:
            user_keys = keys.column(name)[rows]
        real = None
        if user_keys is None and rows.size:
            # One read of the column: its codes check it and give the rows'
            # (None: the family privatizes through its own transform).
            real = mech._sampled_reports(whole, rows, checked=checked)
        if real is not None:
            real = _as_array(real)
        else:
            mech._check_whole_column(whole, name)
            if rows.size:
                real = _privatized(mech, _rows(X, rows, pos), user_keys)
        if fakes is None:
            blocks.append(_Block(name, mech, n, rows, real, None, None))
            continue
        others = np.flatnonzero(sampled != i)
        fake = (
            _fakes(mech, fakes[name], others.size, _rows(X, [0], pos), name)
            if others.size
            else None
        )
        blocks.append(_Block(name, mech, n, rows, real, others, fake))
    return blocks, sampled


def compact_block(channels, blocks, n):
    """The report block of a compact table: row i holds the report of its
    sampled column in that column's channel's codes, in the first cells (the
    others zero). One (n, w) array, w the widest column's report: its size
    and the time to fill it do not grow with the number of columns."""
    widths, dtype = compact_layout(channels)
    out = np.zeros((n, max(widths.values())), dtype=dtype)
    for block in blocks:
        if block.real is None or not block.rows.size:
            continue
        cells = encode_cells(channels[block.name], block.real, dtype)
        out[block.rows, : cells.shape[1]] = cells
    return out


def narrow_attribute_codes(sampled, d):
    """The sampled columns' indices in the narrowest signed integer (the
    codes of the sampled column's ``category`` dtype)."""
    dtype = np.int8 if d <= 127 else np.int16 if d <= 32767 else np.int32
    return np.asarray(sampled).astype(dtype, copy=False)


def _rows_by_column(sampled, d):
    """The rows that sampled each column, ascending (``np.flatnonzero(sampled
    == i)`` for every i): one stable sort of the narrow column numbers
    (a radix sort) instead of d passes over the n rows."""
    sampled = np.asarray(sampled)
    narrow = np.uint8 if d <= 1 << 8 else np.uint16 if d <= 1 << 16 else sampled.dtype
    order = np.argsort(sampled.astype(narrow, copy=False), kind="stable")
    ends = np.cumsum(np.bincount(sampled, minlength=d))
    return np.split(order, ends[:-1])


class _Block:
    """One column's reports: real ones on ``rows``, fakes or nothing elsewhere."""

    def __init__(self, name, mech, n, rows, real, others, fake):
        self.name, self.mech, self.n = name, mech, n
        self.rows, self.real, self.others, self.fake = rows, real, others, fake

    def _template(self):
        return self.real if self.real is not None else self.fake

    def width(self):
        template = self._template()
        if template is not None:
            return template.shape[1]
        return len(self.mech.get_feature_names_out())

    def dense(self):
        """The block as one array (missing values as None/NaN under "sample")."""
        template = self._template()
        if self.others is not None:  # sample+fake: every row has a report
            out = np.empty((self.n, template.shape[1]), dtype=template.dtype)
            if self.real is not None:
                out[self.rows] = self.real
            if self.fake is not None:
                out[self.others] = self.fake.astype(template.dtype, copy=False)
            return out
        width = self.width()
        if template is None:
            return np.full((self.n, width), None, dtype=object)
        dtype = np.float64 if template.dtype.kind in "biuf" else object
        out = np.full((self.n, width), np.nan if dtype is np.float64 else None, dtype=dtype)
        out[self.rows] = self.real
        return out

    def series(self, names):
        """The block as pandas columns (nullable dtypes where reports are missing)."""
        if self.others is not None:
            data = self.dense()
            return {c: data[:, j] for j, c in enumerate(names)}
        present = np.zeros(self.n, dtype=bool)
        present[self.rows] = True
        kind = missing_kind(self.mech.channel_)
        if kind in ("UInt8", "Int64") and len(names) > 1:
            return _masked_block(self.real, self.rows, present, self.n, kind, names)
        out = {}
        for j, c in enumerate(names):
            values = None if self.real is None else self.real[:, j]
            out[c] = _missing_column(values, self.rows, present, self.n, kind)
        return out


def _masked_block(real, rows, present, n, kind, names):
    """The nullable integer columns of a block of report columns: one
    (width, n) array of values and one of masks, filled with one scatter and
    one broadcast, each column a row of them (a view: no copy per column).
    With many report columns (SMP over d attributes of k categories: d k
    columns of n entries) the per-column allocations and passes were most
    of the privatization."""
    dtype = np.uint8 if kind == "UInt8" else np.int64
    width = len(names)
    data = np.zeros((width, n), dtype=dtype)
    if real is not None:
        data[:, rows] = real.T
    mask = np.empty((width, n), dtype=bool)
    np.logical_not(present, out=mask[0])
    mask[1:] = mask[0]
    return {c: pd.arrays.IntegerArray(data[j], mask[j]) for j, c in enumerate(names)}


def _missing_column(values, rows, present, n, kind):
    """A column of ``n`` entries, ``values`` on ``rows`` and missing elsewhere."""
    if kind == "float64":
        data = np.full(n, np.nan)
        if values is not None:
            data[rows] = values
        return data
    if kind in ("UInt8", "Int64", "boolean"):
        dtype = {"UInt8": np.uint8, "Int64": np.int64, "boolean": bool}[kind]
        data = np.zeros(n, dtype=dtype)
        if values is not None:
            data[rows] = values
        if kind == "boolean":
            return pd.arrays.BooleanArray(data, ~present)
        return pd.arrays.IntegerArray(data, ~present)
    data = np.full(n, None, dtype=object)
    if values is not None:
        data[rows] = values
    return data
