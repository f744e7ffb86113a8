"""Inputs of mechanisms that mix label types, and the wording of their errors."""

import numpy as np
import pandas as pd
import pytest

from sklearn_uldp import (
    RAPPOR,
    BinaryOptimalResponse,
    HadamardResponse,
    NonPrivate,
    RandomizedResponse,
    UtilityOptimizedRR,
)


def test_mixed_domain_with_integer_batch_keeps_the_text_label():
    # A domain of integers plus a missing-value label; a batch of integers only
    # used to be cast to int, which failed on the label '(missing)'.
    mech = RandomizedResponse(1.0, categories=[1, 2, "(missing)"], random_state=0)
    X = np.array([[1], [2]] * 200)
    reports = np.asarray(mech.fit(X).transform(X)).ravel()
    assert set(reports.tolist()) == {1, 2, "(missing)"}


@pytest.mark.parametrize(
    "bad, expected",
    [
        # counted and located, never shown (no message quotes a user's value)
        (np.array([[11]]), "X holds 1 value (integer) of unknown categories, at row 0"),
        (np.array([[11], [12]]), "X holds 2 values (2 distinct: integer) of unknown categories"),
    ],
)
def test_unknown_categories_are_listed_as_plain_values(bad, expected):
    mech = UtilityOptimizedRR(1.0, sensitive=[0], categories=[0, 1, 2]).fit()
    with pytest.raises(ValueError) as info:
        mech.transform(bad)
    assert expected in str(info.value)
    assert "np.int64" not in str(info.value) and "11" not in str(info.value)


# ---------------------------------------------------------------- issue 11
def test_reports_are_not_cast_when_a_category_would_change():
    # An integer batch over the domain [1, 2.5]: a report can be 2.5, which
    # an int cast turned into 2 (a value outside the domain).
    mech = RandomizedResponse(0.1, categories=[1, 2.5], random_state=0).fit()
    reports = np.asarray(mech.transform(np.ones((200, 1), int))).ravel()
    assert set(reports.tolist()) == {1.0, 2.5}
    # A cast that keeps every category still gives the input's dtype.
    mech = RandomizedResponse(0.1, categories=[1.0, 2.0], random_state=0).fit()
    assert np.asarray(mech.transform(np.ones((5, 1), int))).dtype == np.int64


@pytest.mark.parametrize(
    "make",
    [
        lambda: NonPrivate(categories=[False, True]),
        lambda: RandomizedResponse(1.0, categories=[False, True], random_state=0),
        lambda: HadamardResponse(1.0, categories=[False, True], random_state=0),
        lambda: RAPPOR(1.0, categories=[False, True], random_state=0),
        lambda: BinaryOptimalResponse(1.0, 1.0, categories=[True, False], random_state=0),
    ],
)
@pytest.mark.parametrize(
    "X",
    [
        pd.DataFrame({"c": pd.Series([False, True, False], dtype="category")}),
        pd.Series([False, True, True], dtype="category", name="c"),
        pd.DataFrame({"c": pd.Series([False, True, False], dtype="boolean")}),
    ],
)
def test_boolean_category_and_nullable_columns_are_booleans(make, X):
    # validate_data turns these columns into 0.0/1.0, which are not the
    # categories False/True.
    before = X.copy()
    mech = make().fit()
    reports = mech.transform(X)
    assert np.asarray(reports).shape[0] == len(X)
    assert X.equals(before)
    assert repr(pd.DataFrame(X).dtypes) == repr(pd.DataFrame(before).dtypes)
    assert NonPrivate(categories=[False, True]).fit(X).categories_.tolist() == [False, True]


def test_boolean_category_column_with_missing_values_needs_a_marker():
    X = pd.DataFrame({"c": pd.Series([False, None, True], dtype="category")})
    reports = NonPrivate(categories=[False, True, None]).fit().transform(X)
    assert np.asarray(reports).ravel().tolist() == [False, None, True]
    with pytest.raises(ValueError, match="missing values"):
        NonPrivate(categories=[False, True]).fit().transform(X)


