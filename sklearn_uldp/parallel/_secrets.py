"""One user, one row: users' secrets checked across partitions.

A memoized mechanism derives a user's permanent answers from the user's
secret, so two rows with one secret would share them (and a user with two
rows would report twice). In memory, ``transform`` refuses duplicated
secrets (:func:`~sklearn_uldp.utils.check_user_secrets`); each partition's
task checks its own rows the same way, but rows of different partitions
never meet there. This module compares them without collecting any secret:

* each partition's rows are turned into **keyed fingerprints**, 128 bits of
  the pseudo-random function keyed by each user's own key
  (:func:`~sklearn_uldp.utils.prf_words`), under a label with a fresh random
  nonce per call. Without a user's secret a fingerprint says nothing about
  it, and the nonce makes the fingerprints of two calls (two rounds)
  unlinkable;
* the number of repeated fingerprints is counted where they are (a Dask
  shuffle of 16 bytes per row, on the workers; for in-memory partitions, in
  this process), and only that count reaches the client;
* every partition's privatization waits for the count and refuses a
  positive one, before any report is made.

Two distinct secrets collide with probability about ``n² / 2**129`` (n
rows): 3e-21 at n = 10**9.
"""

from __future__ import annotations

import os

import numpy as np
import pandas as pd

__all__ = ["check_distinct_across", "repeated_secrets", "shared_secrets_error"]

#: Domain-separation label of the fingerprints (the call's nonce follows).
FINGERPRINT_LABEL = "sklearn_uldp.parallel.v1|user secret fingerprint|"

_META = pd.DataFrame({"hi": pd.Series(dtype=np.uint64), "lo": pd.Series(dtype=np.uint64)})


def _nonce():
    """A fresh label suffix: fingerprints of two calls are unlinkable."""
    return os.urandom(16).hex()


def fingerprints(secrets, nonce):
    """The keyed 128-bit fingerprints of one partition's secrets (validated:
    a malformed or repeated secret within the partition is refused here, as
    in memory)."""
    from ..utils._secrets import check_user_secrets, prf_words

    keys = check_user_secrets(secrets)
    words = prf_words(keys, FINGERPRINT_LABEL + nonce, 0, 2)
    return pd.DataFrame({"hi": words[:, 0], "lo": words[:, 1]})


def repeated_secrets(secrets):
    """A lazy Dask scalar: rows whose secret another row (of any partition) has,
    beyond the first of each secret.

    ``secrets`` is a Dask Series of the users' secrets; the fingerprints are
    shuffled and deduplicated on the workers.
    """
    prints = secrets.map_partitions(fingerprints, _nonce(), meta=_META)
    return prints.shape[0] - prints.drop_duplicates(split_out=True).shape[0]


def shared_secrets_error(repeated, partitions=None):
    """The error of ``repeated`` rows sharing a secret with another row."""
    where = "" if partitions is None else f" (in partitions {partitions[:10]})"
    return ValueError(
        f"{int(repeated)} row(s) hold a user secret that another row of another "
        f"partition holds too{where}: each row is one user, and two rows with one "
        "secret would share their permanent answers (transform refuses the same "
        "table in memory). Give each user one row across all partitions and each "
        "row its user's own secret (e.g. deduplicate the users before "
        "privatizing a round)."
    )


def check_distinct_across(secrets_per_partition):
    """Refuse a secret held by rows of two in-memory partitions."""
    nonce = _nonce()
    parts = {i: fingerprints(s, nonce) for i, s in enumerate(secrets_per_partition)}
    if len(parts) < 2:
        return
    prints = pd.concat(parts, names=["partition", None])
    repeated = prints.duplicated(keep="first").to_numpy()
    if repeated.any():
        shared = prints.duplicated(keep=False).to_numpy()
        partitions = sorted(set(prints.index.get_level_values(0)[shared].tolist()))
        raise shared_secrets_error(int(repeated.sum()), partitions)
