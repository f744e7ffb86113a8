"""Items of an open domain as fixed-length bit strings, and keys of their prefixes.

Heavy-hitter protocols never see a list of categories: a user's item (a
string, a byte string or a non-negative integer) is written as a fixed-length
string of ``8 * max_bytes`` bits, and the protocols work on its prefixes.

* **Text** is normalized to Unicode **NFC** (by default), then encoded as
  UTF-8. NFC composes canonically equivalent sequences ("é" typed as one
  code point or as "e" + a combining accent) into one, so two spellings of
  one word are one item, and it never changes what the text says. NFKC
  (``normalization="NFKC"``) also folds *compatibility* characters
  (the ligature "ﬁ" into "fi", full-width "Ａ" into "A", "²" into "2"),
  which merges more spellings but also strings that differ in meaning
  ("x²" and "x2"): it is offered, not the default. ``None`` keeps the
  code points as they are.
* **Bytes** are taken as they are (no normalization).
* **Integers** (0 <= x < 2^(8 max_bytes)) are written big-endian, so that
  a prefix is a range of integers.

Items are right-padded with zero bytes. A text item may not contain the NUL
character (U+0000), which would be confused with the padding; the empty
string is an item (all zero bits). An item longer than ``max_bytes`` is
refused (``on_long="error"``) or cut to its longest prefix of whole
characters that fits, with a warning that says how many were cut
(``on_long="truncate"``, the default): nothing is dropped silently.

A prefix of ``b`` bits is identified by a 61-bit *key*, a hash of its bits
and of ``b`` (SplitMix64 chained over 64-bit words): keys of distinct
prefixes collide with probability about 2^-61 per pair, and the hash
functions of the frequency oracles take keys, whatever the length of the
items.
"""

from __future__ import annotations

import hashlib
import unicodedata
import warnings
from numbers import Integral

import numpy as np
import pandas as pd

from ..exceptions import ItemTruncationWarning
from ..utils._hashing import MERSENNE_61, _splitmix64
from ..utils._validation import check_in_memory

__all__ = ["ItemEncoding", "prefix_keys", "extend_prefixes", "all_prefixes"]

_P = np.uint64(MERSENNE_61)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)

ITEM_TYPES = ("str", "bytes", "int")
NORMALIZATIONS = ("NFC", "NFKC")
#: Largest item length (bytes) a protocol accepts: 512 bits.
MAX_ITEM_BYTES = 64
#: Length of text and bytes items by default: the best mean recall over
#: three real text columns (job titles, pet names, breeds), measured in
#: benchmarks/bench_heavy_hitters_defaults.py (see "Choosing max_bytes").
DEFAULT_MAX_BYTES = 24


def _long_items_message(max_bytes, users, lengths, long):
    """Counts of the items longer than ``max_bytes`` and the max_bytes that fits them.

    Counts and lengths only: the items themselves are never quoted (a
    warning or an error must not carry a user's value into a log).
    """
    n_long, n_all = int(np.sum(users[long])), int(np.sum(users))
    longest = int(lengths.max())
    fix = (
        f"set max_bytes={longest} to keep them whole"
        if longest <= MAX_ITEM_BYTES
        else f"max_bytes={MAX_ITEM_BYTES} keeps all but the items longer than "
        f"{MAX_ITEM_BYTES} bytes (the longest has {longest}), which are cut"
    )
    distinct = int(long.sum())
    return (
        f"{n_long:,} of {n_all:,} items ({distinct:,} distinct "
        f"item{'s' if distinct > 1 else ''}) {'are' if n_long > 1 else 'is'} longer than "
        f"max_bytes={max_bytes} bytes (UTF-8); {fix}."
    )


