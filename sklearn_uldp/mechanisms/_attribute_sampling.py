"""The channel of one attribute's reports when each user reports a sampled attribute.

A user holds d attributes (one table row). Instead of privatizing each of them
with a share of the budget ("split"), the user can report **one** attribute,
drawn uniformly at random, with the whole budget:

* **SMP** (Wang et al., "Collecting and analyzing multidimensional data with
  local differential privacy", ICDE 2019): the report is the sampled
  attribute's index and its privatized value; the other attributes have no
  report;
* **RS+FD** (Arcolezi, Couchot, Al Bouna & Xiao, "Random Sampling Plus Fake
  Data: Multidimensional Frequency Estimates With Local Differential
  Privacy", CIKM 2021): the sampled attribute is privatized with an amplified
  budget epsilon' and every other attribute gets a *fake* report, drawn
  independently of the data, so that the collector does not see which one is
  real.

Seen from one attribute's column, either strategy is a channel of its own,
and every estimator of the package works on it unchanged:

* :class:`SampledChannel` (SMP): the mechanism's channel for the users who
  sampled the attribute, no report (a missing value) for the others. The
  sampled index is independent of the data (an ancillary statistic), so the
  estimators condition on it: the statistics count the reports present.
* :class:`SampledFakeChannel` (RS+FD): the mixture
  ``Q'(y|x) = Q(y|x) / d + (1 - 1/d) F(y)`` of the mechanism's channel and the
  law F of the fake reports.

The fake law is the mechanism applied to a public input law:

* ``"random"``: a uniformly random *sensitive* value (every value for an LDP
  mechanism: RS+FD[GRR] and RS+FD[OUE-r]);
* ``"zero"`` (unary encoding only): no value at all, the all-zero vector
  perturbed (RS+FD[OUE-z]).

Both only produce **protected** outputs: for a utility-optimized mechanism a
sensitive input never produces an invertible output (ULDP's first condition),
and the zero vector sets no non-sensitive bit. So a fake report never
pretends to reveal a non-sensitive value. The privacy of the whole row, and
the budget epsilon' that keeps the promised per-attribute budget, are
computed exactly by :func:`fake_data_guarantees` and
:func:`calibrate_fake_epsilons` (see ``docs/many_attributes.md`` for the
derivation). ``DataFramePrivatizer(strategy="sample+fake")`` uses them.
"""

from __future__ import annotations

import copy
import math
import numbers
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
import scipy.sparse as sp

from ..exceptions import ReportMismatchError
from ..utils._validation import check_channel_categories, is_missing
from ._channel import (
    _MISSING,
    FAKE_REPORT_LAWS,
    CategoricalChannel,
    Channel,
    ReportStatistics,
    _is_missing_scalar,
    histogram_em_gradient,
)
from ._randomized_response import UtilityOptimizedRRChannel
from ._rappor import RAPPORChannel, UnaryEncodingChannel, _bit_rows, basic_rappor_theta

__all__ = [
    "SampledChannel",
    "SampledFakeChannel",
    "FAKE_KINDS",
    "amplified_epsilon",
    "supported_fakes",
    "fake_data_guarantees",
    "calibrate_fake_epsilons",
]

#: The fake-report laws: the mechanism applied to a uniformly random
#: sensitive value ("random"), or to no value (unary encoding: "zero").
FAKE_KINDS = ("random", "zero")

#: Largest channel matrix (inputs x outputs) used for the fake law of a
#: mechanism without a closed form.
_MAX_FAKE_MATRIX = 1 << 20

#: Relative tolerance of the calibration: an attribute's guarantee may exceed
#: its target by this relative amount (round-off of the closed forms), far
#: below the slack the exact privacy checks allow.
_CALIBRATION_RTOL = 1e-10


def amplified_epsilon(epsilon: float, n_attributes: int) -> float:
    """The budget RS+FD gives the sampled attribute: ln(d (e^eps - 1) + 1).

    Arcolezi et al. (CIKM 2021) privatize the sampled attribute with this
    epsilon' and claim epsilon for the row, by amplification by sampling
    (Li, Qardaji & Su 2012) over rows that differ in **one** attribute. It is
    exact for identical columns with k-RR ("random" fakes) or unary encoding
    ("zero" fakes); for other cases
    ``DataFramePrivatizer(strategy="sample+fake", amplification="exact")``
    finds the budgets that keep the claim.

    Parameters
    ----------
    epsilon : float
        The per-attribute budget (> 0).
    n_attributes : int
        The number d of attributes each user holds (>= 1).

    Returns
    -------
    epsilon_prime : float

    Examples
    --------
    >>> from sklearn_uldp.mechanisms import amplified_epsilon
    >>> round(amplified_epsilon(1.0, 3), 4)
    1.8172
    >>> amplified_epsilon(1.0, 1)
    1.0
    """
    eps = float(epsilon)
    if not (math.isfinite(eps) and eps > 0):
        raise ValueError(f"epsilon must be a finite number > 0, got {epsilon!r}.")
    d = _check_n_attributes(n_attributes, minimum=1)
    return float(math.log1p(d * math.expm1(eps))) if d > 1 else eps


def _check_n_attributes(value, minimum=2):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise ValueError(
            f"n_attributes must be an integer >= {minimum} (the number of attributes "
            f"each user holds), got {value!r}."
        )
    return int(value)


