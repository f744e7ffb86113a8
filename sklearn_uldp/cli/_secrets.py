"""``sklearn-uldp secrets``, and the user secrets of ``privatize --user-secrets``.

Memoized (longitudinal) mechanisms derive each user's permanent answers from
a secret per user, kept for every round. On the command line the secrets
live in a table of their own, never in the data nor in any output of
``privatize``::

    user_id,secret
    "u1","6b1c...e0"        (hex: 32 random bytes by default)

``sklearn-uldp secrets data.csv --user-id user_id -o secrets.csv`` makes it
(one fresh secret per distinct user, from the operating system's CSPRNG;
``--add`` adds secrets for new users and never changes an existing one), and
``privatize ... --user-secrets secrets.csv --user-id user_id`` finds each
row's secret by its user's id, so rows may come in any order and any
subset in every round. Secrets are matched, checked and used in memory; the
reports and the spec hold none of them.
"""

from __future__ import annotations

import os

import numpy as np
import pandas as pd

from ._common import add_command, plural, positive_int, progress
from ._io import OutputFiles, TableWriter, check_outputs, check_table_output, read_chunks

__all__ = ["register", "load_user_secrets", "secrets_of_rows", "SECRET_COLUMN"]

#: Column of the secrets table holding each user's secret (hex text).
SECRET_COLUMN = "secret"

_HEX = np.full(256, 255, dtype=np.uint8)
_HEX[np.frombuffer(b"0123456789", dtype=np.uint8)] = np.arange(10)
_HEX[np.frombuffer(b"abcdef", dtype=np.uint8)] = np.arange(10, 16)
_HEX[np.frombuffer(b"ABCDEF", dtype=np.uint8)] = np.arange(10, 16)


def _rows(mask, limit=5):
    rows = (np.flatnonzero(mask) + 1)[:limit].tolist()
    more = int(np.count_nonzero(mask)) - len(rows)
    return f"row{'s' if len(rows) > 1 or more else ''} {', '.join(map(str, rows))}" + (
        f" and {more} more" if more else ""
    )


