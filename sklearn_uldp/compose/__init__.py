"""Composition: privatize DataFrames column by column, or tuples of columns jointly."""

from ._dataframe import DataFramePrivatizer, load_spec
from ._joint import JointEncoder
from ._row_privacy import RowChannel, RowPrivacy, check_row_privacy, row_channel

__all__ = [
    "DataFramePrivatizer",
    "JointEncoder",
    "load_spec",
    "row_channel",
    "check_row_privacy",
    "RowChannel",
    "RowPrivacy",
]