def test_bytes_and_text_domain():
    # numpy cannot type [b"\xff", ""] (it decodes the bytes as ASCII).
    mech = RandomizedResponse(2.0, categories=[b"\xff", ""], random_state=0).fit()
    assert mech.categories_.tolist() == [b"\xff", ""]
    X = np.array([[b"\xff"], [""]], dtype=object)
    assert set(np.asarray(mech.transform(X)).ravel().tolist()) <= {b"\xff", ""}
    with pytest.raises(ValueError, match="one-dimensional"):
        RandomizedResponse(2.0, categories=[[b"\xff"], ["", "a"]]).fit()


@pytest.mark.parametrize(
    "categories, X, bad",
    [
        ([0, 1], pd.Series([1, True], dtype=object), "(boolean)"),
        ([0, 1], np.array([[0], [False]], dtype=object), "(boolean)"),
        ([False, True], np.array([[False], [1.0], [True]], dtype=object), "(float)"),
        ([False, True], np.array([[1], [True]], dtype=object), "(integer)"),
        (["a", 1, 2.5], pd.Series(["a", True], dtype=object), "(boolean)"),
        ([True, 2], np.array([[2], [1]], dtype=object), "(integer)"),
    ],
)
def test_booleans_are_not_numbers(categories, X, bad):
    # Python hashes True like 1: a lookup alone accepted True as category 1
    # (while a whole boolean column was refused).
    mech = RandomizedResponse(1.0, categories=categories, random_state=0).fit()
    with pytest.raises(ValueError, match="True is not the category 1") as info:
        mech.transform(X)
    assert f"1 value {bad} of unknown categories" in str(info.value)


# ------------------------------------- estimator parameters and joint domains
def _reports():
    mech = RandomizedResponse(1.0, categories=["a", "b", "c"], random_state=0)
    return mech.fit_transform(np.array([["a"], ["b"], ["c"], ["a"]], dtype=object))


@pytest.mark.parametrize(
    "init",
    [
        np.zeros(3),
        [1.0, np.nan, 1.0],
        [1.0, -1.0, 1.0],
        [1.0, 1.0],
        ["a", "b", "c"],
        [1.0, np.inf, 0.0],
    ],
)
def test_em_init_is_validated(init):
    from sklearn_uldp import EMEstimator

    with pytest.raises(ValueError, match="init must be a vector of 3 finite non-negative"):
        EMEstimator(init=init).fit(_reports())


def test_em_init_is_normalized():
    from sklearn_uldp import EMEstimator

    a = EMEstimator(init=[1e308, 1e308, 1e308]).fit(_reports()).distribution_
    b = EMEstimator(init="uniform").fit(_reports()).distribution_
    np.testing.assert_allclose(a, b)


def test_personalized_background_as_a_list_of_categories_is_refused():
    from sklearn_uldp import PersonalizedEstimator, PersonalizedMechanism

    mech = PersonalizedMechanism(
        1.0, sensitive=["a"], tags=["home"], categories=["a", "b", "c"], random_state=0
    )
    reports = mech.fit_transform(pd.DataFrame({"v": ["a", "b", "c"], "home": ["b", None, "c"]}))
    with pytest.raises(ValueError, match=r"numeric weights.*\{category: weight\}"):
        PersonalizedEstimator(background={"home": ["a"]}).fit(reports)
    with pytest.raises(ValueError, match="numeric weights"):
        PersonalizedEstimator(background={"home": {"a": "x"}}).fit(reports)
    # The documented forms still work: weights in order, or a dict.
    uniform = PersonalizedEstimator(background={"home": {"b": 1, "c": 1}}).fit(reports)
    ordered = PersonalizedEstimator(background={"home": [0, 1, 1]}).fit(reports)
    np.testing.assert_allclose(uniform.distribution_, ordered.distribution_)


_DF = pd.DataFrame({"a": ["a"], "b": ["x"]})


@pytest.mark.parametrize(
    "domain, message",
    [
        ([["a", "b"], ["c", "d"]], "flat list of values"),
        ("abc", "a string is not a list"),
        (5, "must be a list"),
        (["a", None, np.nan], "2 missing-value markers"),
        ([1, True, 0], "duplicates"),
    ],
)
def test_joint_encoder_domains_are_validated(domain, message):
    from sklearn_uldp.compose import JointEncoder

    with pytest.raises(ValueError, match=message):
        JointEncoder({"a": domain, "b": ["x", "y"]}).fit(_DF)