# ------------------------------------------------------------ the fake laws
def _is_unary(channel):
    # The exact classes: subclasses (uBD, uSS) draw their bits otherwise.
    return type(channel) in (UnaryEncodingChannel, RAPPORChannel)


def _is_rr(channel):
    return isinstance(channel, UtilityOptimizedRRChannel)


def _small_categorical(channel):
    return (
        isinstance(channel, CategoricalChannel)
        and channel.n_categories * channel.n_outputs <= _MAX_FAKE_MATRIX
    )


def supported_fakes(channel: Channel) -> tuple[str, ...]:
    """The fake-report laws a channel supports (empty: none).

    Parameters
    ----------
    channel : Channel

    Returns
    -------
    kinds : tuple of str
        ``"zero"`` first for unary encoding (RAPPOR, OUE, uRAP, uOUE: the
        smaller variance), then ``"random"``; ``("random",)`` for k-RR, uRR
        and other one-symbol channels with a small output space; ``()``
        otherwise, and for a channel without a sensitive category (a fake is
        the report of a sensitive value).

    Examples
    --------
    >>> from sklearn_uldp.mechanisms import RAPPORChannel, RandomizedResponseChannel
    >>> from sklearn_uldp.mechanisms import supported_fakes
    >>> supported_fakes(RAPPORChannel([0, 1, 2], 1.0, theta=0.5))
    ('zero', 'random')
    >>> supported_fakes(RandomizedResponseChannel([0, 1, 2], 1.0))
    ('random',)
    """
    if not np.any(channel.sensitive_mask):
        return ()  # a fake is the report of a sensitive value: there is none (NonPrivate)
    if _is_unary(channel):
        return ("zero", "random")
    if _is_rr(channel) or _small_categorical(channel):
        return ("random",)
    return ()


def _check_fake(channel, fake, what="this mechanism"):
    kinds = supported_fakes(channel)
    if fake in kinds:
        return fake
    if not kinds:
        raise ValueError(
            f"{what} ({type(channel).__name__}) cannot send fake reports: fake data "
            "needs a mechanism whose fake law and privacy are known in closed form "
            "or from a small channel matrix (k-RR, uRR, RAPPOR/OUE, uRAP/uOUE, or a "
            "one-symbol mechanism with a small output space). Use "
            "strategy='sample' (no fake data) or another mechanism."
        )
    raise ValueError(
        f"fake={fake!r} is not available for {what} ({type(channel).__name__}); it "
        f"supports {list(kinds)}. 'zero' (the perturbed all-zero vector) exists "
        "only for unary encoding (RAPPOR, OUE, uRAP, uOUE); 'random' is the "
        "mechanism applied to a random sensitive value. Pass fake='auto' to pick "
        "each column's best."
    )


def _fake_input(channel):
    """pi: the uniform law over the sensitive categories (every one for LDP)."""
    mask = np.asarray(channel.sensitive_mask, dtype=bool)
    return mask / mask.sum()


def _zero_row(channel, realized=False):
    """Q(y | no value) of unary encoding over its 2^k outputs (small k)."""
    Y = channel.output_labels().astype(bool)
    d1 = channel.d1
    p_one = np.where(channel.sensitive_mask, d1, 0.0)
    return np.prod(np.where(Y, p_one, 1.0 - p_one), axis=1)


def _fake_row(channel, fake, matrix):
    """F over the outputs, from the (k, n_outputs) matrix of the channel."""
    if fake == "zero":
        return _zero_row(channel)
    return _fake_input(channel) @ matrix


def sample_fakes(channel: Channel, fake: str, n: int, rng: np.random.Generator) -> Any:
    """Draw ``n`` fake reports (the channel's outputs, as its ``sample`` returns them).

    Parameters
    ----------
    channel : Channel
    fake : {"random", "zero"}
    n : int
    rng : numpy.random.Generator

    Returns
    -------
    outputs : ndarray
        Output codes (one-symbol channels) or an (n, k) uint8 bit matrix.
    """
    sensitive = np.flatnonzero(channel.sensitive_mask)
    codes = sensitive[rng.integers(0, sensitive.size, size=n)]
    out = channel.sample(codes, rng)
    if fake == "zero":
        if sp.issparse(out):  # pragma: no cover - the channels sample dense here
            out = out.toarray()
        # The input's own bit was drawn with theta: redrawn like every other
        # sensitive bit (Bernoulli(d1)), it is the perturbed zero vector, and
        # the non-sensitive bits of a sensitive input are 0 already.
        out[np.arange(n), codes] = rng.random(n) < channel.d1  # type: ignore[attr-defined]
    return out


def _fake_frequency(channel, fake):
    """Expected frequency of each category's linear statistic on fake reports."""
    if fake == "zero":
        return np.where(channel.sensitive_mask, channel.d1, 0.0)
    return np.asarray(channel.expected_frequency(_fake_input(channel)), dtype=float)


def _rr_classes(epsilon, s):
    """(R+, R-) of uRR with s sensitive values and random fakes (uniform on X_S).

    F = 1/s on X_S and Q(y|x) = c1 if x = y, c2 otherwise (k >= 2).
    """
    z = math.exp(-epsilon)
    den = 1.0 + (s - 1) * z
    return np.array([s / den]), np.array([s * z / den])


