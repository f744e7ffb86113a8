"""The privacy/utility search and simulation scorers."""

from __future__ import annotations

import inspect
import numbers
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, TypeVar

import numpy as np
import pandas as pd
from joblib import Parallel, delayed, effective_n_jobs
from sklearn.base import BaseEstimator, clone
from sklearn.model_selection import ParameterGrid
from sklearn.pipeline import Pipeline
from sklearn.utils.validation import check_is_fitted

from ..estimators._base import DistributionEstimator
from ..mechanisms._base import BaseMechanism
from ..metrics import l1_loss, l2_loss, mean_squared_error, total_variation
from ..numeric._base import BaseNumericMechanism
from ..numeric._estimator_base import NumericEstimatorBase
from ..utils._random import check_seed_sequence, is_secure
from ..utils._typing import ArrayLike, RandomStateLike
from ..utils._validation import as_label_array

__all__ = [
    "PrivacyUtilitySearchCV",
    "make_simulation_scorer",
    "true_distribution",
    "LOSSES",
    "LEARNER_LOSSES",
]

_SearchT = TypeVar("_SearchT", bound="PrivacyUtilitySearchCV")

#: Seconds that worker processes must save before a search uses them: about
#: the time to start two loky workers that import sklearn-uldp (measured 2-10 s
#: on a 2-core machine, see the performance page).
_PARALLEL_BREAK_EVEN = 10.0

#: Name -> loss(p_true, p_est), lower is better.
LOSSES: dict[str, Callable[[ArrayLike, ArrayLike], float]] = {
    "tv": total_variation,
    "l1": l1_loss,
    "l2": l2_loss,
    "mse": mean_squared_error,
}


def _is_learner(model):
    """A model of :mod:`sklearn_uldp.learning` (or a Pipeline ending in one): it
    privatizes its training data itself, in ``fit(X, y)``. Recognized by what
    it declares (``_privatizes_in_fit``), without importing the subpackage."""
    final = model[-1] if isinstance(model, Pipeline) else model
    return bool(getattr(final, "_privatizes_in_fit", False))


def _noise_keys(model):
    """The ``random_state`` of a learner (the last step of a Pipeline), the
    source of its privatization noise; the seeds of estimators it wraps (e.g.
    a LogisticRegression's) are theirs to keep."""
    if isinstance(model, Pipeline):
        return [f"{model.steps[-1][0]}__random_state"]
    return ["random_state"]


def _learner_error(est, X, y):
    return 1.0 - float(np.mean(np.asarray(est.predict(X)) == np.asarray(y)))


def _learner_log_loss(est, X, y):
    from sklearn.metrics import log_loss

    return float(log_loss(y, est.predict_proba(X), labels=_final_estimator(est).classes_))


def _learner_mse(est, X, y):
    return float(np.mean((np.asarray(est.predict(X), dtype=float) - np.asarray(y, float)) ** 2))


#: Name -> loss(fitted learner, X_test, y_test) on clean held-out rows.
LEARNER_LOSSES: dict[str, Callable[[Any, Any, Any], float]] = {
    "log_loss": _learner_log_loss,
    "error": _learner_error,
    "mse": _learner_mse,
}


def _check_learner_loss(scoring, model):
    """The loss of a learner search; the default "tv" (a distribution loss)
    means the learner's natural loss: log-loss for a probabilistic
    classifier, the error rate for another one, MSE for a regressor."""
    if callable(scoring):
        return scoring, getattr(scoring, "__name__", "loss")
    if scoring == "tv":
        from sklearn.base import is_regressor

        final = _final_estimator(model)
        if is_regressor(final):
            scoring = "mse"
        elif hasattr(final, "predict_proba"):
            scoring = "log_loss"
        else:
            scoring = "error"
    if isinstance(scoring, str) and scoring in LEARNER_LOSSES:
        return LEARNER_LOSSES[scoring], scoring
    raise ValueError(
        f"A learner is scored on held-out clean rows: scoring must be one of "
        f"{sorted(LEARNER_LOSSES)} or a callable loss(fitted, X_test, y_test); got "
        f"{scoring!r}."
    )


