"""Composition: privatize DataFrames column by column, or tuples of columns jointly."""

from ._dataframe import DataFramePrivatizer, load_spec
from ._joint import JointEncoder

__all__ = ["DataFramePrivatizer", "JointEncoder", "load_spec"]