def _column(values):
    """``values`` as a 1-D object or integer array (one column), not copied."""
    check_in_memory(values, "An open-domain mechanism")
    if hasattr(values, "toarray") or hasattr(values, "tocsr"):
        raise TypeError(
            "Sparse input is not supported: pass one column of items (a 1-D array, list or Series)."
        )
    if isinstance(values, pd.DataFrame):
        if values.shape[1] != 1:
            raise ValueError(
                f"Expected one column of items, got a DataFrame with {values.shape[1]} "
                "columns. Select the column to privatize (df[['name']])."
            )
        values = values.iloc[:, 0]
    if isinstance(values, pd.Series):
        values = values.to_numpy()
    if isinstance(values, (str, bytes)) or np.ndim(values) == 0:
        raise ValueError(
            "Expected a column of items (a 1-D array, list or Series), got a single "
            f"value (a {type(values).__name__}). Wrap it in a list: [value]."
        )
    if isinstance(values, np.ndarray):
        arr = values
    else:
        # Element by element into objects: numpy's own conversion would turn
        # bytes into text (or numbers into strings) without a word.
        values = list(values)
        arr = np.empty(len(values), dtype=object)
        arr[:] = values if not any(isinstance(v, (list, tuple)) for v in values[:1]) else None
        if values and isinstance(values[0], (list, tuple)):
            arr = np.asarray(values, dtype=object)
    if arr.dtype.kind == "U" or arr.dtype.kind == "S":
        arr = arr.astype(object)
    if arr.ndim == 2:
        if arr.shape[1] != 1:
            raise ValueError(
                f"Expected one column of items, got an array of shape {arr.shape}. "
                "Pass a 1-D array or a single column."
            )
        arr = arr[:, 0]
    if arr.ndim != 1:
        raise ValueError(f"Expected a 1-D column of items, got shape {arr.shape}.")
    return arr