def _check_loss(scoring):
    if callable(scoring):
        return scoring, getattr(scoring, "__name__", "loss")
    if isinstance(scoring, str) and scoring in LOSSES:
        return LOSSES[scoring], scoring
    raise ValueError(
        f"scoring must be one of {sorted(LOSSES)} or a callable "
        f"loss(p_true, p_est) -> float; got {scoring!r}."
    )


def _column(X):
    if isinstance(X, pd.DataFrame):
        if X.shape[1] != 1:
            raise ValueError(f"Expected one column of true values, got {X.shape[1]}.")
        X = X.iloc[:, 0]
    if isinstance(X, pd.Series):
        X = X.astype(object).to_numpy()
    arr = np.asarray(X)
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]
    if arr.ndim != 1:
        raise ValueError(f"Expected one column of true values, got shape {arr.shape}.")
    return as_label_array(arr)


def true_distribution(X: Any, categories: ArrayLike) -> np.ndarray:
    """The empirical distribution of the true values ``X`` over ``categories``.

    Parameters
    ----------
    X : array-like of shape (n,) or (n, 1), Series or one-column DataFrame
    categories : array-like of shape (k,)

    Returns
    -------
    p : ndarray of shape (k,)

    Examples
    --------
    >>> from sklearn_uldp.model_selection import true_distribution
    >>> true_distribution(["a", "b", "b", "b"], ["a", "b", "c"]).tolist()
    [0.25, 0.75, 0.0]
    """
    column = _column(X)
    cats = as_label_array(categories)
    codes = pd.Index(cats).get_indexer(column)
    if (codes < 0).any():
        raise ValueError(
            f"{int((codes < 0).sum())} true values are not in the categories, e.g. "
            f"{pd.unique(column[codes < 0])[:5].tolist()}."
        )
    return np.bincount(codes, minlength=len(cats)) / codes.size


def _truth_and_estimate(est, X):
    """What the loss compares: the true and estimated distribution over the
    estimator's categories (or bins of a numeric range), or the true and
    estimated mean(s) for a :class:`~sklearn_uldp.numeric.MeanEstimator` (so
    ``"mse"`` is the squared error of the mean, ``"l1"`` its absolute error)."""
    if isinstance(est, NumericEstimatorBase):
        values = np.asarray(X.to_numpy() if hasattr(X, "to_numpy") else X, dtype=float)
        values = values.reshape(len(values), -1)
        if hasattr(est, "mean_") and not hasattr(est, "distribution_"):
            mean = est.mean_
            truth = values.mean() if np.ndim(mean) == 0 else values.mean(axis=0)
            return np.atleast_1d(truth), np.atleast_1d(mean)
        edges = est.bin_edges_
        counts, _ = np.histogram(np.clip(values, edges[0], edges[-1]), bins=edges)
        return counts / counts.sum(), est.distribution_
    return true_distribution(X, est.categories_), est.distribution_


def _final_estimator(model):
    return model[-1] if isinstance(model, Pipeline) else model


def _mechanism(model):
    return model[0] if isinstance(model, Pipeline) else None


class _SimulationScorer:
    """Scorer ``(fitted pipeline, X_true) -> -loss`` for scikit-learn searches."""

    def __init__(self, loss, name):
        self.loss, self.name = loss, name

    def __call__(self, estimator, X, y=None):
        est = _final_estimator(estimator)
        p_true, p_est = _truth_and_estimate(est, X)
        return -float(self.loss(p_true, p_est))

    def __repr__(self):
        return f"make_simulation_scorer({self.name!r})"