def _unary_classes(epsilon, theta, s, k, fake):
    """(R+, R-) of uRAP (s sensitive of k categories), by set sensitive bits c.

    With d2 = (1 - theta) + theta e^-eps, the likelihood ratio against the
    zero vector is a = theta / d1 = d2 e^eps for the true sensitive bit set,
    b = (1 - theta) / (1 - d1) = d2 for it unset (and for a non-sensitive
    input); random fakes divide by their mean over X_S,
    (c a + (s - c) b) / s.
    """
    b = (1.0 - theta) + theta * math.exp(-epsilon)
    a = b * math.exp(epsilon)
    c = np.arange(s + 1)
    plus = np.where(c >= 1, a, b)
    minus = np.where((c < s) | (k > s), b, a)
    if fake == "zero":
        return plus, minus
    avg = (c * a + (s - c) * b) / s
    return plus / avg, minus / avg


def _ratio_classes(channel, fake):
    """(R+, R-) over the classes of protected outputs y that fakes produce.

    ``r(y | x) = Q(y | x) / F(y)`` is the likelihood ratio of a real report
    against a fake one; ``R+(y) = max_x r``, ``R-(y) = min_x r``. The row's
    privacy (:func:`fake_data_guarantees`) depends on the channel only
    through these pairs. Outputs with the same pair form one class.
    """
    if _is_rr(channel):
        return _rr_classes(channel.epsilon, int(np.sum(channel.sensitive_mask)))
    if _is_unary(channel):
        S = np.asarray(channel.sensitive_mask, dtype=bool)
        return _unary_classes(channel.epsilon, channel.theta, int(S.sum()), S.size, fake)
    Q = channel.matrix()
    F = _fake_row(channel, fake, Q)
    protected = np.asarray(channel.protected_outputs(), dtype=bool)
    produced = protected & (Q.max(axis=0) > 0)
    if np.any(F[produced] <= 0):
        raise ValueError(
            f"The fake reports of {type(channel).__name__} never produce some of "
            "its protected outputs, so a real report of those would show which "
            "attribute is real: this mechanism cannot send fake data."
        )
    ratio = Q[:, produced] / F[produced]
    return ratio.max(axis=0), ratio.min(axis=0)


def fake_classes_at(mech, fake):
    """``(epsilon -> (R+, R-), closed_form)`` of a fitted categorical mechanism.

    Closed forms for uRR/k-RR and for unary encoding with a fixed theta;
    otherwise the channel of the mechanism at each budget tried (a copy of
    it with another epsilon), from its matrix.
    """
    channel = mech.channel_
    mask = np.asarray(channel.sensitive_mask, dtype=bool)
    s, k = int(mask.sum()), mask.size
    if isinstance(channel, UtilityOptimizedRRChannel):
        return (lambda eps: _rr_classes(eps, s)), True
    theta = getattr(mech, "theta", "optimal")
    if type(channel) in (UnaryEncodingChannel, RAPPORChannel) and not isinstance(theta, str):
        if theta is None:
            return (lambda eps: _unary_classes(eps, basic_rappor_theta(eps), s, k, fake)), True
        return (lambda eps: _unary_classes(eps, float(theta), s, k, fake)), True

    def built(eps):
        trial = copy.copy(mech)
        trial.epsilon = eps
        return _ratio_classes(trial._make_channel(), fake)

    return built, False


def fake_data_guarantees(
    channels: Sequence[Channel], fakes: Sequence[str]
) -> tuple[np.ndarray, float]:
    """Exact privacy of a row under RS+FD: per attribute, and for the whole row.

    Each user samples one of the d columns uniformly, reports it through its
    channel (at the budget the channel has) and sends a fake report, from
    the law named in ``fakes``, for every other column. For a row output y
    whose reports are all protected,
    ``P(y | x) = (prod_l F_l(y_l)) (1/d) sum_j r_j(y_j | x_j)`` with
    ``r_j = Q_j / F_j``. Hence, with ``rho_l = min r_l``:

    * rows differing in attribute i only: the loss is at most
      ``max_y ln (R+_i(y) + S_i) / (R-_i(y) + S_i)``, ``S_i = sum_{l != i} rho_l``
      (attained: the other reports can all be at their minimum ratio);
    * any two rows: ``max_y ln sum_l R+_l(y_l) / sum_l R-_l(y_l)`` (a
      fractional program, solved exactly by Dinkelbach's iteration).

    An output with an unprotected report (a non-sensitive value of a
    utility-optimized column; fakes are always protected) reveals that the
    column was sampled and its value, which is not sensitive, and nothing
    about the other attributes.

    Parameters
    ----------
    channels : sequence of Channel
        The channel of each column's real report (at its inner budget).
    fakes : sequence of {"random", "zero"}
        Each column's fake law.

    Returns
    -------
    attribute_epsilons : ndarray of shape (d,)
        Budget of each attribute: the largest log-ratio between rows that
        differ in that attribute only.
    row_epsilon : float
        Budget of the whole row: the largest log-ratio between any two rows.

    Examples
    --------
    >>> from sklearn_uldp.mechanisms import RandomizedResponseChannel
    >>> from sklearn_uldp.mechanisms import amplified_epsilon, fake_data_guarantees
    >>> eps_prime = amplified_epsilon(1.0, 3)
    >>> channels = [RandomizedResponseChannel([0, 1, 2], eps_prime)] * 3
    >>> attr, row = fake_data_guarantees(channels, ["random"] * 3)
    >>> attr.round(6).tolist(), round(row - eps_prime, 9)
    ([1.0, 1.0, 1.0], 0.0)
    """
    classes = [c.fake_ratio_classes(f) for c, f in zip(channels, fakes, strict=True)]
    return _guarantees_of(classes)


