"""Learning on privatized data: the figures of issue 33, in one run.

On a real table, AER's CPS1988 (:func:`sklearn_uldp.datasets.load_wage_survey`:
28,155 workers, is the weekly wage above the median, six categorical
features, a 70/30 split with seed 0), measured against the non-private models:

1. labels privatized by k-RR at eps = 1: log-loss and accuracy of the plain
   logistic regression on the noisy labels, the forward correction, the
   posterior correction (the default) and RR-with-prior; goal: the
   label-private log-loss within 0.03 of the non-private one, and below the
   plain model's;
2. naive Bayes from privatized (label, feature) pairs at eps = 2 on the
   19,708 training users; goal: within 0.04 of non-private naive Bayes
   (accuracy; log-loss shown);
3. LDP-SGD logistic regression (Wang et al., ICDE 2019) with 500,000 users:
   the training split resampled with replacement to 500,000 simulated users
   (no real table of that size ships offline; CPS1988 stands in for the
   paper's IPUMS census tables BR and MX, whose "total income above the
   mean" label it mirrors), one-hot features with k - 1 dummies (the
   paper's encoding), Duchi, Piecewise and Hybrid noise, eps in {0.5, 1, 2,
   4}; goal: at eps = 4, at least halfway from the majority rate to the
   non-private accuracy;
4. the perturbed gradients' variance against the closed forms (Wang et al.'s
   Eqs. (14)-(15), and the exact one of the package's output grid).

Run::

    python benchmarks/bench_learning.py            # about 2 minutes on 2 cores
    python benchmarks/bench_learning.py --quick    # smaller, for a smoke test
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import accuracy_score, log_loss
from sklearn.model_selection import train_test_split
from sklearn.naive_bayes import CategoricalNB
from sklearn.preprocessing import OneHotEncoder, OrdinalEncoder

from sklearn_uldp.datasets import load_wage_survey
from sklearn_uldp.learning import (
    LabelPrivacyClassifier,
    LDPLogisticRegression,
    LDPNaiveBayes,
    gradient_variance,
    privatize_gradients,
)
from sklearn_uldp.mechanisms import RandomizedResponse


def _table(header, rows):
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows, strict=True)]

    def line(r):
        return "| " + " | ".join(str(x).ljust(w) for x, w in zip(r, widths, strict=True)) + " |"

    print(line(header))
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for r in rows:
        print(line(r))
    print()


def _split():
    data = load_wage_survey()
    X = data.frame.astype(str)
    return train_test_split(X, data.target, test_size=0.3, random_state=0)


def label_privacy(Xtr, Xte, ytr, yte, epsilon, seed):
    enc = OneHotEncoder(handle_unknown="ignore").fit(Xtr)
    A, B = enc.transform(Xtr), enc.transform(Xte)
    base = LogisticRegression(max_iter=1000)
    p = base.fit(A, ytr).predict_proba(B)
    clean = (log_loss(yte, p), accuracy_score(yte, p.argmax(1)))
    rows = [("non-private", f"{clean[0]:.3f}", f"{clean[1]:.3f}", "-", "-")]
    noisy = RandomizedResponse(epsilon, categories=[0, 1], random_state=seed).fit_transform(
        ytr.reshape(-1, 1)
    )
    p = LogisticRegression(max_iter=1000).fit(A, np.asarray(noisy).ravel()).predict_proba(B)
    plain = log_loss(yte, p)
    rows.append(
        (
            "plain LR on k-RR labels",
            f"{plain:.3f}",
            f"{accuracy_score(yte, p.argmax(1)):.3f}",
            "1",
            "-",
        )
    )
    results = {}
    for method in ("forward", "posterior", "rr_with_prior"):
        start = time.perf_counter()
        clf = LabelPrivacyClassifier(base, epsilon=epsilon, method=method, random_state=seed)
        if method == "rr_with_prior":
            clf.fit(A, ytr)
        else:
            clf.fit(A, noisy)  # the same k-RR reports as the plain model
        p = clf.predict_proba(B)
        results[method] = log_loss(yte, p)
        rows.append(
            (
                f"LabelPrivacyClassifier({method!r})",
                f"{results[method]:.3f}",
                f"{accuracy_score(yte, p.argmax(1)):.3f}",
                str(clf.n_iter_),
                f"{time.perf_counter() - start:.1f}",
            )
        )
    print(f"## 1. Labels privatized by k-RR at eps = {epsilon} (LogisticRegression, one-hot)\n")
    _table(["model", "log-loss", "accuracy", "fits", "seconds"], rows)
    goal = results["posterior"] <= clean[0] + 0.03 and results["posterior"] < plain
    print(
        f"Goal (posterior within 0.03 of non-private, below plain): "
        f"{results['posterior']:.3f} vs {clean[0]:.3f} + 0.03 and < {plain:.3f}: "
        f"{'MET' if goal else 'MISSED'}\n"
    )


def naive_bayes(Xtr, Xte, ytr, yte, epsilon, seeds):
    cats = [sorted(Xtr[c].unique().tolist() + Xte[c].unique().tolist()) for c in Xtr.columns]
    cats = [sorted(set(c)) for c in cats]
    oe = OrdinalEncoder(categories=cats).fit(Xtr)
    nb = CategoricalNB().fit(oe.transform(Xtr), ytr)
    p = nb.predict_proba(oe.transform(Xte))
    clean_acc, clean_ll = accuracy_score(yte, p.argmax(1)), log_loss(yte, p)
    rows = [("CategoricalNB (non-private)", "-", f"{clean_acc:.3f}", f"{clean_ll:.3f}")]
    accs, lls = [], []
    for seed in seeds:
        m = LDPNaiveBayes(epsilon=epsilon, categories=cats, random_state=seed).fit(Xtr, ytr)
        p = m.predict_proba(Xte)
        accs.append(accuracy_score(yte, m.classes_[p.argmax(1)]))
        lls.append(log_loss(yte, p, labels=m.classes_))
        rows.append(
            (f"LDPNaiveBayes(eps={epsilon})", str(seed), f"{accs[-1]:.3f}", f"{lls[-1]:.3f}")
        )
    rows.append(("LDPNaiveBayes, mean", "", f"{np.mean(accs):.3f}", f"{np.mean(lls):.3f}"))
    print(f"## 2. Naive Bayes from privatized (label, feature) pairs, {len(ytr):,} users\n")
    _table(["model", "seed", "accuracy", "log-loss"], rows)
    gap = clean_acc - np.mean(accs)
    print(
        f"Goal (accuracy within 0.04 of non-private NB): mean gap {gap:.3f}, worst "
        f"{clean_acc - min(accs):.3f}: {'MET' if gap <= 0.04 else 'MISSED'} "
        f"(log-loss gap {np.mean(lls) - clean_ll:.3f})\n"
    )


def ldp_sgd(Xtr, Xte, ytr, yte, n_users, epsilons, seed):
    enc = OneHotEncoder(drop="first", sparse_output=False).fit(Xtr)
    A, B = enc.transform(Xtr), enc.transform(Xte)
    clean = LogisticRegression(max_iter=1000).fit(A, ytr).score(B, yte)
    majority = max(yte.mean(), 1 - yte.mean())
    idx = np.random.default_rng(seed).integers(0, len(ytr), n_users)
    XA, YA = A[idx], ytr[idx]
    rows = []
    at_four = None
    for eps in epsilons:
        row = [f"{eps:g}"]
        for mechanism in ("duchi", "piecewise", "hybrid"):
            start = time.perf_counter()
            clf = LDPLogisticRegression(epsilon=eps, mechanism=mechanism, random_state=seed)
            acc = clf.fit(XA, YA).score(B, yte)
            row.append(f"{1 - acc:.3f} ({time.perf_counter() - start:.1f} s)")
            if mechanism == "hybrid" and eps == 4.0:
                at_four = acc
        rows.append(row)
    print(
        f"## 3. LDP-SGD logistic regression, {n_users:,} users (CPS1988 training rows "
        f"resampled), D = {A.shape[1] + 1}\n"
    )
    print(
        f"Misclassification rate on the 30% test split (non-private: {1 - clean:.3f}, "
        f"majority: {1 - majority:.3f}); batch size max(D log(D+1)/eps^2, sqrt(n)), "
        "eta_t = 1/sqrt(t+1), lambda = 1e-4.\n"
    )
    _table(["eps", "Duchi", "Piecewise", "Hybrid"], rows)
    if at_four is not None:
        half = majority + (clean - majority) / 2
        print(
            f"Goal (Hybrid at eps = 4 at least halfway from the majority rate to the "
            f"non-private accuracy): {at_four:.3f} >= {half:.3f}: "
            f"{'MET' if at_four >= half else 'MISSED'}\n"
        )
    print(
        "Wang et al. (ICDE 2019, Fig. 9) plot the misclassification rate of LDP-SGD "
        "logistic regression on BR and MX (4M census records, 90 and 94 binary "
        "features) for eps in {0.5, 1, 2, 4}, on axes from 0.1 to 0.4 (BR) and 0.1 "
        "to 0.5 (MX); PM and HM lie below Duchi et al.'s and Laplace, and the text "
        "states that the rates 'do not drop as quickly with increasing eps' as the "
        "mean-estimation errors. The plotted values are not in the paper's text.\n"
    )


def variances(n, seed):
    g = np.array([-1.0, -0.5, 0.0, 0.5, 1.0])
    rows = []
    for mechanism in ("piecewise", "hybrid"):
        for eps in (1.0, 4.0):
            R = privatize_gradients(np.tile(g, (n, 1)), eps, mechanism=mechanism, random_state=seed)
            emp = R.var(axis=0, ddof=1)
            exact = gradient_variance(g[None, :], eps, mechanism=mechanism)[0]
            paper = gradient_variance(g[None, :], eps, mechanism=mechanism, exact=False)[0]
            centered = R - R.mean(axis=0)
            se = np.sqrt((np.mean(centered**4, axis=0) - emp**2) / n)
            for j in range(g.size):
                rows.append(
                    (
                        mechanism,
                        f"{eps:g}",
                        f"{g[j]:+.1f}",
                        f"{emp[j]:.4f}",
                        f"{exact[j]:.4f}",
                        f"{paper[j]:.4f}",
                        f"{(emp[j] - exact[j]) / se[j]:+.2f}",
                    )
                )
    print(f"## 4. Variance of a perturbed gradient coordinate (D = 5, {n:,} reports each)\n")
    _table(["mechanism", "eps", "g_j", "empirical", "exact (grid)", "paper", "z"], rows)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="50,000 SGD users, fewer seeds")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    start = time.perf_counter()
    print(
        f"# Learning on privatized data (load {os.getloadavg()[0]:.1f}, {os.cpu_count()} cores)\n"
    )
    Xtr, Xte, ytr, yte = _split()
    label_privacy(Xtr, Xte, ytr, yte, 1.0, args.seed)
    naive_bayes(Xtr, Xte, ytr, yte, 2.0, range(2 if args.quick else 5))
    n_users = 50_000 if args.quick else 500_000
    ldp_sgd(Xtr, Xte, ytr, yte, n_users, (0.5, 1.0, 2.0, 4.0), args.seed)
    variances(100_000 if args.quick else 1_000_000, args.seed)
    print(f"Total {time.perf_counter() - start:.0f} s (load {os.getloadavg()[0]:.1f}).")


if __name__ == "__main__":
    main()