def make_simulation_scorer(
    loss: Literal["tv", "l1", "l2", "mse"] | Callable[[ArrayLike, ArrayLike], float] = "tv",
) -> Callable[..., float]:
    """A scorer comparing a fitted estimate with the true values of ``X``.

    For simulations: the scorer takes a fitted pipeline ``(mechanism,
    distribution estimator)`` and true data ``X`` and returns minus the loss
    between the empirical distribution of ``X`` and the pipeline's estimate
    (greater is better, as scikit-learn expects). It works with
    :class:`~sklearn.model_selection.GridSearchCV`,
    :func:`~sklearn.model_selection.validation_curve` and
    :func:`~sklearn.model_selection.cross_val_score`; the estimate is made
    from the training split's reports and compared with the test split's
    true values, so the loss includes the sampling error.

    Parameters
    ----------
    loss : {"tv", "l1", "l2", "mse"} or callable, default="tv"
        ``loss(p_true, p_est) -> float``, lower is better.

    Returns
    -------
    scorer : callable
        ``scorer(estimator, X, y=None) -> float``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.model_selection import validation_curve, ShuffleSplit
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn_uldp import RandomizedResponse, EmpiricalEstimator
    >>> from sklearn_uldp.model_selection import make_simulation_scorer
    >>> rng = np.random.default_rng(0)
    >>> X = rng.choice(["a", "b", "c"], p=[0.6, 0.3, 0.1], size=(4000, 1))
    >>> pipe = make_pipeline(RandomizedResponse(categories=["a", "b", "c"]),
    ...                      EmpiricalEstimator(projection="simplex"))
    >>> train, test = validation_curve(
    ...     pipe, X, y=None, param_name="randomizedresponse__epsilon",
    ...     param_range=[0.1, 5.0], cv=ShuffleSplit(3, random_state=0),
    ...     scoring=make_simulation_scorer("tv"))
    >>> bool(test.mean(axis=1)[1] > test.mean(axis=1)[0])   # less loss at eps=5
    True
    """
    fn, name = _check_loss(loss)
    return _SimulationScorer(fn, name)


def _fit_and_score(model, params, seed, X, loss, supervised=None):
    """Fit one candidate with one independent seed; return loss and epsilon.

    ``supervised=(y, test_size)`` for a learner: the repeat holds out a random
    ``test_size`` share of the rows (drawn from the repeat's seed), fits on the
    others, whose data the learner privatizes, and scores on the held-out rows'
    clean labels.
    """
    model = clone(model)
    if supervised is not None:
        split_seed = seed if is_secure(seed) else seed.spawn(1)[0]
    # Estimator-valued parameters (mechanisms, estimators) are cloned, as in
    # GridSearchCV: nested set_params (e.g. mech__epsilon) must not mutate the
    # objects of the user's param_grid, which other candidates share.
    params = {k: clone(v, safe=False) for k, v in params.items()}
    model.set_params(**params)
    keys = (
        _noise_keys(model)
        if supervised is not None
        else [k for k in model.get_params() if k == "random_state" or k.endswith("__random_state")]
    )
    if keys:
        # "secure" keeps no seed: every mechanism draws a fresh key per call.
        seeds = [seed] * len(keys) if is_secure(seed) else seed.spawn(len(keys))
        model.set_params(**dict(zip(keys, seeds, strict=False)))
    start = time.perf_counter()
    if supervised is not None:
        y, test_size = supervised
        from sklearn.utils import _safe_indexing

        from ..utils._random import check_random_generator

        n = len(y)
        order = check_random_generator(split_seed).permutation(n)
        n_test = max(1, int(round(test_size * n)))
        test, train = order[:n_test], order[n_test:]
        y = np.asarray(y)
        model.fit(_safe_indexing(X, train), y[train])
        value = loss(model, _safe_indexing(X, test), y[test])
        fit_time = time.perf_counter() - start
        return float(value), float(_final_estimator(model).epsilon_spent_), fit_time
    model.fit(X)
    est = _final_estimator(model)
    p_true, p_est = _truth_and_estimate(est, X)
    fit_time = time.perf_counter() - start
    mech = _mechanism(model)
    eps = float(mech.epsilon_spent_) if mech is not None else np.nan
    return float(loss(p_true, p_est)), eps, fit_time


def _short(value):
    """A short label for a parameter value (estimators without their domain)."""
    if isinstance(value, BaseEstimator):
        try:
            defaults = {
                k: p.default for k, p in inspect.signature(type(value).__init__).parameters.items()
            }
        except (TypeError, ValueError):
            defaults = {}
        shown = []
        for k, v in value.get_params(deep=False).items():
            if k in ("categories", "sensitive", "random_state", "epsilon", "mechanism"):
                continue
            if k in defaults and _same(defaults[k], v):
                continue
            shown.append(f"{k}={_short(v)}")
        name = type(value).__name__
        return f"{name}({', '.join(shown)})" if shown else name
    if isinstance(value, float):
        return f"{value:g}"
    return repr(value) if isinstance(value, str) else str(value)