def test_joint_encoder_domain_with_a_missing_marker():
    from sklearn_uldp.compose import JointEncoder

    df = pd.DataFrame({"a": ["a", None, "v1", np.nan], "b": ["x", "y", "y", "x"]})
    before = df.copy()
    enc = JointEncoder({"a": ["a", "v1", np.nan], "b": ["x", "y"]}).fit(df)
    labels = enc.transform(df)["joint"].tolist()
    assert labels == ["a|x", "nan|y", "v1|y", "nan|x"]
    back = enc.inverse_transform(labels)
    assert back["a"].isna().tolist() == [False, True, False, True]
    pd.testing.assert_frame_equal(df, before)
    marginal = enc.marginals(np.full(6, 1 / 6))["a"]
    np.testing.assert_allclose(marginal.to_numpy(), [1 / 3] * 3)
    with pytest.raises(ValueError, match="no missing-value marker"):
        JointEncoder({"a": ["a", "v1"], "b": ["x", "y"]}).fit(df).transform(df)


def test_joint_encoder_compares_values_with_their_type():
    from sklearn_uldp.compose import JointEncoder

    enc = JointEncoder({"a": ["1", "2"], "b": ["x", "y"]}).fit(None)
    with pytest.raises(ValueError, match="outside its domain"):
        enc.transform(pd.DataFrame({"a": [1], "b": ["x"]}))
    with pytest.raises(TypeError, match="separator must be a string"):
        JointEncoder({"a": ["1", "2"], "b": ["x", "y"]}, separator=5).fit(None)


def test_personalized_mechanism_refuses_true_as_the_category_one():
    import pandas as pd

    from sklearn_uldp import PersonalizedMechanism

    mech = PersonalizedMechanism(
        1.0, sensitive=[0], tags=["home"], categories=[0, 1, 2], random_state=0
    )
    frame = pd.DataFrame({"v": pd.Series([1, True], dtype=object), "home": [None, None]})
    with pytest.raises(ValueError, match="True is not the category 1"):
        mech.fit(frame).transform(frame)


def test_unlimited_budget_stays_unlimited_after_an_unlimited_spend():
    import math

    from sklearn_uldp.privacy import BudgetAccountant

    acc = BudgetAccountant(math.inf)
    acc.spend(math.inf)
    assert acc.remaining == math.inf


# ------------------------------------------------------------ issue 20, item 5
@pytest.mark.parametrize(
    "make",
    [
        lambda: __import__("sklearn_uldp").RandomizedResponse(
            1.0, categories=["a", "b"], random_state=0
        ),
        lambda: __import__("sklearn_uldp").RAPPOR(1.0, categories=["a", "b"], random_state=0),
    ],
    ids=["rr", "rappor"],
)
def test_fitted_without_data_a_frame_names_its_reports(make):
    # fit() on the public domain alone knows no column name: a DataFrame then
    # names the reports (and keys the seeded stream) as fit(frame) would,
    # instead of silently renaming its column "x0".
    import warnings

    frame = pd.DataFrame({"city": ["a", "b", "a", "b", "b"]})
    mech = make().set_output(transform="pandas").fit()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        reports = mech.transform(frame)
        series_reports = mech.transform(frame["city"])
    expected = make().set_output(transform="pandas").fit(frame).transform(frame)
    pd.testing.assert_frame_equal(reports, expected)
    assert list(series_reports.columns) == list(expected.columns)
    assert all(str(c).startswith("city") for c in reports.columns)
    # the mechanism itself is unchanged: unnamed input is still column x0
    assert not hasattr(mech, "feature_names_in_")
    assert list(mech.get_feature_names_out()) == [c.replace("city", "x0") for c in expected.columns]
    assert list(mech.transform(np.array([["a"]])).columns) == list(mech.get_feature_names_out())


def test_set_output_refuses_containers_that_cannot_carry_the_channel():
    from sklearn_uldp import RandomizedResponse

    with pytest.raises(ValueError, match="polars.from_pandas"):
        RandomizedResponse(1.0, categories=["a", "b"]).set_output(transform="polars")
