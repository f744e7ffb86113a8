"""Naive Bayes from privatized (label, feature value) pairs.

Each user holds d categorical features and a label. Following Yilmaz et al.
("Naive Bayes classification under local differential privacy", DSAA 2020,
the "(label, value) pair" approach) and Wang et al.'s attribute sampling
(ICDE 2019), each user draws one feature j uniformly at random (independently
of the data: the index is public) and reports the **pair** ``(y, x_j)``
through one frequency oracle over the product domain ``classes x
categories_j``, spending the whole budget on that one report. For each
feature, the reports of the users who drew it estimate the joint distribution
``P(y, x_j)`` with the package's estimators (EM, or the unbiased estimate
projected onto the simplex); naive Bayes needs nothing else:

    P(y = c | x) ∝ P(c) prod_j P(x_j | c),   P(x_j = v | c) = P(c, v) / P(c).

The conditional frequencies are smoothed like scikit-learn's
``CategoricalNB`` (Laplace): with n_j reports of feature j,

    theta_jcv = (n_j P_j(c, v) + alpha) / (n_j P_j(c) + alpha V_j),

and the class prior ``pi_c = (N pi_hat_c + alpha) / (N + alpha K)``, where
``pi_hat`` pools the class marginals of the d joint estimates (each user's
report carries the label, whatever feature was drawn).

The estimate depends on the reports only through the d joint tables, so any
other source of ``(label, feature)`` two-way marginals plugs in unchanged
(:meth:`LDPNaiveBayes.fit_marginals`), e.g. marginals of a joint-analysis
protocol where each user reports once for several questions.
"""

from __future__ import annotations

import math
from numbers import Real
from typing import Any

import numpy as np
import pandas as pd
from scipy.special import log_softmax
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_array, check_is_fitted, column_or_1d, validate_data

from ..estimators import EMEstimator, EmpiricalEstimator
from ..exceptions import PrivacyLeakWarning, ReportMismatchError
from ..mechanisms import (
    BaseMechanism,
    CategoricalChannel,
    Channel,
    OptimizedLocalHashing,
    RandomizedResponse,
    Reports,
)
from ..mechanisms._base import RANDOM_STATE_CONSTRAINT
from ..utils._random import check_random_generator
from ..utils._typing import RandomStateLike
from ..utils._validation import check_epsilon, is_missing
from ._common import sub_random_states

__all__ = ["LDPNaiveBayes", "SPECS_ATTR", "NAIVE_BAYES_ATTR"]

#: ``DataFrame.attrs`` key of the per-feature channel specs (as DataFramePrivatizer's).
SPECS_ATTR = "sklearn_uldp_specs"
#: ``DataFrame.attrs`` key of the public domains of the pair reports.
NAIVE_BAYES_ATTR = "sklearn_uldp_naive_bayes"


def _choose_oracle(size: int, epsilon: float) -> str:
    """k-RR below ``3 e^eps + 2`` values, else OLH (Wang et al., USENIX Sec. 2017).

    The variance of k-RR's estimate grows with k; OLH's does not. They are
    equal at about ``k = 3 e^eps + 2``.
    """
    return "rr" if size < 3.0 * math.exp(min(epsilon, 700.0)) + 2.0 else "olh"


def _label_list(values):
    """JSON-able labels (Python scalars) of a 1-D array."""
    return np.asarray(values).tolist()