def _guarantees_of(classes):
    """Attribute budgets and the row budget from each column's (R+, R-)."""
    rho = np.array([minus.min() for _, minus in classes])
    attribute = np.empty(len(classes))
    for i, (plus, minus) in enumerate(classes):
        rest = float(rho.sum() - rho[i])
        attribute[i] = float(np.max(np.log((plus + rest) / (minus + rest))))
    # Dinkelbach: t <- sum R+ / sum R- at the classes maximizing R+ - t R-;
    # t increases strictly until it is the maximum ratio (finitely many
    # choices), from the ratio 1 of any output.
    t = 1.0
    for _ in range(1000):
        picks = [int(np.argmax(plus - t * minus)) for plus, minus in classes]
        num = sum(float(plus[j]) for (plus, _), j in zip(classes, picks, strict=True))
        den = sum(float(minus[j]) for (_, minus), j in zip(classes, picks, strict=True))
        new = num / den
        if new <= t * (1.0 + 1e-15):
            break
        t = new
    return attribute, float(np.log(t))


def calibrate_fake_epsilons(
    classes_at: Sequence[Callable[[float], tuple[np.ndarray, np.ndarray]]],
    targets: Sequence[float],
    *,
    amplification: str = "exact",
    closed_form: bool = True,
) -> np.ndarray:
    """The inner budgets epsilon'_l of RS+FD that keep every attribute's target.

    ``"paper"`` is Arcolezi et al.'s epsilon'_l = ln(d (e^eps_l - 1) + 1).
    ``"exact"`` makes every attribute's exact budget
    (:func:`fake_data_guarantees`) equal to its target: attribute i's budget
    depends on the other columns only through ``R - rho_i``, with
    ``R = sum_l rho_l`` (``rho_l`` the smallest likelihood ratio of a real
    report of column l against a fake). For a given R each column's largest
    admissible epsilon'_i(R) grows with R, so ``sum_l rho_l(epsilon'_l(R))``
    decreases with R and the consistent R is found by bisection, keeping
    the side where every constraint holds. For identical columns of k-RR
    with random fakes or of unary encoding with zero fakes this is the
    paper's budget; for columns of different domains, mechanisms or budgets,
    and for OUE with random fakes, the paper's budget breaks some
    attribute's promise.

    When the result cannot be verified (or ``closed_form`` is False: the
    classes come from building channels, which is slow), every column is
    scaled along ``epsilon'_l = ln(lambda (e^eps_l - 1) + 1)`` with the
    largest lambda in [1, d] that keeps every target (the privacy of every
    attribute only degrades as any inner budget grows, so the feasible
    lambdas are an interval from 1).

    Parameters
    ----------
    classes_at : sequence of callables epsilon -> (R+, R-)
        Each column's likelihood-ratio classes at a candidate inner budget.
    targets : sequence of float
        Each attribute's budget.
    amplification : {"exact", "paper"}, default="exact"
    closed_form : bool, default=True
        Whether ``classes_at`` is cheap (closed forms).

    Returns
    -------
    inner_epsilons : ndarray of shape (d,)
    """
    goal = np.asarray(targets, dtype=float)
    d = goal.size
    if amplification not in ("exact", "paper"):
        raise ValueError(f"amplification must be 'exact' or 'paper', got {amplification!r}.")
    paper = np.log1p(d * np.expm1(goal))
    if amplification == "paper":
        return paper
    limit = goal * (1.0 + _CALIBRATION_RTOL)

    def feasible(eps):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # e.g. uRR's "almost RR" advice, per trial
            attribute, _ = _guarantees_of(
                [f(float(e)) for f, e in zip(classes_at, eps, strict=True)]
            )
        return bool(np.all(attribute <= limit))

    if closed_form:
        eps = _equalized(classes_at, goal, paper)
        if eps is not None and feasible(eps):
            return eps

    def at(lam):
        return np.log1p(lam * np.expm1(goal))

    if feasible(at(float(d))):
        return at(float(d))
    lo, hi = 1.0, float(d)
    for _ in range(40):
        mid = 0.5 * (lo + hi)
        if feasible(at(mid)):
            lo = mid
        else:
            hi = mid
    return at(lo)


def _equalized(classes_at, targets, start):
    """Inner budgets at which every attribute's budget is its target (or None)."""

    def rho(j, e):
        return float(classes_at[j](e)[1].min())

    def loss(j, e, total):
        plus, minus = classes_at[j](e)
        rest = max(total - float(minus.min()), 0.0)
        return float(np.max(np.log((plus + rest) / (minus + rest))))

    def inner(j, total):
        # At most twice the paper's budget: fakes alone may keep a column's
        # promise at any inner budget (uRR with one sensitive value, whose
        # fakes are that value), and the row's budget grows with it.
        lo, hi = float(targets[j]), 2.0 * float(start[j])
        if loss(j, hi, total) <= targets[j]:
            return hi
        for _ in range(60):
            mid = 0.5 * (lo + hi)
            if loss(j, mid, total) <= targets[j]:
                lo = mid
            else:
                hi = mid
            if hi - lo <= 1e-13 * hi:
                break
        return lo

    def excess(total):
        eps = [inner(j, total) for j in range(targets.size)]
        if any(e is None for e in eps):
            return None, None
        return sum(rho(j, e) for j, e in enumerate(eps)) - total, eps

    lo, hi = 0.0, sum(rho(j, float(t)) for j, t in enumerate(targets))
    gap, best = excess(lo)
    if best is None:
        return None
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        gap, eps = excess(mid)
        if eps is None:
            return None
        if gap >= 0:  # consistent side: every column has at least this slack
            lo, best = mid, eps
        else:
            hi = mid
        if hi - lo <= 1e-13 * hi:
            break
    return np.asarray(best, dtype=float)