def _same(a, b):
    try:
        return bool(a is b or a == b)
    except Exception:  # arrays and other odd values
        return False


def _is_epsilon_key(key):
    return key == "epsilon" or key.endswith("__epsilon")


class PrivacyUtilitySearchCV(BaseEstimator):
    """Search mechanisms, theta, estimators and epsilon for the best utility.

    A simulation search with the surface of
    :class:`~sklearn.model_selection.GridSearchCV` (``cv_results_``,
    ``best_index_``, ``best_params_``, ``best_score_``, ``refit`` and
    ``best_estimator_``), where the "splits" are ``n_repeats`` independent
    privatizations of the whole data: for every candidate of ``param_grid``
    it privatizes the true data ``n_repeats`` times with independent
    randomness, estimates the distribution, and measures the loss against
    the true distribution (the score is minus the loss, greater is better).

    Utility always improves as epsilon grows, so the most accurate candidate
    of a grid over epsilon is the least private one. The search answers the
    questions users have:

    (a) ``best_params_at_epsilon_[eps]`` / :meth:`best_candidates` is the
        most accurate candidate at each epsilon;
    (b) with ``target=``, ``target_epsilon_`` is the smallest epsilon whose
        best candidate reaches the target loss (e.g. TV <= 0.05), and the
        ``best_*`` attributes describe that candidate;
    (c) ``cv_results_`` is the whole privacy-utility curve (plot it with
        :class:`~sklearn_uldp.plotting.PrivacyUtilityDisplay`).

    The epsilon of a candidate is what its fitted mechanism spends
    (``epsilon_spent_``), so it is correct even when the grid does not vary
    epsilon. Seeds of all fits are spawned from ``random_state`` up front
    (``SeedSequence.spawn``), so results do not depend on ``n_jobs``.

    Parameters
    ----------
    estimator : Pipeline, mechanism or learner
        A pipeline ``(mechanism, distribution estimator)``, or a bare
        mechanism, which is wrapped as ``Pipeline([("mechanism", mech),
        ("estimator", EmpiricalEstimator(projection="simplex"))])``; for a
        bare mechanism, grid keys without ``__`` (``"epsilon"``, ``"theta"``)
        address the mechanism. Or a model of :mod:`sklearn_uldp.learning`
        (or a Pipeline ending in one), which privatizes its training data in
        ``fit(X, y)``: each repeat then holds out ``test_size`` of the rows,
        fits on the others and is scored on the held-out rows' **clean**
        labels (the noise is in training only; see the "Learning on
        privatized data" page).
    param_grid : dict or list of dicts
        As in :class:`~sklearn.model_selection.GridSearchCV`; values may be
        estimators (e.g. ``{"mechanism": [UtilityOptimizedRR(...),
        UtilityOptimizedRAPPOR(...)], "mechanism__epsilon": [0.5, 1, 2]}``).
    scoring : {"tv", "l1", "l2", "mse"} or callable, default="tv"
        The loss (lower is better); a callable is ``loss(p_true, p_est)``.
        For a learner: ``"log_loss"``, ``"error"`` (1 - accuracy),
        ``"mse"`` or a callable ``loss(fitted, X_test, y_test)``; the
        default means log-loss for a probabilistic classifier, the error
        rate for another one and MSE for a regressor.
    n_repeats : int, default=5
        Independent privatizations per candidate (the "splits").
    target : float or None, default=None
        Target loss. The chosen candidate (``best_*``) is then the best one
        at the smallest epsilon reaching it (``target_epsilon_``); without a
        target (or when none reaches it) it is the most accurate candidate of
        the grid.
    refit : bool, default=True
        Fit the chosen candidate on the whole data (one more privatization)
        as ``best_estimator_``.
    n_jobs : int or None, default=None
        Parallel jobs (joblib processes); each fit has its own spawned seed.
        The processes are used only when the fits, timed on the first one,
        would take long enough in sequence to repay starting them (about
        10 s saved); smaller searches run in this process whatever
        ``n_jobs`` is (see the performance page).
    verbose : int, default=0
        ``>0`` shows a progress bar (tqdm when installed, else a summary
        line); ``>1`` also prints the best candidate per epsilon.
    test_size : float in (0, 1), default=0.3
        For a learner: the share of the rows each repeat holds out (clean)
        to score the fit.
    random_state : None, "secure", int or SeedSequence, default=None
        Root of the seeds of all fits (``None``: from fresh OS entropy).
        ``"secure"`` gives every fit's mechanism the cryptographically secure
        generator instead of a seed.

    Attributes
    ----------
    cv_results_ : DataFrame
        One row per candidate, with scikit-learn's columns (``params``,
        ``param_<name>``, ``split<i>_test_score``, ``mean_test_score``,
        ``std_test_score``, ``rank_test_score``, ``mean_fit_time``,
        ``std_fit_time``; scores are minus the loss) and the loss view:
        ``candidate`` (the non-epsilon parameters as a label), ``epsilon``,
        ``mean_loss``, ``std_loss``, ``min_loss``, ``max_loss``,
        ``repeat<i>_loss`` and ``rank_at_epsilon``.
    best_index_ : int
        Row of ``cv_results_`` of the chosen candidate.
    best_params_ : dict
        Its parameters.
    best_score_ : float
        Its mean score (minus its mean loss).
    best_estimator_ : Pipeline
        The chosen candidate fitted on the whole data (with ``refit=True``).
    best_params_at_epsilon_ : dict of {float: dict}
        Epsilon -> parameters with the smallest mean loss at that epsilon.
    best_loss_at_epsilon_ : dict of {float: float}
        Epsilon -> that smallest mean loss.
    best_index_at_epsilon_ : dict of {float: int}
        Epsilon -> its row of ``cv_results_``.
    target_epsilon_ : float or None
        Smallest epsilon whose best mean loss is <= ``target`` (None when
        ``target`` is None or unreachable in the grid).
    target_params_ : dict or None
        The best parameters at ``target_epsilon_``.
    scoring_name_ : str
        Name of the loss.
    n_splits_ : int
        ``n_repeats``.
    refit_time_ : float
        Seconds taken by the refit.

    See Also
    --------
    sklearn_uldp.model_selection.make_simulation_scorer : the same losses as
        a scorer for scikit-learn's own searches.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_uldp import UtilityOptimizedRR, UtilityOptimizedRAPPOR
    >>> from sklearn_uldp.model_selection import PrivacyUtilitySearchCV
    >>> rng = np.random.default_rng(0)
    >>> cats = list("abcdefgh")
    >>> X = rng.choice(cats, size=(5000, 1))
    >>> search = PrivacyUtilitySearchCV(
    ...     UtilityOptimizedRR(sensitive=["a", "b"], categories=cats),
    ...     {"epsilon": [0.1, 0.5, 1.0, 4.0]}, n_repeats=3, target=0.03,
    ...     random_state=0).fit(X)
    >>> sorted(search.best_params_at_epsilon_)
    [0.1, 0.5, 1.0, 4.0]
    >>> search.target_epsilon_, search.best_params_
    (1.0, {'epsilon': 1.0})
    >>> bool(search.best_score_ >= -0.03)
    True
    >>> search.best_estimator_[0].epsilon
    1.0
    >>> search.cv_results_[["epsilon", "mean_loss", "rank_test_score"]].shape
    (4, 3)
    """

    def __init__(
        self,
        estimator: Any,
        param_grid: Mapping[str, Sequence[Any]] | Sequence[Mapping[str, Sequence[Any]]],
        *,
        scoring: str | Callable[[ArrayLike, ArrayLike], float] = "tv",
        n_repeats: int = 5,
        target: float | None = None,
        refit: bool = True,
        n_jobs: int | None = None,
        verbose: int = 0,
        test_size: float = 0.3,
        random_state: RandomStateLike = None,
    ) -> None:
        self.estimator = estimator
        self.param_grid = param_grid
        self.scoring = scoring
        self.n_repeats = n_repeats
        self.target = target
        self.refit = refit
        self.n_jobs = n_jobs
        self.verbose = verbose
        self.test_size = test_size
        self.random_state = random_state

    # ------------------------------------------------------------ helpers
    def _model(self):
        from ..estimators import EmpiricalEstimator

        est = self.estimator
        if isinstance(est, BaseMechanism):
            return Pipeline(
                [
                    ("mechanism", est),
                    ("estimator", EmpiricalEstimator(projection="simplex")),
                ]
            ), True
        if isinstance(est, BaseNumericMechanism):
            from ..numeric import MeanEstimator, SquareWave, SquareWaveEstimator

            numeric = SquareWaveEstimator() if isinstance(est, SquareWave) else MeanEstimator()
            return Pipeline([("mechanism", est), ("estimator", numeric)]), True
        if _is_learner(est):
            return est, False
        if isinstance(est, Pipeline):
            if not isinstance(est[0], BaseMechanism | BaseNumericMechanism):
                raise TypeError(
                    f"The pipeline's first step must be a mechanism, got {type(est[0]).__name__}."
                )
            if not isinstance(est[-1], DistributionEstimator | NumericEstimatorBase):
                raise TypeError(
                    "The pipeline's last step must be a distribution estimator "
                    f"(e.g. EmpiricalEstimator()), got {type(est[-1]).__name__}."
                )
            return est, False
        hint = ""
        if hasattr(est, "mechanisms") and hasattr(est, "strategy"):
            # A table's privatizer: the search scores one column's estimate.
            hint = (
                " The search scores the estimate of one column: search a column's "
                "mechanism on that column, e.g. PrivacyUtilitySearchCV("
                "priv.mechanisms_['age'], {'epsilon': [...]}).fit(df[['age']]) "
                "(under strategy='sample' each column is reported by 1/d of the "
                "rows: search on a sample of that size), then set_params("
                "age__epsilon=...) on the privatizer."
            )
        raise TypeError(
            "estimator must be a mechanism, a Pipeline(mechanism, distribution "
            "estimator) or a learner of sklearn_uldp.learning; got "
            f"{type(est).__name__}." + hint
        )

    @staticmethod
    def _route(params, bare):
        if not bare:
            return dict(params)
        return {
            (k if "__" in k or k in ("mechanism", "estimator") else f"mechanism__{k}"): v
            for k, v in params.items()
        }

    def _check_params(self):
        if (
            isinstance(self.n_repeats, bool)
            or not isinstance(self.n_repeats, numbers.Integral)
            or self.n_repeats < 1
        ):
            raise ValueError(f"n_repeats must be a positive integer, got {self.n_repeats!r}.")
        if not isinstance(self.refit, bool | np.bool_):
            raise ValueError(f"refit must be True or False, got {self.refit!r}.")
        if self.target is not None and not (
            isinstance(self.target, numbers.Real) and self.target > 0
        ):
            raise ValueError(f"target must be a positive loss or None, got {self.target!r}.")
        if isinstance(self.param_grid, dict):
            grids = [self.param_grid]
        else:
            grids = list(self.param_grid)
        for g in grids:
            if not isinstance(g, dict):
                raise TypeError("param_grid must be a dict or a list of dicts.")
            for k, v in g.items():
                if isinstance(v, (str, bytes)) or not hasattr(v, "__iter__"):
                    raise TypeError(f"param_grid[{k!r}] must be a list of values, got {v!r}.")
        return ParameterGrid(self.param_grid)

    # ---------------------------------------------------------------- fit
    def fit(self: _SearchT, X: Any, y: object = None) -> _SearchT:
        """Run the search on the true data ``X``.

        Parameters
        ----------
        X : array-like of shape (n_samples, 1), Series or one-column DataFrame
            The true values (a simulation: the search knows them); for a
            learner, its features.
        y : None or array-like of shape (n_samples,)
            Ignored, except for a learner: its true labels (targets).

        Returns
        -------
        self : object
        """
        grid = list(self._check_params())
        model, bare = self._model()
        supervised = None
        if _is_learner(model):
            if y is None:
                raise ValueError(
                    f"{type(_final_estimator(model)).__name__} learns from labels: pass "
                    "them, search.fit(X, y) (the true labels of the simulation)."
                )
            if not (isinstance(self.test_size, numbers.Real) and 0 < self.test_size < 1):
                raise ValueError(f"test_size must be in (0, 1), got {self.test_size!r}.")
            if len(y) != len(X):  # type: ignore[arg-type]
                raise ValueError(f"X has {len(X)} rows but y has {len(y)}.")  # type: ignore[arg-type]
            supervised = (y, float(self.test_size))
            loss, scoring_name = _check_learner_loss(self.scoring, model)
        else:
            loss, scoring_name = _check_loss(self.scoring)
        self.scoring_name_: str = scoring_name
        routed = [self._route(p, bare) for p in grid]
        R = int(self.n_repeats)
        if is_secure(self.random_state):
            seeds = [self.random_state] * (len(grid) * R)
        else:
            seeds = check_seed_sequence(self.random_state).spawn(len(grid) * R)
        tasks = [(i, r) for i in range(len(grid)) for r in range(R)]
        results = list(
            self._progress(self._run(model, routed, seeds, X, loss, tasks, supervised), len(tasks))
        )
        losses = np.array([res[0] for res in results]).reshape(len(grid), R)
        eps = np.array([res[1] for res in results]).reshape(len(grid), R)[:, 0]
        times = np.array([res[2] for res in results]).reshape(len(grid), R)
        self.cv_results_ = self._results_frame(grid, losses, eps, times)
        self.n_splits_ = R
        self._summarize()
        if self.refit:
            best = clone(model)
            best.set_params(
                **{k: clone(v, safe=False) for k, v in routed[self.best_index_].items()}
            )
            keys = (
                _noise_keys(best)
                if supervised is not None
                else [
                    k
                    for k in best.get_params()
                    if k == "random_state" or k.endswith("__random_state")
                ]
            )
            if keys and self.random_state is not None:
                # None leaves the mechanisms' own random_state: the refitted
                # pipeline may privatize real data, and must hold no seed.
                root = self.random_state
                refit_seeds: list[Any]
                if is_secure(root):
                    refit_seeds = [root] * len(keys)
                else:
                    # A child after the fits' ones: never a fit's stream.
                    child = check_seed_sequence(root).spawn(len(grid) * R + 1)[-1]
                    refit_seeds = child.spawn(len(keys))
                best.set_params(**dict(zip(keys, refit_seeds, strict=True)))
            start = time.perf_counter()
            self.best_estimator_ = best.fit(X) if supervised is None else best.fit(X, y)
            self.refit_time_ = time.perf_counter() - start
        return self

    def _run(self, model, routed, seeds, X, loss, tasks, supervised=None):
        """The fits, in order: in worker processes only when it pays.

        The first fit runs here and is timed. The others go to ``n_jobs``
        processes only when their estimated time in sequence, shared between
        the processes, saves more than starting the processes costs
        (``_PARALLEL_BREAK_EVEN`` seconds); otherwise they run here too.
        Every fit has its own seed, so the results are the same either way.
        """
        R = int(self.n_repeats)

        def job(t):
            i, r = t
            return _fit_and_score(model, routed[i], seeds[i * R + r], X, loss, supervised)

        start = time.perf_counter()
        yield job(tasks[0])
        rest = tasks[1:]
        if not rest:
            return
        n_jobs = min(effective_n_jobs(self.n_jobs), len(rest))
        sequential = (time.perf_counter() - start) * len(rest)
        if n_jobs > 1 and sequential * (1 - 1 / n_jobs) > _PARALLEL_BREAK_EVEN:
            yield from Parallel(n_jobs=n_jobs, return_as="generator")(
                delayed(_fit_and_score)(model, routed[i], seeds[i * R + r], X, loss, supervised)
                for i, r in rest
            )
        else:
            for t in rest:
                yield job(t)

    def _progress(self, iterable, total):
        if not self.verbose:
            return iterable
        try:
            from tqdm.auto import tqdm
        except ImportError:  # pragma: no cover - tqdm is an optional extra
            print(
                f"PrivacyUtilitySearchCV: {total} fits "
                f"({total // self.n_repeats} candidates x {self.n_repeats} repeats)"
            )
            return iterable
        return tqdm(iterable, total=total, desc="privacy/utility search", unit="fit")

    def _results_frame(self, grid, losses, eps, times):
        keys = sorted({k for p in grid for k in p})
        frame = pd.DataFrame({"params": grid})
        for k in keys:
            frame[f"param_{k}"] = pd.Series([p.get(k, np.nan) for p in grid], dtype=object)
        frame["candidate"] = [
            ", ".join(
                _short(v) if isinstance(v, BaseEstimator) else f"{k}={_short(v)}"
                for k, v in sorted(p.items())
                if not _is_epsilon_key(k)
            )
            or "default"
            for p in grid
        ]
        frame["epsilon"] = eps
        frame["mean_loss"] = losses.mean(axis=1)
        frame["std_loss"] = losses.std(axis=1)
        frame["min_loss"] = losses.min(axis=1)
        frame["max_loss"] = losses.max(axis=1)
        for r in range(losses.shape[1]):
            frame[f"repeat{r}_loss"] = losses[:, r]
        frame["mean_fit_time"] = times.mean(axis=1)
        frame["std_fit_time"] = times.std(axis=1)
        frame["rank_at_epsilon"] = (
            frame.groupby("epsilon")["mean_loss"].rank(method="min").astype(int)
        )
        # scikit-learn's view: scores are minus the losses (greater is better).
        for r in range(losses.shape[1]):
            frame[f"split{r}_test_score"] = -losses[:, r]
        frame["mean_test_score"] = -frame["mean_loss"]
        frame["std_test_score"] = frame["std_loss"]
        frame["rank_test_score"] = (
            frame["mean_test_score"].rank(method="min", ascending=False).astype(np.int32)
        )
        return frame

    def _summarize(self):
        res = self.cv_results_
        self.best_params_at_epsilon_, self.best_loss_at_epsilon_ = {}, {}
        self.best_index_at_epsilon_ = {}
        for e, group in res.groupby("epsilon", sort=True):
            i = int(group["mean_loss"].idxmin())
            key = float(e)
            self.best_params_at_epsilon_[key] = res.at[i, "params"]
            self.best_loss_at_epsilon_[key] = float(res.at[i, "mean_loss"])
            self.best_index_at_epsilon_[key] = i
        self.target_epsilon_ = self.target_params_ = None
        best = int(res["mean_loss"].idxmin())
        if self.target is not None:
            reached = [e for e, v in self.best_loss_at_epsilon_.items() if v <= self.target]
            if reached:
                self.target_epsilon_ = min(reached)
                self.target_params_ = self.best_params_at_epsilon_[self.target_epsilon_]
                best = self.best_index_at_epsilon_[self.target_epsilon_]
            else:
                warnings.warn(
                    f"No candidate reaches {self.scoring_name_} <= {self.target} "
                    "in the grid; try larger epsilons, more users or another "
                    "mechanism. best_params_ is the most accurate candidate.",
                    UserWarning,
                    stacklevel=3,
                )
        self.best_index_ = best
        self.best_params_ = res.at[best, "params"]
        self.best_score_ = float(res.at[best, "mean_test_score"])
        if self.verbose > 1:
            for e in self.best_params_at_epsilon_:
                print(
                    f"epsilon={e:g}: best {self.scoring_name_}="
                    f"{self.best_loss_at_epsilon_[e]:.4g} with "
                    f"{res.at[self.best_index_at_epsilon_[e], 'candidate']}"
                )

    def best_candidates(self) -> pd.DataFrame:
        """The best row of ``cv_results_`` at each epsilon.

        Returns
        -------
        best : DataFrame
            Indexed by epsilon.
        """
        check_is_fitted(self, "cv_results_")
        rows = self.cv_results_.loc[list(self.best_index_at_epsilon_.values())]
        return rows.set_index("epsilon")