def hex_secrets(texts, what="secrets file"):
    """Hex texts -> a (n, n_bytes) uint8 array (vectorized; one length for all).

    Examples
    --------
    >>> from sklearn_uldp.cli._secrets import hex_secrets
    >>> hex_secrets(["00ff" * 8, "0A0b" * 8])[:, :2].tolist()
    [[0, 255], [10, 11]]
    """
    texts = pd.Series(texts, dtype=object)
    if texts.isna().any():
        raise ValueError(
            f"The {what} has {plural(int(texts.isna().sum()), 'missing secret')} "
            f"({_rows(texts.isna().to_numpy())}): every user needs one."
        )
    lengths = texts.str.len().to_numpy()
    if len(set(lengths.tolist())) > 1:
        raise ValueError(
            f"The secrets of the {what} have different lengths ({sorted(set(lengths))[:5]} "
            "hex digits): write them all with the same number of bytes."
        )
    width = int(lengths[0]) if len(lengths) else 0
    if width % 2 or width < 32:
        raise ValueError(
            f"The secrets of the {what} are {width} hex digits long: a secret is at "
            "least 16 bytes, 2 hex digits each (32 random bytes, 64 digits, by "
            "default)."
        )
    try:
        raw = np.frombuffer("".join(texts.tolist()).encode("ascii"), dtype=np.uint8)
    except UnicodeEncodeError:
        raw = np.full(1, ord("x"), dtype=np.uint8)  # not hex: reported below
    nibbles = _HEX[raw]
    if raw.size != len(texts) * width or (nibbles == 255).any():
        bad = ~texts.str.fullmatch(r"[0-9A-Fa-f]*").to_numpy(dtype=bool)
        raise ValueError(
            f"The {what} holds secrets that are not hex text ({_rows(bad)}): each "
            "secret is its bytes in hexadecimal, e.g. written by "
            "'sklearn-uldp secrets' or bytes.hex()."
        )
    pairs = nibbles.reshape(len(texts), width // 2, 2)
    return (pairs[:, :, 0] << 4) | pairs[:, :, 1]


def load_user_secrets(path, id_column, chunksize):
    """Read a secrets table: (ids as text, one (n_bytes,) uint8 secret per id).

    Refuses missing or duplicated ids, secrets that are not hex, of unequal
    or too short lengths, and two users sharing a secret.
    """
    frames = list(read_chunks(path, [id_column, SECRET_COLUMN], chunksize, dtype=str))
    table = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    if table.empty:
        raise ValueError(f"The secrets file {str(path)!r} has no rows.")
    ids = table[id_column]
    if ids.isna().any():
        raise ValueError(
            f"The secrets file {str(path)!r} has rows without a user id in "
            f"{id_column!r} ({_rows(ids.isna().to_numpy())})."
        )
    dup = ids.duplicated(keep=False).to_numpy()
    if dup.any():
        raise ValueError(
            f"The secrets file {str(path)!r} lists some users twice in {id_column!r} "
            f"({_rows(dup)}): one secret per user."
        )
    secrets = hex_secrets(table[SECRET_COLUMN], f"secrets file {str(path)!r}")
    from ..utils._secrets import check_user_secrets

    check_user_secrets(secrets)  # distinct secrets, lengths
    return pd.Index(ids.astype(str)), secrets


def secrets_of_rows(ids, known, secrets, path):
    """The secret of each row's user (an (n, n_bytes) uint8 array), or an error."""
    where = known.get_indexer(pd.Index(ids.astype(object).where(ids.notna(), None)))
    absent = where < 0
    if absent.any():
        raise ValueError(
            f"{plural(int(absent.sum()), 'row')} of the input ({_rows(absent)}) belong "
            f"to users without a secret in {str(path)!r}. Add secrets "
            f"for new users with 'sklearn-uldp secrets INPUT --user-id COLUMN -o "
            f"{os.fspath(path)} --add' (existing secrets are kept)."
        )
    return secrets[where]


# ------------------------------------------------------------------ command
def _cmd_secrets(args):
    from ..utils import generate_user_secrets

    check_table_output(args.output, "secrets file")
    if args.add:
        if not os.path.exists(args.output):
            raise ValueError(
                f"--add adds users to an existing secrets file, and {args.output!r} "
                "does not exist: leave out --add to create it."
            )
        check_outputs({"secrets file": args.output}, {"input": args.input}, True)
        known, old = load_user_secrets(args.output, args.user_id, args.chunksize)
    else:
        if os.path.lexists(args.output):
            raise ValueError(
                f"The secrets file {args.output!r} already exists. Replacing it would "
                "give every user new permanent answers, spending their budget again: "
                "keep it, or pass --add to add secrets for new users."
            )
        check_outputs({"secrets file": args.output}, {"input": args.input}, False)
        known, old = pd.Index([], dtype=object), np.zeros((0, args.n_bytes), np.uint8)
    seen = []
    for chunk in progress(
        read_chunks(args.input, [args.user_id], args.chunksize, dtype=str),
        not args.no_progress,
        "secrets",
    ):
        ids = chunk[args.user_id]
        if ids.isna().any():
            raise ValueError(
                f"Column {args.user_id!r} of {args.input!r} has "
                f"{plural(int(ids.isna().sum()), 'missing user id')}: every row needs one."
            )
        seen.append(ids.astype(str).unique())
    new = pd.Index(pd.unique(np.concatenate(seen))) if seen else pd.Index([])
    new = new.difference(known, sort=False)
    if args.add and old.shape[1] != args.n_bytes and len(new):
        raise ValueError(
            f"The secrets of {args.output!r} are {old.shape[1]} bytes long: add new ones "
            f"of the same length (--n-bytes {old.shape[1]})."
        )
    fresh = generate_user_secrets(len(new), n_bytes=args.n_bytes)
    with OutputFiles({"secrets file": args.output}, args.add, private=True) as files:
        writer = TableWriter(args.output, files[args.output])
        chunk = 1 << 16
        ids = list(known) + list(new)
        texts = [row.tobytes().hex() for row in old] + [s.hex() for s in fresh]
        for start in range(0, len(ids), chunk):
            writer.write(
                pd.DataFrame(
                    {
                        args.user_id: ids[start : start + chunk],
                        SECRET_COLUMN: texts[start : start + chunk],
                    }
                )
            )
        writer.finish()
    print(
        f"{plural(len(new), 'new user secret')} ({args.n_bytes} random bytes each)"
        + (f", {len(known)} kept" if args.add else "")
        + f" -> {args.output}. Keep this file private and reuse it in every round: "
        "a lost or replaced secret spends the user's budget again."
    )
    return 0


def register(subparsers):
    """Add the ``secrets`` subcommand (:func:`~sklearn_uldp.cli._common.add_command`)."""
    p = add_command(
        subparsers,
        "secrets",
        _cmd_secrets,
        description=(
            "Write one fresh secret per distinct user id of a table (random bytes "
            "from the operating system, as hex text), for 'privatize --user-secrets "
            "FILE --user-id COLUMN' with memoized (longitudinal) mechanisms. The "
            "file is written readable by its owner only; an existing file is never "
            "replaced (that would spend every user's budget again), --add only "
            "adds secrets for new users."
        ),
    )
    p.add_argument("input", help="table with the user ids (.csv, or .parquet with pyarrow)")
    p.add_argument("--user-id", required=True, metavar="COL", help="column of user ids")
    p.add_argument(
        "-o", "--output", required=True, help="secrets file to write (.csv, .parquet or .pq)"
    )
    p.add_argument(
        "--add",
        action="store_true",
        help="add secrets for the ids not yet in OUTPUT (existing ones are kept)",
    )
    p.add_argument(
        "--n-bytes",
        type=positive_int,
        default=32,
        metavar="B",
        help="random bytes per secret (at least 16)",
    )
    p.add_argument(
        "--chunksize", type=positive_int, default=100_000, metavar="ROWS", help="rows per chunk"
    )
    p.add_argument("--no-progress", action="store_true", help="do not show a progress bar")
    return p