# ---------------------------------------------------------------- channels
def _domain_key(categories):
    """The domain as channels compare it (missing-value markers made equal)."""
    return tuple(_MISSING if _is_missing_scalar(c) else c for c in np.asarray(categories).tolist())


def _as_base(base, categories, cls_name):
    if isinstance(base, Mapping):
        base = Channel.from_dict(base)
    if not isinstance(base, Channel):
        raise TypeError(
            f"base must be the channel (or its spec dict) of the mechanism applied to "
            f"the sampled attribute, got {type(base).__name__}."
        )
    if isinstance(base, _AttributeChannel):
        raise ValueError(
            f"The base of a {cls_name} is a mechanism's channel, not another "
            f"sampled channel ({type(base).__name__})."
        )
    cats = check_channel_categories(categories)
    if _domain_key(cats) != _domain_key(base.categories):
        raise ValueError(
            f"The categories of the {cls_name} differ from its base channel's "
            f"({list(cats)[:5]} vs {list(base.categories)[:5]}); they must be equal."
        )
    return base, cats


def _base_property(name):
    """A read-only property reading the attribute ``name`` of ``self.base``."""
    return property(lambda self: getattr(self.base, name))


class _AttributeChannel(Channel):
    """Shared part of the per-attribute channels of the sampling strategies."""

    _spec_field_schemas = {
        "base": {
            "type": "object",
            "description": (
                "The spec of the mechanism a user applies to the sampled attribute "
                "(any channel spec of this format, with the same categories)."
            ),
        },
        "n_attributes": {
            "type": "integer",
            "minimum": 2,
            "description": "Number d of attributes each user holds; one is sampled.",
        },
    }

    def _init_base(self, categories, base, n_attributes):
        self.base, self.categories = _as_base(base, categories, type(self).__name__)
        self.n_attributes = _check_n_attributes(n_attributes)
        self.report_format = self.base.report_format
        self.reports_are_categories = getattr(self.base, "reports_are_categories", False)
        # The layout of the reports present is the base's.
        self.bit_vector_reports = self.base.bit_vector_reports
        self.histogram_reports = self.base.histogram_reports

    def __getattr__(self, name):
        # Parameters of the base (theta, n_buckets, ...) read through; never
        # private state, nor anything before the base is set (unpickling).
        if name.startswith("_") or "base" not in self.__dict__:
            raise AttributeError(name)
        return getattr(self.__dict__["base"], name)

    def _key(self):
        params = tuple(
            (key, value) for key, value in sorted(self.get_params().items()) if key != "base"
        )
        return (self.name, self.base._key(), params)

    def __repr__(self):
        extra = ", ".join(
            f"{key}={value!r}" for key, value in self.get_params().items() if key != "base"
        )
        return f"{type(self).__name__}(k={self.n_categories}, {extra}, base={self.base!r})"

    def describe_difference(self, other):
        if type(self) is not type(other):
            return super().describe_difference(other)
        diffs = [
            f"{key}: {a!r} vs {other.get_params()[key]!r}"
            for key, a in self.get_params().items()
            if key != "base" and a != other.get_params()[key]
        ]
        return diffs + [f"base {d}" for d in self.base.describe_difference(other.base)]

    # The domain, the sensitive set and the outputs are the base's.
    sensitive_mask = _base_property("sensitive_mask")
    exact_categories = _base_property("exact_categories")
    n_outputs = _base_property("n_outputs")
    report_bits = _base_property("report_bits")
    packed_reports = _base_property("packed_reports")
    report_width = _base_property("report_width")
    missing_report_dtype = _base_property("missing_report_dtype")

    def report_column_names(self, column):
        return self.base.report_column_names(column)

    def report_dtypes(self, column):
        return self.base.report_dtypes(column)

    def output_labels(self):
        return self.base.output_labels()

    def protected_outputs(self):
        return self.base.protected_outputs()

    def decode(self, codes):
        return self.base.decode(codes)

    def merge_extra(self, a, b):
        return self.base.merge_extra(a, b)

    def observed_frequency(self, stats):
        return self.base.observed_frequency(stats)

    def _relabel(self, stats):
        return ReportStatistics(self, stats.n, stats.counts, stats.extra)


