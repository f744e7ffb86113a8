"""The collector's side of a privatized table: each column's channel and reports.

A :class:`~sklearn_uldp.compose.DataFramePrivatizer` writes one spec file
for a whole table (``save_spec``): per privatized column, its channel (the
public spec of that column's reports, under any strategy) and the names of
its report columns, plus the strategy's entry. :class:`TableSpec` reads it
back and estimates every column from a frame of reports, with nothing of the
users' side: the privatizer delegates its collector-side methods here.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from os import PathLike
from typing import Any

import numpy as np
import pandas as pd
from sklearn.base import clone

from ..exceptions import ReportMismatchError
from ..mechanisms._channel import Channel
from ..mechanisms._reports import attach_channel, is_packed_frame
from . import _compact

__all__ = ["TableSpec", "SPEC_FORMAT", "load_spec", "estimate_columns"]

#: Marker of a multi-column spec file (``DataFramePrivatizer.save_spec``).
SPEC_FORMAT = "sklearn-uldp-spec"

_STRATEGIES = ("split", "sample", "sample+fake")


class TableSpec:
    """The public spec of a privatized table, and the estimates of its columns.

    What a collector needs to estimate every column of a table privatized by
    :class:`~sklearn_uldp.compose.DataFramePrivatizer`, and nothing else:
    each column's channel (under ``strategy="sample"`` or ``"sample+fake"``
    the channel of that column's reports, which every estimator takes), the
    names of its report columns, and the strategy's entry (under
    ``"sample"``, the column naming each user's sampled attribute). Read it
    from the file ``DataFramePrivatizer.save_spec`` (or ``sklearn-uldp
    privatize``) wrote with :meth:`from_file`, and estimate from the reports
    read back (CSV, Parquet, ...) without the privatizer.

    Parameters
    ----------
    channels : dict of {str: Channel or dict}
        Column -> its reports' channel (or its spec dict).
    report_columns : dict of {str: list of str}, default=None
        Column -> the names of its report columns, in order. ``None``: each
        column's reports are the one column of its name.
    strategy : dict, default=None
        The strategy entry of a spec file (``{"name": "sample",
        "sampled_column": ...}``); ``None`` for ``"split"``. SMP's compact
        table (``DataFramePrivatizer(report_format="compact")``) adds
        ``"report_format": "compact"`` and ``"report_block"`` (its block's
        column names): :meth:`column_reports` and :meth:`estimate` then read
        the compact table, and give the wide table's reports and estimates.
    epsilon_per_person : float, default=None
        The budget one person's row of reports spends (recorded, not used).

    Attributes
    ----------
    channels : dict of {str: Channel}
    strategy : dict or None
    epsilon_per_person : float or None

    See Also
    --------
    sklearn_uldp.compose.DataFramePrivatizer : the users' side, which
        writes the spec (``save_spec``).
    sklearn_uldp.compose.load_spec : the channels of a spec file alone.

    Examples
    --------
    >>> import os, tempfile
    >>> import pandas as pd
    >>> from sklearn_uldp import RandomizedResponse
    >>> from sklearn_uldp.compose import DataFramePrivatizer
    >>> from sklearn_uldp.estimators import TableSpec
    >>> df = pd.DataFrame({"a": ["x", "y"] * 500, "b": ["u", "v", "v", "v"] * 250})
    >>> priv = DataFramePrivatizer(
    ...     {c: RandomizedResponse(2.0, categories=sorted(set(df[c]))) for c in df},
    ...     strategy="sample", random_state=0)
    >>> folder = tempfile.mkdtemp()
    >>> priv.fit_transform(df).to_csv(os.path.join(folder, "reports.csv"), index=False)
    >>> _ = priv.save_spec(os.path.join(folder, "spec.json"))

    The collector, with the two files only:

    >>> table = TableSpec.from_file(os.path.join(folder, "spec.json"))
    >>> table
    TableSpec(columns=['a', 'b'], strategy='sample')
    >>> reports = pd.read_csv(os.path.join(folder, "reports.csv"))
    >>> {c: est.round(2).tolist() for c, est in table.estimate(reports).items()}
    {'a': [0.48, 0.52], 'b': [0.26, 0.74]}
    >>> table.column_reports(reports, "b").shape  # the users who sampled "b"
    (507, 1)
    """

    def __init__(
        self,
        channels: Mapping[str, Channel | dict[str, Any]],
        report_columns: Mapping[str, Sequence[str]] | None = None,
        *,
        strategy: Mapping[str, Any] | None = None,
        epsilon_per_person: float | None = None,
    ) -> None:
        if not isinstance(channels, Mapping) or not channels:
            raise ValueError(
                "channels must be a non-empty dict {column: Channel or spec dict}; "
                f"got {type(channels).__name__}."
            )
        self.channels = {}
        for name, channel in channels.items():
            if isinstance(channel, Channel):
                self.channels[name] = channel
                continue
            if not isinstance(channel, Mapping):
                raise ValueError(
                    f"The spec of column {name!r} must be a Channel or a spec dict, "
                    f"got {type(channel).__name__}."
                )
            try:
                self.channels[name] = Channel.from_dict(dict(channel))
            except (TypeError, KeyError, ValueError) as exc:
                raise ValueError(f"Invalid spec for column {name!r}: {exc}") from None
        self._report_columns = _checked_report_columns(report_columns, self.channels)
        self.strategy = _checked_strategy(strategy)
        self.epsilon_per_person = epsilon_per_person
        if self.compact:
            _check_compact_spec(self.channels, self.strategy)

    # ------------------------------------------------------------- the file
    @classmethod
    def from_dict(cls, document: Mapping[str, Any]) -> TableSpec:
        """The table spec of a spec document (``to_dict()``, a spec file's JSON).

        Unknown top-level keys (such as the ``"reports"`` entry of the
        command line) are ignored; every column's spec is validated like a
        constructor's arguments.

        Parameters
        ----------
        document : dict

        Returns
        -------
        table : TableSpec
        """
        if not isinstance(document, Mapping):
            raise ValueError(f"A table spec is a JSON object, got {type(document).__name__}.")
        if "mechanism" in document:
            raise ValueError(
                "This is the spec of one mechanism (with 'mechanism'), not of a table: "
                "read it with Channel.from_dict (or load_spec)."
            )
        if document.get("format", SPEC_FORMAT) != SPEC_FORMAT:
            raise ValueError(
                f"A table spec has format {SPEC_FORMAT!r}; got {document.get('format')!r}."
            )
        columns = document.get("columns")
        if not isinstance(columns, Mapping) or not columns:
            raise ValueError("A table spec needs a non-empty 'columns' object {column: spec}.")
        return cls(
            columns,
            document.get("report_columns"),
            strategy=document.get("strategy"),
            epsilon_per_person=document.get("epsilon_per_person"),
        )

    @classmethod
    def from_file(cls, path: str | PathLike[str]) -> TableSpec:
        """Read a spec file written by ``DataFramePrivatizer.save_spec``.

        Parameters
        ----------
        path : str or path-like

        Returns
        -------
        table : TableSpec
        """
        return cls.from_dict(_read_json(path))

    def to_dict(self) -> dict[str, Any]:
        """The spec document (what ``DataFramePrivatizer.save_spec`` writes).

        Returns
        -------
        document : dict
            JSON-serialisable.
        """
        document: dict[str, Any] = {"format": SPEC_FORMAT, "version": 1}
        document["epsilon_per_person"] = self.epsilon_per_person
        document["columns"] = {c: ch.to_dict() for c, ch in self.channels.items()}
        document["report_columns"] = {c: self.report_columns(c) for c in self.channels}
        if self.strategy is not None:
            document["strategy"] = dict(self.strategy)
        return document

    def __repr__(self) -> str:
        strategy = "split" if self.strategy is None else self.strategy.get("name")
        return f"TableSpec(columns={list(self.channels)}, strategy={strategy!r})"

    @property
    def compact(self) -> bool:
        """Whether the reports are SMP's compact table (``report_format="compact"``)."""
        return self.strategy is not None and self.strategy.get("report_format") == "compact"

    @property
    def report_format(self) -> str:
        """``"compact"`` or ``"wide"``: the layout of the report table."""
        return "compact" if self.compact else "wide"

    # -------------------------------------------------------------- reports
    def report_columns(self, name: str) -> list[str]:
        """Names of the report columns of column ``name``.

        Parameters
        ----------
        name : str

        Returns
        -------
        names : list of str
        """
        if name not in self.channels:
            raise KeyError(
                f"{name!r} is not the name of a mechanism; the mechanisms are "
                f"{list(self.channels)}."
            )
        return list(self._report_columns.get(name, [name]))

    def column_reports(
        self, reports: pd.DataFrame, name: str, *, _rows: np.ndarray | None = None
    ) -> pd.DataFrame:
        """The reports of one column, carrying its channel.

        Parameters
        ----------
        reports : DataFrame
            The table of reports (or some of its columns).
        name : str

        Returns
        -------
        column_reports : DataFrame
            Ready for any estimator (``EMEstimator().fit(column_reports)``).
            Under ``strategy="sample"``, the rows of the users who sampled the
            column (when the reports hold the sampled column; without it, the
            missing reports of the others are skipped by the channel).
        """
        if not isinstance(reports, pd.DataFrame):
            raise TypeError(
                "reports must be a DataFrame of report columns (selected by name); "
                f"got {type(reports).__name__}."
            )
        names = self.report_columns(name)
        if self.compact:
            return self._compact_column_reports(reports, name, _rows)
        absent = [n for n in names if n not in reports.columns]
        if absent:
            if _looks_compact(reports):
                raise ReportMismatchError(
                    "These reports are a compact table (a report block "
                    f"{_compact.BLOCK_PREFIX}0, ... and the sampled column), but the "
                    "spec records the wide format (one set of report columns per "
                    "column): read them with the spec written with them "
                    "(report_format='compact')."
                )
            raise KeyError(
                f"The reports lack the columns {absent} of {name!r}; pass the "
                "output of transform (or at least these columns)."
            )
        sampled = _rows if _rows is not None else self._sampled_rows(reports, name)
        if sampled is not None:
            part = sampled_block(reports, names, sampled)
        else:
            part = reports[names].copy()
        return self.with_channel(part, name)

    def _compact_columns(self, reports):
        """The compact table's sampled column and block names (or an error)."""
        column = self.strategy.get("sampled_column", "sampled_attribute")
        block = list(self.strategy["report_block"])
        absent = [c for c in [*block, column] if c not in reports.columns]
        if absent:
            wide = any(c in reports.columns for n in self.channels for c in self.report_columns(n))
            hint = (
                " They look like a wide table (one set of report columns per "
                "column): read them with the spec written with them "
                "(report_format='wide')."
                if wide
                else " Pass the output of transform (the whole compact table)."
            )
            raise ReportMismatchError(
                f"The spec records a compact table, and the reports lack its columns "
                f"{absent}.{hint}"
            )
        return column, block

    def _compact_groups(self, reports):
        """Name -> the ascending positions of the rows that report it, and the
        report block as one array (one pass over the sampled column)."""
        column, block = self._compact_columns(reports)
        names = list(self.channels)
        codes = _compact.attribute_codes(reports[column], names, column)
        narrow = np.int8 if len(names) <= 127 else np.int32
        order = np.argsort(codes.astype(narrow, copy=False), kind="stable")
        ends = np.cumsum(np.bincount(codes, minlength=len(names)))
        groups = dict(zip(names, np.split(order, ends[:-1]), strict=True))
        return groups, _block_array(reports, block)

    def _compact_column_reports(self, reports, name, prepared=None):
        """One column's reports from a compact table, as the wide table's."""
        if prepared is None:
            groups, cells = self._compact_groups(reports)
        else:
            groups, cells = prepared
        rows = groups[name]
        part = _compact.decoded_reports(
            self.channels[name],
            name,
            cells[rows],
            cells.shape[1],
            self.report_columns(name),
            reports.index.take(rows),
        )
        return self.with_channel(part, name)

    def with_channel(self, part: pd.DataFrame, name: str) -> pd.DataFrame:
        """``part`` (one column's reports) with the column's channel attached."""
        channel = self.channels[name]
        if (
            channel.bit_vector_reports
            and not getattr(channel, "missing_reports", False)
            and not is_packed_frame(part)  # packed: one binary column of bytes
        ):
            part = part.astype(np.uint8)
        part.attrs = {}
        attach_channel(part, channel)
        return part

    def _sampled_rows_of_all(self, reports, names):
        """Under "sample", with a categorical sampled column: name -> the
        positions of the rows that sampled it (ascending), from one stable
        sort of the column's codes instead of one comparison and one scan of
        every row per column. Empty otherwise (each column finds its rows)."""
        if self.strategy is None or self.strategy.get("name") != "sample":
            return {}
        column = self.strategy.get("sampled_column", "sampled_attribute")
        if column not in reports or not isinstance(reports[column].dtype, pd.CategoricalDtype):
            return {}
        labels = reports[column].cat.categories
        if labels.has_duplicates or len(labels) > 1 << 15:
            return {}
        codes = reports[column].cat.codes.to_numpy()  # -1: missing
        order = np.argsort(codes.astype(np.int16, copy=False), kind="stable")
        counts = np.bincount(codes + 1, minlength=len(labels) + 1)
        groups = np.split(order, np.cumsum(counts)[:-1])[1:]
        wanted = set(names)
        return {
            c: g for c, g in zip(labels, groups, strict=True) if isinstance(c, str) and c in wanted
        }

    def _sampled_rows(self, reports, name):
        """Under "sample": the rows whose user sampled ``name`` (None otherwise)."""
        if self.strategy is None or self.strategy.get("name") != "sample":
            return None
        column = self.strategy.get("sampled_column", "sampled_attribute")
        if column not in reports:
            return None
        return (reports[column] == name).to_numpy()

    def estimate(
        self, reports: pd.DataFrame, estimator: Any = None, *, columns: Sequence[str] | None = None
    ) -> dict[str, pd.Series]:
        """Estimate the distribution (or mean) of every column in ``reports``.

        Parameters
        ----------
        reports : DataFrame
            The table of reports, or some of its columns.
        estimator : estimator, default=None
            Template (cloned per column; ``None``: ``EMEstimator()``, and the
            numeric columns' own estimators); see
            :meth:`DataFramePrivatizer.estimate
            <sklearn_uldp.compose.DataFramePrivatizer.estimate>`.
        columns : list of str, default=None
            The columns to estimate; ``None``: every column whose report
            columns are all in ``reports``.

        Returns
        -------
        distributions : dict of {str: Series}
        """
        if columns is None:
            columns = self.present_columns(reports)
        if isinstance(reports, pd.DataFrame) and reports.attrs:
            # pandas deep-copies ``attrs`` (every column's spec, here) into
            # each frame and series it derives: a fifth of the time of
            # estimating ten columns went there. The spec is this object's.
            reports = reports.copy(deep=False)
            reports.attrs = {}
        if self.compact:
            prepared = self._compact_groups(reports)
            parts = {n: self._compact_column_reports(reports, n, prepared) for n in columns}
            return estimate_columns(parts, {n: self.channels[n] for n in columns}, estimator)
        rows = self._sampled_rows_of_all(reports, columns)
        parts = {name: self.column_reports(reports, name, _rows=rows.get(name)) for name in columns}
        return estimate_columns(parts, {n: self.channels[n] for n in columns}, estimator)

    def present_columns(self, reports: pd.DataFrame) -> list[str]:
        """The columns whose report columns are all in ``reports`` (or a KeyError)."""
        if self.compact:
            self._compact_columns(reports)
            return list(self.channels)
        have = set(reports.columns)
        columns = [n for n in self.channels if set(self.report_columns(n)) <= have]
        if not columns and _looks_compact(reports):
            raise ReportMismatchError(
                "These reports are a compact table (a report block "
                f"{_compact.BLOCK_PREFIX}0, ... and the sampled column), but the spec "
                "records the wide format: read them with the spec written with them "
                "(report_format='compact')."
            )
        if not columns:
            raise KeyError(
                "The reports hold no mechanism's report columns (they have "
                f"{list(reports.columns)[:10]}); expected e.g. "
                f"{ {n: self.report_columns(n) for n in list(self.channels)[:5]} }."
            )
        return columns


def estimate_columns(
    parts: Mapping[str, pd.DataFrame], channels: Mapping[str, Channel], estimator: Any = None
) -> dict[str, pd.Series]:
    """Estimate each column from its reports (``parts``, one frame per column).

    Categorical columns: the distribution by ``estimator`` (a distribution
    estimator, cloned per column; ``None``: the channel's default estimator,
    ``EMEstimator()``, the estimator the README advises to start with).
    Numeric columns: the mean (mean mechanisms) or the distribution over bins
    (Square Wave), by the numeric estimator given as ``estimator`` or the
    channel's default one. ``estimator`` serves the columns whose channel
    accepts it (``channel.accepts_estimator``); the others take their default.
    """
    result = {}
    for name, part in parts.items():
        channel = channels[name]
        # The template, where it estimates this column's kind of reports.
        given = None
        if estimator is not None and channel.accepts_estimator(estimator):
            given = estimator
        if not channel.has_categories:
            result[name] = _numeric_estimate(part, channel, given, name)
            continue
        est = clone(given) if given is not None else channel.default_estimator()
        est = est.fit(part)
        result[name] = pd.Series(
            est.distribution_,
            index=pd.Index(est.categories_, name=name),
            name="estimate",
        )
    return result


def _numeric_estimate(part, channel, estimator, name):
    """The estimate of a numeric column: its mean (and interval) for the
    mean mechanisms, its distribution over bins for Square Wave.
    ``estimator``: one the channel accepts, or None for its default."""
    est = clone(estimator) if estimator is not None else channel.default_estimator()
    if getattr(channel, "unbiased_reports", False):
        est = est.fit(part)
        low, high = est.confidence_interval()
        return pd.Series(
            {
                "mean": est.mean_,
                "standard_error": est.standard_error_,
                "ci_low": low,
                "ci_high": high,
                "n_reports": est.n_reports_,
            },
            name=name,
        )
    est = est.fit(part)
    edges = est.bin_edges_
    return pd.Series(
        est.distribution_,
        index=pd.Index(0.5 * (edges[:-1] + edges[1:]), name=name),
        name="estimate",
    )


# ------------------------------------------------------------- the schema
def missing_kind(channel):
    """The pandas dtype of a report column with missing values: the channel's
    ``missing_report_dtype`` (fixed by the channel, not by the data, so every
    chunk and partition has the same schema)."""
    return channel.missing_report_dtype


def sampled_block(reports, names, rows):
    """Report columns ``names`` on the boolean mask ``rows`` (or on the
    ascending positions ``rows``), as plain values.

    Under "sample" the other rows are missing; on the sampled rows the
    nullable columns hold no missing value and become numpy columns again
    (cheaper for the estimators than masked arrays).
    """
    out = {}
    if rows.dtype == bool:
        rows = np.flatnonzero(rows)  # one index for every column: takes are faster
    for name in names:
        values = reports[name].array
        if isinstance(values, pd.arrays.IntegerArray | pd.arrays.BooleanArray):
            # the masked array's values (a boolean take of the masked array
            # itself is several times slower)
            out[name] = np.asarray(values._data).take(rows)
        else:
            out[name] = values.take(rows)
    return pd.DataFrame(out, index=reports.index.take(rows))


# ------------------------------------------------------------ validation
def _is_name_list(value):
    """Whether a spec's entry is a non-empty list of column names (a string is not)."""
    return (
        not isinstance(value, str)
        and isinstance(value, Sequence)
        and bool(value)
        and all(isinstance(name, str) for name in value)
    )


def _checked_report_columns(report_columns, channels):
    if report_columns is None:
        return {}
    if not isinstance(report_columns, Mapping):
        raise ValueError(
            "report_columns must be a dict {column: [report column names]}; got "
            f"{type(report_columns).__name__}."
        )
    out = {}
    for name, names in report_columns.items():
        if name not in channels:
            continue  # a column the spec has no channel for
        if not _is_name_list(names):
            raise ValueError(
                f"The report columns of {name!r} must be a non-empty list of names; "
                f"got {type(names).__name__}."
            )
        out[name] = list(names)
    return out


def _looks_compact(reports):
    return f"{_compact.BLOCK_PREFIX}0" in reports.columns


def _block_array(reports, block):
    """The report block of a compact frame as one (n, w) array (no copy when
    the frame holds it as one block)."""
    frame = reports[block]
    arrays = [frame[c].array for c in block]
    if any(isinstance(a, pd.arrays.IntegerArray | pd.arrays.FloatingArray) for a in arrays):
        # nullable columns (Parquet or CSV read back with a schema): a
        # missing cell becomes NaN, refused with the attribute's name
        return np.column_stack(
            [np.asarray(a.to_numpy(dtype=np.float64, na_value=np.nan)) for a in arrays]
        )
    return frame.to_numpy()


def _check_compact_spec(channels, strategy):
    """A spec of the compact format: SMP, a block as wide as its widest column."""
    if strategy.get("name") != "sample":
        raise ValueError(
            "The strategy entry says report_format 'compact', which only "
            f"strategy 'sample' writes; got {strategy.get('name')!r}."
        )
    block = strategy.get("report_block")
    if not _is_name_list(block):
        raise ValueError(
            "A compact spec's strategy entry needs 'report_block', the list of the "
            "report block's column names."
        )
    column = strategy.get("sampled_column", "sampled_attribute")
    if len(set(block)) != len(block) or column in block:
        raise ValueError(
            "A compact spec's 'report_block' must name distinct columns, none of "
            "them the sampled_column: the spec was edited."
        )
    for name, channel in channels.items():
        refusal = _compact.compact_refusal(name, channel)
        if refusal is not None:
            raise ValueError(refusal)
    widths, _ = _compact.compact_layout(channels)
    if len(block) != max(widths.values()):
        raise ValueError(
            f"The spec's report block has {len(block)} column(s), but its widest "
            f"column's reports take {max(widths.values())}: the spec was edited or "
            "belongs to other columns."
        )


def _checked_strategy(strategy):
    if strategy is None:
        return None
    if not isinstance(strategy, Mapping) or strategy.get("name") not in _STRATEGIES:
        raise ValueError(
            f"The strategy entry must be an object whose 'name' is one of {list(_STRATEGIES)}."
        )
    column = strategy.get("sampled_column", "sampled_attribute")
    if not isinstance(column, str):
        raise ValueError(
            f"The strategy's sampled_column must be a column name, got {type(column).__name__}."
        )
    report_format = strategy.get("report_format", "wide")
    if report_format not in _compact.REPORT_FORMATS:
        raise ValueError(
            f"The strategy's report_format must be one of {list(_compact.REPORT_FORMATS)}."
        )
    if report_format == "compact" and strategy["name"] != "sample":
        raise ValueError(
            "The strategy entry says report_format 'compact', which only "
            f"strategy 'sample' writes; got {strategy['name']!r}."
        )
    return None if strategy["name"] == "split" else dict(strategy)


def _read_json(path):
    with open(path, encoding="utf-8") as fh:
        try:
            return json.load(fh)
        except (json.JSONDecodeError, RecursionError) as exc:
            raise ValueError(f"Spec file {path!r} is not valid JSON: {exc}") from None


def load_spec(path: str | PathLike[str]) -> dict[str | None, Channel]:
    """Read a spec file written by :meth:`DataFramePrivatizer.save_spec`.

    Unknown top-level keys (such as the ``"reports"`` entry the command line
    adds) are ignored.

    Parameters
    ----------
    path : str or path-like
        A multi-column spec file, or a one-channel file from
        ``Channel.to_json()`` (returned under the key ``None``).

    Returns
    -------
    channels : dict of {str: Channel}
        Column -> channel; pass a channel as ``mechanism=`` to any
        distribution estimator (or read the whole file with
        :meth:`TableSpec.from_file <sklearn_uldp.estimators.TableSpec.from_file>`,
        which estimates every column).

    Examples
    --------
    >>> import os, tempfile
    >>> from sklearn_uldp.compose import load_spec
    >>> from sklearn_uldp.mechanisms import RandomizedResponseChannel
    >>> path = os.path.join(tempfile.mkdtemp(), "rr.json")
    >>> with open(path, "w") as fh:
    ...     _ = fh.write(RandomizedResponseChannel(["a", "b"], 2.0).to_json())
    >>> load_spec(path)
    {None: RandomizedResponseChannel(k=2, epsilon=2.0)}
    """
    document = _read_json(path)
    if isinstance(document, dict) and "mechanism" in document:
        return {None: Channel.from_dict(document)}
    if not isinstance(document, dict) or not isinstance(document.get("columns"), dict):
        raise ValueError(
            f"Spec file {path!r} is neither a channel spec (with 'mechanism') nor a "
            "multi-column spec (with 'columns')."
        )
    return {c: Channel.from_dict(s) for c, s in document["columns"].items()}