class LDPNaiveBayes(ClassifierMixin, BaseEstimator):
    """Categorical naive Bayes from privatized (label, feature value) pairs.

    Each user reports one pair ``(label, x_j)`` of a feature ``j`` drawn at
    random, through one frequency oracle over the product domain (one report,
    budget ``epsilon``); the class-conditional frequencies are the package's
    estimates of each feature's joint distribution with the label, smoothed
    (Laplace). :meth:`predict` and :meth:`predict_proba` then classify clean
    rows. :meth:`fit` simulates the users on data you hold;
    :meth:`privatize` is the users' side and :meth:`fit_reports` the
    collector's, for reports collected elsewhere.

    Parameters
    ----------
    epsilon : float, default=1.0
        The budget of a user's single report.
    mechanism : {"auto", "rr", "olh"} or BaseMechanism, default="auto"
        The frequency oracle over each feature's product domain (of size
        ``K * V_j``): ``"auto"`` takes k-RR when ``K V_j < 3 e^eps + 2`` and
        optimized local hashing otherwise (Wang et al. 2017's rule); a
        one-symbol mechanism is cloned with the product domain and
        ``epsilon``.
    estimator : {"em", "empirical"}, default="em"
        How each joint distribution is estimated: EM
        (:class:`~sklearn_uldp.EMEstimator`) or the unbiased estimate
        projected onto the simplex (:class:`~sklearn_uldp.EmpiricalEstimator`).
    alpha : float, default=1.0
        Laplace smoothing (pseudo-counts) of the conditional frequencies and
        the class prior.
    categories : "auto" or list of array-like, default="auto"
        The public domain of each feature. ``"auto"`` learns it from X, which
        reveals which values occur (a
        :class:`~sklearn_uldp.exceptions.PrivacyLeakWarning`).
    classes : "auto" or array-like, default="auto"
        The public label domain; ``"auto"``: the labels of y (as any
        scikit-learn classifier's ``classes_``).
    random_state : None, "secure", int, Generator, SeedSequence or RandomState, default=None
        Source of the sampled features and of the oracles' noise (one
        independent stream each). ``None``: fresh OS entropy at every call;
        an int for reproducible simulations only.

    Attributes
    ----------
    classes_ : ndarray of shape (K,)
    categories_ : list of ndarray
        Each feature's domain.
    joint_distributions_ : list of ndarray of shape (K, V_j)
        The estimated ``P(y, x_j)`` of each feature.
    class_log_prior_ : ndarray of shape (K,)
    feature_log_prob_ : list of ndarray of shape (K, V_j)
        Smoothed ``log P(x_j = v | y = c)``, as ``CategoricalNB``'s.
    n_reports_ : ndarray of shape (n_features,)
        Users who drew each feature.
    channels_ : dict of {str: Channel}
        Each feature's pair channel (domain ``0 .. K V_j - 1``, pair ``(c, v)``
        at ``c V_j + v``).
    epsilon_spent_ : float
        The budget one user spends (one report); NaN after
        :meth:`fit_marginals` (the budget is the other protocol's).
    n_features_in_ : int
    feature_names_in_ : ndarray

    References
    ----------
    Yilmaz, Al-Rubaie & Chang, "Naive Bayes Classification under Local
    Differential Privacy", DSAA 2020. Wang, Xiao, Yang, Zhao, Hui, Shin, Shin
    & Yu, ICDE 2019 (attribute sampling).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_uldp.learning import LDPNaiveBayes
    >>> rng = np.random.default_rng(0)
    >>> y = rng.integers(0, 2, size=20_000)
    >>> X = np.column_stack([np.where(rng.random(20_000) < 0.8, y, 1 - y),
    ...                      rng.integers(0, 3, size=20_000)])
    >>> nb = LDPNaiveBayes(epsilon=2.0, categories=[[0, 1], [0, 1, 2]], random_state=0)
    >>> nb.fit(X, y).n_reports_.sum(), nb.epsilon_spent_
    (np.int64(20000), 2.0)
    >>> np.exp(nb.feature_log_prob_[0]).round(1).tolist()  # P(x_0 | y), truly [[.8, .2], [.2, .8]]
    [[0.8, 0.2], [0.2, 0.8]]
    >>> nb.predict([[1, 0]]).tolist()
    [1]
    """

    #: It privatizes its training data in fit(X, y) (what
    #: PrivacyUtilitySearchCV reads to search it on held-out clean rows).
    _privatizes_in_fit = True

    _parameter_constraints: dict[str, list[Any]] = {
        "epsilon": [Interval(Real, 0, None, closed="neither")],
        "mechanism": [StrOptions({"auto", "rr", "olh"}), BaseMechanism],
        "estimator": [StrOptions({"em", "empirical"})],
        "alpha": [Interval(Real, 0, None, closed="left")],
        "categories": [StrOptions({"auto"}), list],
        "classes": [StrOptions({"auto"}), "array-like"],
        "random_state": RANDOM_STATE_CONSTRAINT,
    }

    def __init__(
        self,
        epsilon: float = 1.0,
        mechanism: Any = "auto",
        *,
        estimator: str = "em",
        alpha: float = 1.0,
        categories: Any = "auto",
        classes: Any = "auto",
        random_state: RandomStateLike = None,
    ) -> None:
        self.epsilon = epsilon
        self.mechanism = mechanism
        self.estimator = estimator
        self.alpha = alpha
        self.categories = categories
        self.classes = classes
        self.random_state = random_state

    # ----------------------------------------------------------- users' side
    def privatize(self, X: Any, y: Any) -> pd.DataFrame:
        """The users' reports: one privatized (label, value) pair each.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Categorical features.
        y : array-like of shape (n_samples,)
            Labels.

        Returns
        -------
        reports : DataFrame of shape (n_samples, n_features)
            One column per feature (nullable integers): a user's report of
            the pair in the column of the feature drawn, missing in the
            others. ``attrs["sklearn_uldp_specs"]`` maps each feature to its
            pair channel's spec and ``attrs["sklearn_uldp_naive_bayes"]``
            holds the public domains (``classes``, each feature's
            ``categories``), so :meth:`fit_reports` (here or on another
            machine, after a Parquet round trip) needs nothing else.
        """
        self._validate_params()
        check_epsilon(self.epsilon)
        values, names = self._feature_values(X)
        labels = self._labels(y, values.shape[0])
        classes = self._resolve_classes(labels)
        domains = self._resolve_categories(values, names)
        label_codes = _codes(labels, classes, "y", "classes")
        n, d = values.shape
        states = sub_random_states(self.random_state, d + 1)
        drawn = check_random_generator(states[0]).integers(0, d, size=n)
        K = classes.size
        columns, specs = {}, {}
        for j, name in enumerate(names):
            V = domains[j].size
            rows = np.flatnonzero(drawn == j)
            pair = label_codes[rows] * V + _codes(values[rows, j], domains[j], name, "categories")
            mech = self._oracle(K * V, states[j + 1])
            _check_one_symbol(mech)
            column = pd.array(np.full(n, pd.NA), dtype="Int64")
            if rows.size:
                reports = mech.fit_transform(pair.reshape(-1, 1))
                column[rows] = np.asarray(reports).ravel().astype(np.int64)
            else:
                mech.fit()
            columns[name] = column
            specs[name] = mech.channel_.to_dict()
        frame = pd.DataFrame(columns, index=X.index if isinstance(X, pd.DataFrame) else None)
        frame.attrs[SPECS_ATTR] = specs
        frame.attrs[NAIVE_BAYES_ATTR] = {
            "classes": _label_list(classes),
            "categories": {name: _label_list(domains[j]) for j, name in enumerate(names)},
        }
        return frame

    def _oracle(self, size, state):
        mech = self.mechanism
        categories = list(range(size))
        if isinstance(mech, BaseMechanism):
            params = mech.get_params(deep=False)
            update: dict[str, Any] = {"categories": categories, "random_state": state}
            if "epsilon" in params:
                update["epsilon"] = self.epsilon
            return clone(mech).set_params(**update)
        kind = _choose_oracle(size, float(self.epsilon)) if mech == "auto" else mech
        cls = RandomizedResponse if kind == "rr" else OptimizedLocalHashing
        return cls(epsilon=self.epsilon, categories=categories, random_state=state)

    # -------------------------------------------------------- collector side
    def fit(self, X: Any, y: Any) -> LDPNaiveBayes:
        """Simulate the users' reports of ``(X, y)`` and fit from them.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Categorical features.
        y : array-like of shape (n_samples,)
            Labels.

        Returns
        -------
        self : LDPNaiveBayes
        """
        reports = self.privatize(X, y)
        self._fit_reports(reports)
        # The feature names are X's (privatize names unnamed columns x0, x1, ...).
        validate_data(self, X, reset=True, skip_check_array=True)
        return self

    def fit_reports(self, reports: pd.DataFrame) -> LDPNaiveBayes:
        """Fit from collected pair reports (the output of :meth:`privatize`).

        Parameters
        ----------
        reports : DataFrame
            One column per feature, a report in the column of each user's
            drawn feature and missing values elsewhere, with the specs and
            domains in ``attrs`` (as :meth:`privatize` writes them).

        Returns
        -------
        self : LDPNaiveBayes
        """
        self._validate_params()
        self._fit_reports(reports)
        self.n_features_in_ = len(self.categories_)
        self.feature_names_in_ = np.asarray([str(c) for c in reports.columns], dtype=object)
        return self

    def _fit_reports(self, reports):
        if not isinstance(reports, pd.DataFrame):
            raise TypeError(
                "fit_reports takes the DataFrame of pair reports that privatize() "
                f"returns, got {type(reports).__name__}."
            )
        specs = reports.attrs.get(SPECS_ATTR)
        meta = reports.attrs.get(NAIVE_BAYES_ATTR)
        if not isinstance(specs, dict) or not isinstance(meta, dict):
            raise ReportMismatchError(
                "The reports carry no pair specs: fit_reports needs the DataFrame "
                "privatize() returns, with attrs['sklearn_uldp_specs'] and "
                "attrs['sklearn_uldp_naive_bayes'] (kept by Parquet)."
            )
        names = [str(c) for c in reports.columns]
        if set(names) != set(map(str, specs)) or set(names) != set(
            map(str, meta.get("categories", {}))
        ):
            raise ReportMismatchError(
                f"The reports have {len(names)} feature columns, but their specs "
                f"name {len(specs)} and their domains {len(meta.get('categories', {}))}: "
                "the columns and attrs must match (did a column get renamed or dropped?)."
            )
        classes = np.asarray(meta.get("classes", []))
        if classes.ndim != 1 or classes.size < 1:
            raise ReportMismatchError("The reports' attrs hold no classes (the label domain).")
        K = classes.size
        present = reports.notna().to_numpy()
        per_row = present.sum(axis=1)
        if (per_row != 1).any():
            raise ReportMismatchError(
                f"{int((per_row == 0).sum())} users report no pair and "
                f"{int((per_row > 1).sum())} several: each user reports exactly one "
                "pair (one non-missing column)."
            )
        tables, counts, channels, domains = [], [], {}, []
        for j, name in enumerate(names):
            channel = Channel.from_dict(specs[name])
            domain = np.asarray(meta["categories"][name])
            V = domain.size
            if not isinstance(channel, CategoricalChannel) or list(channel.categories) != list(
                range(K * V)
            ):
                raise ReportMismatchError(
                    f"The spec of feature {name!r} is not a one-symbol channel over the "
                    f"{K} x {V} = {K * V} (label, value) pairs (codes 0..{K * V - 1}): "
                    "reports of another domain, or a tampered spec."
                )
            shown = present[:, j]
            values = reports[name].to_numpy(dtype=object)[shown]
            codes = channel.encode_reports(Reports(_as_int(values, name), channel))
            stats = channel.statistics(codes, keep_reports=True)
            if stats.n:
                est = self._joint_estimator(channel).fit_statistics(stats)
                joint = est.distribution_.reshape(K, V)
            else:
                joint = np.full((K, V), 1.0 / (K * V))
            tables.append(joint)
            counts.append(stats.n)
            channels[name] = channel
            domains.append(domain)
        self.channels_ = channels
        self._fit_tables(classes, domains, tables, np.asarray(counts, dtype=np.int64))
        self._epsilon_spent = max(float(c.epsilon) for c in channels.values())

    def _joint_estimator(self, channel):
        if self.estimator == "em":
            return EMEstimator(mechanism=channel)
        return EmpiricalEstimator(mechanism=channel, projection="simplex")

    def fit_marginals(self, marginals: dict[Any, pd.DataFrame], n_reports: Any) -> LDPNaiveBayes:
        """Fit from estimated (label, feature) two-way marginals.

        The naive Bayes model depends on the reports only through the d
        joint tables ``P(y, x_j)`` and their numbers of reports (for the
        smoothing): any protocol that estimates those two-way marginals
        (e.g. a joint-analysis collection where each user reports once for
        several questions) plugs in here.

        Parameters
        ----------
        marginals : dict of {feature name: DataFrame}
            One table per feature, indexed by the labels, one column per
            feature value, holding estimated joint probabilities (each table
            sums to 1; negative entries are refused: project first).
        n_reports : int or array-like of shape (n_features,)
            The reports behind each table (one number for all).

        Returns
        -------
        self : LDPNaiveBayes

        Examples
        --------
        >>> import pandas as pd
        >>> from sklearn_uldp.learning import LDPNaiveBayes
        >>> table = pd.DataFrame([[0.4, 0.1], [0.1, 0.4]], index=["no", "yes"],
        ...                      columns=["a", "b"])
        >>> nb = LDPNaiveBayes(alpha=0.0).fit_marginals({"x": table}, 1000)
        >>> nb.predict(pd.DataFrame({"x": ["a", "b"]})).tolist()
        ['no', 'yes']
        """
        self._validate_params()
        if not isinstance(marginals, dict) or not marginals:
            raise TypeError("marginals must be a non-empty dict {feature: DataFrame}.")
        names = [str(k) for k in marginals]
        tables = [marginals[k] for k in marginals]
        for name, table in zip(names, tables, strict=True):
            if not isinstance(table, pd.DataFrame):
                raise TypeError(f"The marginal of {name!r} must be a DataFrame (labels x values).")
        classes = np.asarray(tables[0].index)
        for name, table in zip(names, tables, strict=True):
            if not np.array_equal(np.asarray(table.index), classes):
                raise ValueError(
                    f"The marginal of {name!r} is indexed by other labels than the first "
                    "table's: every table is indexed by the same classes, in one order."
                )
            arr = table.to_numpy(dtype=float)
            if not np.isfinite(arr).all() or (arr < 0).any():
                raise ValueError(
                    f"The marginal of {name!r} holds negative or non-finite entries: "
                    "project it onto the simplex first."
                )
            if not np.isclose(arr.sum(), 1.0, atol=1e-6):
                raise ValueError(f"The marginal of {name!r} sums to {arr.sum():.6g}, not 1.")
        counts = np.broadcast_to(np.asarray(n_reports, dtype=np.int64), (len(tables),))
        if (counts < 0).any():
            raise ValueError("n_reports must be non-negative.")
        domains = [np.asarray(t.columns) for t in tables]
        arrays = [t.to_numpy(dtype=float) for t in tables]
        self.channels_ = {}
        self._fit_tables(classes, domains, arrays, counts.copy())
        self._epsilon_spent = float("nan")
        self.n_features_in_ = len(tables)
        self.feature_names_in_ = np.asarray(names, dtype=object)
        return self

    def _fit_tables(self, classes, domains, tables, counts):
        """The smoothed model from the d estimated joint tables."""
        alpha = float(self.alpha)
        K = classes.size
        total = float(counts.sum())
        pooled = sum(n * t.sum(axis=1) for n, t in zip(counts, tables, strict=True))
        prior_hat = pooled / total if total > 0 else np.full(K, 1.0 / K)
        prior = (total * prior_hat + alpha) / (total + alpha * K)
        if not (prior > 0).all():
            prior = np.clip(prior, 1e-300, None)
        self.classes_ = classes
        self.categories_ = list(domains)
        self.joint_distributions_ = [np.asarray(t, dtype=float) for t in tables]
        self.n_reports_ = counts
        self.class_log_prior_ = np.log(prior / prior.sum())
        log_probs = []
        for n_j, table in zip(counts, tables, strict=True):
            V = table.shape[1]
            num = n_j * table + alpha
            den = n_j * table.sum(axis=1, keepdims=True) + alpha * V
            with np.errstate(divide="ignore", invalid="ignore"):
                theta = np.where(den > 0, num / np.where(den > 0, den, 1.0), 1.0 / V)
            with np.errstate(divide="ignore"):
                log_probs.append(np.log(theta))
        self.feature_log_prob_ = log_probs

    # ------------------------------------------------------------ prediction
    def _joint_log_likelihood(self, X):
        check_is_fitted(self, "feature_log_prob_")
        values = _checked_values(X, self)
        validate_data(self, X, reset=False, skip_check_array=True)
        if values.shape[1] != len(self.categories_):
            raise ValueError(
                f"X has {values.shape[1]} features, but {type(self).__name__} is "
                f"expecting {len(self.categories_)} features as input."
            )
        jll = np.tile(self.class_log_prior_, (values.shape[0], 1))
        for j, domain in enumerate(self.categories_):
            codes = _codes(values[:, j], domain, f"feature {j}", "categories")
            jll = jll + self.feature_log_prob_[j][:, codes].T
        return jll

    def predict_log_proba(self, X: Any) -> np.ndarray:
        """Log-probabilities of the classes for clean rows.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        log_proba : ndarray of shape (n_samples, n_classes)
        """
        return log_softmax(self._joint_log_likelihood(X), axis=1)

    def predict_proba(self, X: Any) -> np.ndarray:
        """Probabilities of the classes for clean rows.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
        """
        return np.exp(self.predict_log_proba(X))

    def predict(self, X: Any) -> np.ndarray:
        """The most likely class of each clean row.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        labels : ndarray of shape (n_samples,)
        """
        jll = self._joint_log_likelihood(X)
        return self.classes_[np.argmax(jll, axis=1)]

    @property
    def epsilon_spent_(self) -> float:
        """The budget one user spends: one report at ``epsilon``."""
        check_is_fitted(self, "feature_log_prob_")
        return self._epsilon_spent

    # ------------------------------------------------------------ validation
    def _feature_values(self, X):
        values = _checked_values(X, self)
        missing = is_missing(values.ravel())
        if missing.any():
            raise ValueError(
                f"X has {int(missing.sum())} missing values (NaN/None); declare a "
                "missing-value category or drop those rows."
            )
        names = getattr(X, "columns", None)
        names = (
            [str(c) for c in names]
            if names is not None
            else [f"x{j}" for j in range(values.shape[1])]
        )
        return values, names

    def _labels(self, y, n):
        y = column_or_1d(y, warn=True)
        if y.shape[0] != n:
            raise ValueError(f"X has {n} rows but y has {y.shape[0]} labels.")
        if is_missing(y).any():
            raise ValueError(f"y has {int(is_missing(y).sum())} missing labels (NaN/None).")
        check_classification_targets(y)
        return y

    def _resolve_classes(self, labels):
        if isinstance(self.classes, str):
            classes = np.unique(labels)
        else:
            classes = np.asarray(self.classes)
            if classes.ndim != 1 or pd.Index(classes).has_duplicates:
                raise ValueError("classes must be a list of distinct labels.")
        if classes.size < 2:
            raise ValueError(
                f"y has {classes.size} class (one label for every row): a classifier "
                "needs at least two labels."
            )
        return classes

    def _resolve_categories(self, values, names):
        d = values.shape[1]
        if isinstance(self.categories, str):
            import warnings

            warnings.warn(
                "categories='auto' learns each feature's domain from the private "
                "data, which reveals which values occur. Pass the public domains "
                "as categories=[[...], ...] in a deployment.",
                PrivacyLeakWarning,
                stacklevel=3,
            )
            return [_unique(values[:, j]) for j in range(d)]
        if len(self.categories) != d:
            raise ValueError(f"categories gives {len(self.categories)} domains for {d} features.")
        domains = []
        for j, domain in enumerate(self.categories):
            arr = np.asarray(domain, dtype=object if isinstance(domain, list) else None)
            if arr.ndim != 1 or arr.size < 1 or pd.Index(arr).has_duplicates:
                raise ValueError(
                    f"categories[{j}] ({names[j]!r}) must be a list of distinct values."
                )
            domains.append(arr)
        return domains

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.categorical = True
        tags.input_tags.string = True
        tags.non_deterministic = True
        return tags