class SampledChannel(_AttributeChannel):
    """Channel of one attribute's reports under SMP (one sampled attribute per user).

    Each of the d attributes is sampled with probability 1/d; a user who
    sampled this attribute reports it through ``base``, the others send no
    report of it (a missing value in its column). The index is independent of
    the data, so the reports present are n_j i.i.d. reports of ``base`` and
    every estimator conditions on them: the statistics count the reports
    present (``n`` = n_j), and the estimate, its variance and the
    likelihood are the base mechanism's on them (:meth:`matrix` is the
    base's). The marginal law of the column, missing values included, is
    ``Q(y|x) / d`` and ``1 - 1/d`` for "no report" (:meth:`marginal_matrix`).

    Parameters
    ----------
    categories : array-like of shape (k,)
        The attribute's domain (the base channel's).
    base : Channel or dict
        The channel (or its spec) of the mechanism applied to the attribute.
    n_attributes : int
        The number d of attributes each user holds (>= 2).

    Notes
    -----
    Reports are the base's, one row per user; a row whose entries are all
    missing (None, NaN, pd.NA) is "not sampled", a row with some missing
    entries is refused. A base whose domain holds a missing-value marker is
    refused (its reports could be missing values).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_uldp import EmpiricalEstimator
    >>> from sklearn_uldp.mechanisms import RandomizedResponseChannel, SampledChannel
    >>> channel = SampledChannel(["a", "b"], RandomizedResponseChannel(["a", "b"], 2.0), 3)
    >>> reports = np.array(["a", None, "a", "b", None, "a"], dtype=object)
    >>> est = EmpiricalEstimator(mechanism=channel).fit(reports)
    >>> est.n_reports_, channel.epsilon
    (4, 2.0)
    """

    name = "smp"
    #: Reports may be missing (users who sampled another attribute).
    missing_reports = True

    def __init__(self, categories: Any, base: Channel | dict[str, Any], n_attributes: int) -> None:
        self._init_base(categories, base, n_attributes)
        if bool(is_missing(np.asarray(self.categories, dtype=object)).any()):
            raise ValueError(
                "A sampled attribute's reports use missing values for the users who "
                "sampled another attribute, so its domain cannot hold a missing-value "
                "marker (None/NaN): label missing values with a text category instead "
                "(DataFramePrivatizer(missing='category'))."
            )
        self.epsilon = self.base.epsilon

    def get_params(self):
        return {"base": self.base.to_dict(), "n_attributes": self.n_attributes}

    # ------------------------------------------------------------ structure
    def matrix(self):
        """The law of a report present: the base's matrix (see :meth:`marginal_matrix`)."""
        return self.base.matrix()

    def realized_matrix(self):
        return self.base.realized_matrix()

    def marginal_matrix(self):
        """The column's law, missing values included: ``Q / d``, then "no report".

        Returns
        -------
        Q : ndarray of shape (k, n_outputs + 1)
            The last column, ``1 - 1/d`` for every input, is "not sampled".
        """
        Q = self.base.matrix() / self.n_attributes
        return np.column_stack([Q, np.full(Q.shape[0], 1.0 - 1.0 / self.n_attributes)])

    # ------------------------------------------------------------ reports
    def encode_reports(self, reports):
        """The base's codes of the reports present (missing rows dropped)."""
        present = _present_rows(reports, self.base)
        return self.base.encode_reports(present)

    def statistics(self, codes, *, keep_reports=False):
        return self._relabel(self.base.statistics(codes, keep_reports=keep_reports))

    def sample(self, codes, rng, **kwargs):
        """Reports of users who sampled the attribute (the base's sampler)."""
        return self.base.sample(codes, rng, **kwargs)

    # ---------------------------------------------------------- estimation
    def forward(self, p):
        return self.base.forward(p)

    def adjoint(self, v):
        return self.base.adjoint(v)

    def expected_frequency(self, p):
        return self.base.expected_frequency(p)

    @property
    def coef_a(self):
        return self.base.coef_a

    @property
    def coef_b(self):
        return self.base.coef_b

    def estimator_variance(self, p, n):
        """Var of the base's estimate from ``n`` reports present (n_j, not n)."""
        return self.base.estimator_variance(p, n)

    def null_variance(self, n, stats=None):
        return _null_variance_of(self.base, n, stats)

    def em_gradient(self, stats, p, *, n_jobs=None):
        return self.base.em_gradient(stats, p, n_jobs=n_jobs)

    def restricted_em_gradient(self, stats, active, *, n_jobs=None):
        return self.base.restricted_em_gradient(stats, active, n_jobs=n_jobs)

    def likelihood(self, codes):
        return self.base.likelihood(codes)