class ItemEncoding:
    """Items <-> rows of ``max_bytes`` bytes (see the module notes).

    Parameters
    ----------
    item_type : {"str", "bytes", "int"}
    max_bytes : int or None
        None: :data:`DEFAULT_MAX_BYTES` (24) for text and bytes, 8 (64 bits)
        for integers.
    normalization : {"NFC", "NFKC"} or None
    on_long : {"truncate", "error"}

    Examples
    --------
    >>> from sklearn_uldp.heavy_hitters._encoding import ItemEncoding
    >>> enc = ItemEncoding("str", 8, "NFC", "truncate")
    >>> codes, rows = enc.encode(["caf\\u00e9", "cafe\\u0301", "ab", "ab"])
    >>> codes.tolist(), rows.shape
    ([0, 0, 1, 1], (2, 8))
    >>> enc.decode(rows) == ["caf\\u00e9", "ab"]
    True
    """

    def __init__(self, item_type="str", max_bytes=None, normalization="NFC", on_long="truncate"):
        if item_type not in ITEM_TYPES:
            raise ValueError(
                f"item_type must be one of {list(ITEM_TYPES)}, got {item_type!r}: 'str' "
                "for text, 'bytes' for byte strings, 'int' for non-negative integers."
            )
        if max_bytes is None:
            max_bytes = 8 if item_type == "int" else DEFAULT_MAX_BYTES
        if isinstance(max_bytes, bool) or not isinstance(max_bytes, Integral):
            raise TypeError(f"max_bytes must be an integer, got {max_bytes!r}.")
        if not 1 <= int(max_bytes) <= MAX_ITEM_BYTES:
            raise ValueError(
                f"max_bytes must be in [1, {MAX_ITEM_BYTES}], got {max_bytes}: items are "
                f"at most {8 * MAX_ITEM_BYTES} bits. Hash longer items first."
            )
        if normalization is not None and normalization not in NORMALIZATIONS:
            raise ValueError(f"normalization must be 'NFC', 'NFKC' or None, got {normalization!r}.")
        if on_long not in ("truncate", "error"):
            raise ValueError(f"on_long must be 'truncate' or 'error', got {on_long!r}.")
        if item_type == "int" and int(max_bytes) > 8:
            raise ValueError(
                f"Integer items hold at most 64 bits: pass max_bytes <= 8, got {max_bytes}."
            )
        self.item_type = item_type
        self.max_bytes = int(max_bytes)
        self.normalization = normalization
        self.on_long = on_long

    @property
    def n_bits(self):
        return 8 * self.max_bytes

    # ----------------------------------------------------------------- encode
    def encode(self, values):
        """``(codes, rows)``: the index of each item among the distinct ones, and
        the distinct items as a (u, max_bytes) uint8 array.

        The distinct items are found first (``pandas.factorize``, one hashed
        pass), so the Python work (normalization, UTF-8) is per distinct item,
        not per user.
        """
        arr = _column(values)
        if self.item_type == "int":
            return self._encode_ints(arr)
        if arr.dtype != object:
            raise TypeError(
                f"Expected {self.item_type} items, got an array of dtype {arr.dtype}. "
                f"Pass item_type='int' for integers, or convert the column to "
                f"{self.item_type}."
            )
        codes, uniques, kind = self._distinct(
            arr, ". Heavy-hitter protocols report an item per user: drop or impute them."
        )
        bad = [v for v in uniques[:1000] if not isinstance(v, kind)]
        if bad or not all(isinstance(v, kind) for v in uniques):
            bad = bad or [v for v in uniques if not isinstance(v, kind)]
            other = "bytes" if kind is str else "str"
            hint = (
                f" Decode the bytes (b.decode('utf-8')) or pass item_type='{other}'."
                if isinstance(bad[0], (str, bytes))
                else ""
            )
            raise TypeError(
                f"Expected {self.item_type} items, found {type(bad[0]).__name__} "
                f"value(s) ({len(bad)} distinct): a column holds items of one type.{hint}"
            )
        raw = [self._to_bytes(v) for v in uniques]
        rows, merged = self._rows(raw, np.bincount(codes, minlength=len(raw)))
        if merged is not None:
            codes = merged[codes]
        return codes.astype(np.intp), rows

    def _distinct(self, arr, missing_hint):
        """``(codes, uniques, kind)`` of a column of text or bytes items (``pandas.factorize``).

        Missing values are refused (the message ends with ``missing_hint``);
        ``kind`` is the Python type the items should have.
        """
        codes, uniques = pd.factorize(arr, use_na_sentinel=True)
        if (codes < 0).any():
            raise ValueError(
                f"The column holds {int((codes < 0).sum())} missing values (None/NaN)"
                + missing_hint
            )
        return codes, uniques, (str if self.item_type == "str" else bytes)

    def _to_bytes(self, value):
        if self.item_type == "bytes":
            return value
        return self._normalized(value).encode("utf-8")

    def _normalized(self, value):
        """A text item as users report it: checked, then normalized."""
        if "\x00" in value:
            raise ValueError(
                "An item contains the NUL character (U+0000), which the encoding uses "
                "as padding. Remove or replace it (pandas: X.str.replace('\\x00', ''))."
            )
        if self.normalization is not None:
            value = unicodedata.normalize(self.normalization, value)
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise ValueError(
                "An item holds a lone surrogate code point (U+D800..U+DFFF), "
                "which is not text and has no UTF-8 encoding (it comes from decoding "
                "bytes with errors='surrogateescape'). Decode the bytes with "
                "errors='replace', or pass item_type='bytes'."
            ) from None
        return value

    def _rows(self, raw, users):
        """Pad (or cut) byte strings to ``max_bytes``; merge items that became equal.

        ``users[i]`` is the number of rows holding ``raw[i]`` (for the counts
        of the truncation warning; no item is ever quoted in a message).
        """
        L = self.max_bytes
        lengths = np.fromiter((len(b) for b in raw), dtype=np.int64, count=len(raw))
        long = lengths > L
        if self.item_type == "bytes":
            nul = sum(1 for b in raw if b.endswith(b"\x00"))
            if nul:
                raise ValueError(
                    f"An item ends with a zero byte ({nul} distinct item(s) do), which the "
                    "encoding uses as padding (it would equal the item without it). Strip "
                    "or escape trailing zero bytes."
                )
        if long.any():
            message = _long_items_message(L, users, lengths, long)
            if self.on_long == "error":
                raise ValueError(
                    f"{message} Pass a larger max_bytes (up to {MAX_ITEM_BYTES}), or "
                    f"on_long='truncate' to report their first {L} bytes."
                )
            warnings.warn(
                f"{message} Each is reported as its longest prefix of whole characters "
                "that fits. (Longer items cost prefix levels, hence accuracy: see "
                "'Choosing max_bytes' on the Heavy hitters page.)",
                ItemTruncationWarning,
                stacklevel=4,
            )
            raw = [self._cut(b) if len(b) > L else b for b in raw]
        # Distinct inputs may now be equal (two spellings of one word after
        # normalization, two long items cut to one prefix): one row per item.
        position: dict[bytes, int] = {}
        merged = np.fromiter(
            (position.setdefault(b, len(position)) for b in raw), dtype=np.intp, count=len(raw)
        )
        distinct = list(position)
        blob = np.frombuffer(b"".join(b.ljust(L, b"\x00") for b in distinct), dtype=np.uint8)
        rows = blob.reshape(len(distinct), L).copy()
        if len(distinct) == len(raw):
            merged = None
        return rows, merged

    def _cut(self, b):
        cut = b[: self.max_bytes]
        if self.item_type == "str":
            # Never split a UTF-8 sequence: keep whole characters only.
            cut = cut.decode("utf-8", errors="ignore").encode("utf-8")
        return cut

    def _encode_ints(self, arr):
        if arr.dtype == object:
            # One C-level pass over the types: numpy's conversion below would
            # silently turn 5.7 into 5 and "5" into 5.
            kinds = set(map(type, arr))
            if any(issubclass(t, (bool, np.bool_)) for t in kinds):
                raise TypeError("Boolean items are not integers: pass item_type='str'.")
            other = [t for t in kinds if not issubclass(t, (int, np.integer))]
            if other:
                count = sum(type(v) is other[0] for v in arr)
                raise TypeError(
                    f"Expected integer items (item_type='int'), found {other[0].__name__} "
                    f"value(s) ({count} of them). Round floats to integers (checking "
                    "that nothing is lost) or convert text with int(), or pass "
                    "item_type='str'."
                )
            try:
                arr = np.asarray(arr.tolist(), dtype=np.uint64)
            except (TypeError, ValueError, OverflowError):
                raise TypeError(
                    "Expected non-negative integer items below 2**64 (item_type='int'); "
                    "the column holds other values."
                ) from None
        elif arr.dtype.kind == "b":
            raise TypeError("Boolean items are not integers: pass item_type='str'.")
        elif arr.dtype.kind == "i":
            if arr.size and int(arr.min()) < 0:
                raise ValueError(
                    f"Integer items must be >= 0; {int(np.sum(arr < 0))} of {arr.size} are "
                    "negative. Shift them (x - min) or map them to non-negative codes."
                )
            arr = arr.astype(np.uint64)
        elif arr.dtype.kind != "u":
            raise TypeError(
                f"Expected integer items (item_type='int'), got dtype {arr.dtype}. "
                "Round floats to integers, or use item_type='str'."
            )
        codes, uniques = pd.factorize(arr)
        uniques = np.asarray(uniques, dtype=np.uint64)
        L = self.max_bytes
        if L < 8 and uniques.size and int(uniques.max()) >= 1 << (8 * L):
            large = int(np.sum(uniques >= np.uint64(1 << (8 * L))))
            raise ValueError(
                f"Integer items must be below 2**{8 * L} (max_bytes={L}); {large} distinct "
                "item(s) are not. Pass a larger max_bytes (up to 8)."
            )
        rows = uniques.astype(">u8").view(np.uint8).reshape(-1, 8)[:, 8 - L :]
        return codes.astype(np.intp), np.ascontiguousarray(rows)

    # ----------------------------------------------------------------- decode
    def decode(self, rows):
        """Items of (u, max_bytes) byte rows (str, bytes or int as encoded).

        Text that is not valid UTF-8 (a candidate made of noise) is decoded
        with backslash escapes for its invalid bytes.
        """
        rows = np.asarray(rows, dtype=np.uint8).reshape(-1, self.max_bytes)
        if self.item_type == "int":
            full = np.zeros((rows.shape[0], 8), dtype=np.uint8)
            full[:, 8 - self.max_bytes :] = rows
            return [int(v) for v in full.view(">u8").ravel()]
        out = []
        for row in rows:
            b = row.tobytes().rstrip(b"\x00")
            out.append(
                b.decode("utf-8", errors="backslashreplace") if self.item_type == "str" else b
            )
        return out

    def encode_items(self, items):
        """Rows of a list of items (candidates, sensitive lists), one per item, in order."""
        codes, rows = self.encode(
            np.asarray(list(items), dtype=object) if self.item_type != "int" else list(items)
        )
        return rows[codes]

    def whole_keys(self, values, *, return_items=False):
        """``(codes, keys)``: 61-bit keys of whole items of any length (no padding).

        Bloom-filter RAPPOR and the utility-optimized protocol use the whole
        item, so nothing is cut: the key is BLAKE2b (8 bytes) of the
        normalized UTF-8 (or of the bytes, or of the 8-byte big-endian
        integer), once per distinct input. ``keys[codes[i]]`` is row i's key.
        With ``return_items``, also the distinct inputs as users report them
        (normalized text, bytes, Python ints), aligned with ``keys``.
        """
        arr = _column(values)
        if self.item_type == "int":
            codes, rows = self._encode_ints(arr)
            raw = [r.tobytes() for r in rows]
            items = [int.from_bytes(b, "big") for b in raw]
        else:
            codes, uniques, kind = self._distinct(arr, ": drop or impute them.")
            for v in uniques:
                if not isinstance(v, kind):
                    raise TypeError(
                        f"Expected {self.item_type} items, found {type(v).__name__} "
                        "value(s): a column holds items of one type."
                    )
            if self.item_type == "str":
                items = [self._normalized(v) for v in uniques]
                raw = [v.encode("utf-8") for v in items]
            else:
                items = list(uniques)
                raw = items
        keys = np.fromiter(
            (
                int.from_bytes(hashlib.blake2b(b, digest_size=8).digest(), "big") % MERSENNE_61
                for b in raw
            ),
            dtype=np.int64,
            count=len(raw),
        )
        if return_items:
            return codes.astype(np.intp), keys, items
        return codes.astype(np.intp), keys

    def to_dict(self):
        return {
            "item_type": self.item_type,
            "max_bytes": self.max_bytes,
            "normalization": self.normalization,
            "on_long": self.on_long,
        }

    def __eq__(self, other):
        return isinstance(other, ItemEncoding) and self.to_dict() == other.to_dict()

    def __hash__(self):
        return hash(tuple(self.to_dict().items()))