# --------------------------------------------------------------- helpers
def _check_one_symbol(mech):
    """The pair oracle must send one symbol per report (one value per cell)."""
    probe = clone(mech).set_params(random_state=0).fit()
    if not isinstance(probe.channel_, CategoricalChannel):
        raise ValueError(
            f"The pair oracle {type(mech).__name__} sends bit vectors; the pair reports "
            "are one value per user (a DataFrame column per feature): use a one-symbol "
            "mechanism (RandomizedResponse, OptimizedLocalHashing, HadamardResponse, ...)."
        )


def _checked_values(X, estimator):
    """X as a 2-D array (object for a DataFrame, so each column keeps its
    values' types), with scikit-learn's checks: no sparse input, no NaN or
    infinity, at least one row and one column, 2-D."""
    if isinstance(X, pd.DataFrame):
        X = X.astype(object)
    return check_array(
        X,
        dtype=None,
        accept_sparse=False,
        ensure_all_finite=True,
        ensure_min_samples=1,
        ensure_min_features=1,
        input_name="X",
        estimator=estimator,
    )


def _unique(column):
    uniques = pd.unique(pd.Series(column, dtype=object))
    try:
        return np.sort(np.asarray(uniques.tolist()))
    except TypeError:
        return np.asarray(sorted(uniques, key=repr), dtype=object)


def _codes(values, domain, name, what):
    """Positions of ``values`` in ``domain``; unknown values refused (counted, not shown)."""
    index = pd.Index(domain)
    codes = index.get_indexer(pd.Index(np.asarray(values, dtype=object)))
    bad = codes < 0
    if bad.any():
        raise ValueError(
            f"{name} has {int(bad.sum())} value(s) outside its {what} "
            f"({index.size} values); add them to the public domain or drop those rows."
        )
    return codes.astype(np.int64)


def _as_int(values, name):
    try:
        arr = np.asarray(values.tolist(), dtype=float)
    except (TypeError, ValueError):
        raise ReportMismatchError(
            f"The reports of feature {name!r} must be integer codes of the pair oracle."
        ) from None
    if not np.isfinite(arr).all() or (arr != np.round(arr)).any():
        raise ReportMismatchError(
            f"The reports of feature {name!r} must be integer codes of the pair oracle."
        )
    return arr.astype(np.int64)