class SampledFakeChannel(_AttributeChannel):
    """Channel of one attribute's reports under RS+FD (sampling plus fake data).

    Each user samples one of d attributes uniformly; the sampled one is
    reported through ``base`` (at the amplified budget), every other one is a
    fake report drawn from ``fake``'s law F, independently of the data. One
    attribute's column is therefore the mixture

    ``Q'(y | x) = Q(y | x) / d + (1 - 1/d) F(y)``,

    a channel in its own right: the linear estimator
    ``p_hat = a' f + b'`` with ``a' = d a`` and
    ``b' = b - (d - 1) a m_F`` (m_F the expected frequency of the statistic on
    fake reports) is unbiased, its variance ``a'^2 m'(1 - m') / n`` is
    Arcolezi et al.'s closed form (their Variance_RSpFD formulas for GRR,
    OUE-z and OUE-r), and EM maximizes the column's marginal likelihood. The
    columns of one row are dependent (one of them is real), so per-column EM
    is a composite-likelihood estimator: consistent, the same as the full
    likelihood's for the marginals.

    Parameters
    ----------
    categories : array-like of shape (k,)
    base : Channel or dict
        The channel of the mechanism applied to the sampled attribute (k-RR,
        uRR, RAPPOR/OUE, uRAP/uOUE, or a one-symbol channel with a small
        output space).
    n_attributes : int
        The number d of attributes (>= 2).
    fake : {"random", "zero"}
        The fake law: ``base`` applied to a uniformly random sensitive value,
        or (unary encoding) the perturbed all-zero vector.

    Attributes
    ----------
    epsilon : float
        The budget of this column seen alone (the largest log-ratio of Q').
        The row's guarantees depend on every column: see
        :func:`fake_data_guarantees` and
        ``DataFramePrivatizer.attribute_epsilons_``.

    Examples
    --------
    >>> from sklearn_uldp.mechanisms import RandomizedResponseChannel, SampledFakeChannel
    >>> base = RandomizedResponseChannel(["a", "b", "c"], 2.0)
    >>> channel = SampledFakeChannel(["a", "b", "c"], base, n_attributes=3, fake="random")
    >>> channel.matrix().round(3).tolist()[0]   # 1/3 of RR's row + 2/3 uniform
    [0.485, 0.258, 0.258]
    >>> round(channel.epsilon, 4)   # this column alone; the row's: see above
    0.6313
    """

    name = "rsfd"
    _spec_field_schemas = {
        **_AttributeChannel._spec_field_schemas,
        "fake": {
            "enum": list(FAKE_KINDS),
            "description": (
                "Law of the fake reports: the mechanism applied to a uniformly "
                "random sensitive value ('random'), or the perturbed all-zero "
                "vector of unary encoding ('zero')."
            ),
        },
    }

    def __init__(
        self,
        categories: Any,
        base: Channel | dict[str, Any],
        n_attributes: int,
        fake: str = "random",
    ) -> None:
        self._init_base(categories, base, n_attributes)
        if fake not in FAKE_KINDS:
            raise ValueError(f"fake must be one of {list(FAKE_KINDS)}, got {fake!r}.")
        self.fake = _check_fake(self.base, fake, "the base mechanism")
        lam = 1.0 / self.n_attributes
        self._lam = lam
        plus, minus = _ratio_classes(self.base, self.fake)
        self.epsilon = float(np.max(np.log((lam * plus + 1 - lam) / (lam * minus + 1 - lam))))
        self._pi = _fake_input(self.base)
        self._m_fake = _fake_frequency(self.base, self.fake)

    def get_params(self):
        return {"base": self.base.to_dict(), "n_attributes": self.n_attributes, "fake": self.fake}

    # ------------------------------------------------------------ structure
    def _mix(self, Q):
        return self._lam * Q + (1.0 - self._lam) * _fake_row(self.base, self.fake, Q)[None, :]

    def matrix(self):
        return self._mix(self.base.matrix())

    def realized_matrix(self):
        return self._mix(self.base.realized_matrix())

    def fake_distribution(self):
        """The law F of a fake report over the outputs (small output spaces)."""
        return _fake_row(self.base, self.fake, self.base.matrix())

    # ------------------------------------------------------------ reports
    def encode_reports(self, reports):
        return self.base.encode_reports(reports)

    def statistics(self, codes, *, keep_reports=False):
        return self._relabel(self.base.statistics(codes, keep_reports=keep_reports))

    def sample(self, codes, rng):
        """The column's reports: real w.p. 1/d (the base), else fake."""
        codes = np.asarray(codes, dtype=np.intp)
        out = self.base.sample(codes, rng)
        fake = np.flatnonzero(rng.integers(0, self.n_attributes, size=codes.size) != 0)
        out[fake] = sample_fakes(self.base, self.fake, fake.size, rng)
        return out

    # ---------------------------------------------------------- estimation
    def _fake_forward(self):
        return self.base.forward(self._pi) if self.fake == "random" else None

    def forward(self, p):
        p = np.asarray(p, dtype=float)
        return self._lam * self.base.forward(p) + (1.0 - self._lam) * p.sum() * self._fake_forward()

    def adjoint(self, v):
        v = np.asarray(v, dtype=float)
        fake = float(self._fake_forward() @ v)
        return self._lam * self.base.adjoint(v) + (1.0 - self._lam) * fake

    def expected_frequency(self, p):
        p = np.asarray(p, dtype=float)
        return self._lam * self.base.expected_frequency(p) + (1.0 - self._lam) * p.sum() * (
            self._m_fake
        )

    @property
    def coef_a(self):
        return self.base.coef_a / self._lam

    @property
    def coef_b(self):
        a = self.base.coef_a
        return self.base.coef_b - a * (1.0 - self._lam) * self._m_fake / self._lam

    def em_gradient(self, stats, p, *, n_jobs=None):
        p = np.asarray(p, dtype=float)
        lam = self._lam
        if self.histogram_reports:
            return histogram_em_gradient(self, stats, p)
        if self.fake == "random":
            # F = Q(.|pi): the base's gradient at the mixed input law.
            g, log_lik = self.base.em_gradient(
                stats, lam * p + (1.0 - lam) * p.sum() * self._pi, n_jobs=n_jobs
            )
            return lam * g + (1.0 - lam) * float(self._pi @ g), log_lik
        g, g_null, log_lik = _unary_em_with_null(
            self.base, stats, lam * p, (1.0 - lam) * p.sum(), n_jobs
        )
        return lam * g + (1.0 - lam) * g_null, log_lik

    def likelihood(self, codes):
        L = np.asarray(self.base.likelihood(codes), dtype=float)
        if self.fake == "random":
            fake = L @ self._pi
        else:
            # Q(y | no value) / C(y): 1 for a protected report (every input
            # can produce it), 0 for an invertible one.
            fake = ((L > 0).sum(axis=1) > 1).astype(float)
        return self._lam * L + (1.0 - self._lam) * fake[:, None]