# ------------------------------------------------------------------ prefixes
def prefix_keys(rows, n_bits):
    """61-bit keys of the first ``n_bits`` bits of each row (vectorized).

    Parameters
    ----------
    rows : ndarray of uint8 of shape (u, L)
    n_bits : int, 0 <= n_bits <= 8 L

    Returns
    -------
    keys : ndarray of int64 of shape (u,), values in [0, 2^61 - 1)

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_uldp.heavy_hitters._encoding import prefix_keys
    >>> rows = np.array([[0b10110000, 1], [0b10111111, 2]], dtype=np.uint8)
    >>> k4, k5 = prefix_keys(rows, 4), prefix_keys(rows, 5)
    >>> bool(k4[0] == k4[1]), bool(k5[0] == k5[1]), bool(k4[0] == k5[0])
    (True, False, False)
    """
    rows = np.asarray(rows, dtype=np.uint8)
    u = rows.shape[0]
    n_bytes = -(-int(n_bits) // 8)
    n_words = max(1, -(-n_bytes // 8))
    buf = np.zeros((u, 8 * n_words), dtype=np.uint8)
    buf[:, :n_bytes] = rows[:, :n_bytes]
    rem = int(n_bits) % 8
    if rem:
        buf[:, n_bytes - 1] &= np.uint8((0xFF << (8 - rem)) & 0xFF)
    words = buf.view(">u8").astype(np.uint64)
    with np.errstate(over="ignore"):
        h = _splitmix64(np.full(u, np.uint64(int(n_bits)) * _GOLDEN, dtype=np.uint64))
        for w in range(n_words):
            h = _splitmix64(h ^ words[:, w])
    return (h % _P).astype(np.int64)


def extend_prefixes(rows, n_bits, extra_bits):
    """Every extension of each ``n_bits``-bit prefix by ``extra_bits`` bits.

    Returns rows of shape (u 2^extra_bits, L): the children of row i are rows
    ``i 2^e .. (i+1) 2^e - 1``, in the order of their suffixes.
    """
    rows = np.asarray(rows, dtype=np.uint8)
    e = int(extra_bits)
    suffix = np.tile(np.arange(1 << e, dtype=np.int64), rows.shape[0])
    out = np.repeat(rows, 1 << e, axis=0)
    for t in range(e):
        pos = int(n_bits) + t
        bit = ((suffix >> (e - 1 - t)) & 1).astype(np.uint8) << np.uint8(7 - pos % 8)
        out[:, pos // 8] |= bit
    return out


def valid_prefixes(rows, n_bits, item_type):
    """Mask of the prefixes that some encoded item can start with.

    Text items are valid UTF-8 without NUL, padded with zero bytes: among
    the complete bytes of a prefix, a zero byte is followed by zero bytes
    only, and the others form a valid UTF-8 sequence (lead bytes, then the
    right number of continuation bytes; a sequence may be cut at the end of
    the prefix). Candidates outside this set are impossible, whatever the
    data, so the decoders never rank them. Bytes and integers: every prefix
    is possible.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_uldp.heavy_hitters._encoding import valid_prefixes
    >>> rows = np.array([[97, 0, 0], [0, 98, 0], [0xC3, 0xA9, 0], [0x80, 0, 0],
    ...                  [0xC3, 0x41, 0]], dtype=np.uint8)
    >>> valid_prefixes(rows, 24, "str").tolist()
    [True, False, True, False, False]
    """
    rows = np.asarray(rows, dtype=np.uint8)
    ok = np.ones(rows.shape[0], dtype=bool)
    if item_type != "str":
        return ok
    need = np.zeros(rows.shape[0], dtype=np.int8)
    padded = np.zeros(rows.shape[0], dtype=bool)
    for i in range(int(n_bits) // 8):
        b = rows[:, i]
        zero = b == 0
        ok &= ~(padded & ~zero)  # nothing but padding after padding
        cont = (b >= 0x80) & (b < 0xC0)
        ok &= ~((need > 0) & ~cont)  # a sequence cut by anything else
        lead = need == 0
        ok &= ~(lead & ~zero & (cont | (b == 0xC0) | (b == 0xC1) | (b >= 0xF5)))
        padded |= lead & zero
        new_need = np.where(b >= 0xF0, 3, np.where(b >= 0xE0, 2, np.where(b >= 0xC2, 1, 0)))
        need = np.where(lead, new_need, need - 1).astype(np.int8)
    return ok


def all_prefixes(n_bits, max_bytes):
    """All 2^n_bits prefixes of ``n_bits`` bits, as rows of ``max_bytes`` bytes."""
    return extend_prefixes(np.zeros((1, max_bytes), dtype=np.uint8), 0, n_bits)