def _unary_em_with_null(base, stats, p, null, n_jobs):
    """uRAP's EM gradient with an extra input "no value" of mass ``null``.

    The bits of "no value" are the zero vector perturbed: every sensitive
    bit is Bernoulli(d1) and no non-sensitive bit is set, so its likelihood
    is C(y) on a protected report (f = 1 in the base's factorization
    Q(y|x) = C(y) f_x(y)) and 0 on an invertible one. Returns the gradient
    over the categories, the gradient of the null input, and the
    log-likelihood.
    """
    store = _bit_rows(stats)
    s_codes, n_codes = base._s_codes, base._n_codes
    A = float((p * base._w).sum()) + null
    step = base._r - base._w_s
    sum_inv, sum_log, t = store.em_terms(A, p[s_codes] * step, n_jobs=n_jobs)
    g = base._w * sum_inv
    g[s_codes] += step * t
    log_lik = sum_log + base._log_c(stats)
    if n_codes.size:
        inv_counts = stats.counts[n_codes]
        p_n = p[n_codes]
        seen = inv_counts > 0
        with np.errstate(divide="ignore"):
            g[n_codes] += np.divide(inv_counts, p_n, out=np.zeros_like(p_n), where=seen)
            log_lik += float(np.sum(inv_counts[seen] * np.log(p_n[seen])))
        log_lik += float(inv_counts.sum() * np.log(base._one_minus_d2))
    return g / stats.n, sum_inv / stats.n, float(log_lik)


def _null_variance_of(channel, n, stats):
    import inspect

    try:
        takes_stats = "stats" in inspect.signature(channel.null_variance).parameters
    except (TypeError, ValueError):  # pragma: no cover
        takes_stats = False
    return channel.null_variance(n, stats=stats) if takes_stats else channel.null_variance(n)


def _missing_entries(reports):
    """(mask of missing entries as (n, width), the reports as a frame or
    array); the mask is None when no entry can be missing."""
    if isinstance(reports, pd.Series):
        reports = reports.to_frame()
    if isinstance(reports, pd.DataFrame):
        if all(isinstance(t, np.dtype) and t.kind in "biu" for t in reports.dtypes):
            # numpy integer columns hold no missing value (the sampled rows
            # of a report table, as sampled_block returns them)
            return None, reports
        # Column by column: a frame of nullable columns interleaves slowly.
        columns = [reports.iloc[:, j] for j in range(reports.shape[1])]
        missing = np.column_stack([c.isna().to_numpy() for c in columns])
        return missing.reshape(len(reports), -1), reports
    arr = np.asarray(reports)
    if arr.ndim not in (1, 2):
        raise ReportMismatchError(f"Expected reports of shape (n,) or (n, width), got {arr.shape}.")
    if arr.dtype.kind in "fc":
        missing = np.isnan(arr)
    elif arr.dtype.kind == "O":
        missing = is_missing(arr)
    else:
        return None, arr
    return missing.reshape(arr.shape[0], -1), arr


def _present_rows(reports, base):
    """The rows of ``reports`` that are not "not sampled" (every entry missing)."""
    if sp.issparse(reports):
        return reports  # sparse bit vectors cannot hold missing values
    missing, table = _missing_entries(reports)
    if missing is None:
        # Integer reports (the sampled rows of a report table): nothing to
        # drop, and no (n, width) mask to build and reduce twice.
        return reports
    absent = missing.all(axis=1)
    partial = missing.any(axis=1) & ~absent
    if partial.any():
        raise ReportMismatchError(
            f"{int(partial.sum())} reports have some missing entries: a report is "
            "either complete or entirely missing (the user sampled another "
            "attribute). Were the reports altered?"
        )
    if not absent.any():
        return reports
    if isinstance(table, pd.DataFrame):
        keep = ~absent
        if base.bit_vector_reports:
            return np.column_stack(
                [
                    table.iloc[:, j].to_numpy(dtype=np.uint8, na_value=0)[keep]
                    for j in range(table.shape[1])
                ]
            )
        part = table.loc[keep]
        if part.shape[1] == 1:
            column = part.iloc[:, 0]
            numpy_dtype = getattr(column.dtype, "numpy_dtype", None)
            # Nullable integer/boolean columns, freed of their missing rows,
            # are plain numpy values again.
            values = (
                column.to_numpy(dtype=numpy_dtype) if numpy_dtype is not None else column.to_numpy()
            )
        else:
            values = part.to_numpy()
    else:
        values = table[~absent]
    if base.bit_vector_reports:
        return np.asarray(values, dtype=float).astype(np.uint8)
    if values.ndim == 2 and values.shape[1] == 1:
        values = values[:, 0]
    if (
        base.histogram_reports
        and not getattr(base, "reports_are_categories", False)
        and values.dtype.kind in "fO"
    ):
        # Integer output codes that a missing value turned into floats or
        # objects: integers again (a non-integer stays, and is refused).
        as_float = np.asarray(values, dtype=float)
        if np.all(as_float == np.round(as_float)):
            return as_float.astype(np.int64)
    return values


# The channels' methods and the mechanisms reach the fake-report laws through
# the table the channel module owns (it sits below this module).
FAKE_REPORT_LAWS.update(
    supported_fakes=supported_fakes,
    sample_fakes=sample_fakes,
    fake_row=_fake_row,
    ratio_classes=_ratio_classes,
    fake_classes_at=fake_classes_at,
)
