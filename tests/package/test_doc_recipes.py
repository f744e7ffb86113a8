"""The recipes of the workflow and many-attributes pages run, and print what the pages show.

``tests/package/test_docs.py`` runs every Python block of the pages. Here the
scale-out recipes (Dask among them) are checked for their **results**: each
block's printed output is compared with the ``text`` block that follows it
on the page, number by number within a unit of the last digit shown (so a
recipe that silently gives a wrong estimate, such as reducing a sampled
column with its mechanism's channel, fails here, and a rounding of the
last digit on another processor does not).
"""

from __future__ import annotations

import contextlib
import io
import re
import warnings
from pathlib import Path

import pytest
from _repo import REPO_ROOT

#: A fenced Python block, and the text block that directly follows it (if any).
_BLOCK = re.compile(r"^```python\n(.*?)^```\n(?:\s*^```text\n(.*?)^```\n)?", flags=re.S | re.M)
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:e[-+]?\d+)?")


def page_recipes(page):
    """(code, expected output or None, line) of each Python block of ``page``."""
    text = (REPO_ROOT / page).read_text(encoding="utf-8")
    return [
        (m.group(1), m.group(2), text.count("\n", 0, m.start()) + 1) for m in _BLOCK.finditer(text)
    ]


def _tokens(text):
    """Numbers and the words between them (whitespace collapsed)."""
    out, last = [], 0
    for m in _NUMBER.finditer(text):
        out += text[last : m.start()].split()
        out.append(m.group())
        last = m.end()
    return out + text[last:].split()


def _same_number(shown, got):
    if not (_NUMBER.fullmatch(shown) and _NUMBER.fullmatch(got)):
        return False
    mantissa = shown.split("e")[0]
    if "." not in mantissa:
        return shown == got  # counts are exact
    decimals = len(mantissa.split(".")[1])
    # one unit of the last digit shown (another processor may round the
    # last digit the other way), relative for numbers with an exponent
    unit = 10.0**-decimals * (10.0 ** int(shown.split("e")[1]) if "e" in shown else 1.0)
    return abs(float(shown) - float(got)) <= 1.01 * unit


def outputs_match(shown, got):
    """Whether the printed output ``got`` is the page's ``shown`` (numbers
    within one unit of their last digit, words exactly)."""
    a, b = _tokens(shown), _tokens(got)
    return len(a) == len(b) and all(x == y or _same_number(x, y) for x, y in zip(a, b, strict=True))


def run_page(page, tmp_path, monkeypatch):
    """Run every block of ``page`` in order; the mismatching outputs."""
    monkeypatch.chdir(tmp_path)
    namespace = {"__name__": f"docs_{Path(page).stem}"}
    mismatches = []
    for code, shown, line in page_recipes(page):
        out = io.StringIO()
        with contextlib.redirect_stdout(out), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            exec(compile(code, f"{page}:{line}", "exec"), namespace)
        if shown is not None and not outputs_match(shown, out.getvalue()):
            mismatches.append(f"{page}:{line}\n--- shown\n{shown}--- printed\n{out.getvalue()}")
    return mismatches


@pytest.mark.parametrize("page", ["docs/workflow.md", "docs/many_attributes.md"])
def test_recipes_print_what_the_page_shows(page, tmp_path, monkeypatch):
    pytest.importorskip("dask.dataframe")
    pytest.importorskip("distributed")
    mismatches = run_page(page, tmp_path, monkeypatch)
    assert not mismatches, "\n\n".join(mismatches)


def test_the_pages_run_their_dask_recipes():
    # The scale-out recipes are code blocks (run and checked above), not
    # prose: each page reduces Dask partitions with the column's channel.
    for page in ("docs/workflow.md", "docs/many_attributes.md"):
        code = "\n".join(c for c, _, _ in page_recipes(page))
        assert "dask.dataframe" in code and "mechanism=" in code, page
        assert re.search(r"reduce_statistics\(\s*lazy\[\w+\.report_columns\(name\)\]", code), page
        assert "channels_[name]" in code, page


@pytest.mark.parametrize(
    "shown, got, same",
    [
        ("[0.506 0.291 0.155 0.048]", "[0.506 0.291 0.155 0.048]\n", True),
        ("[0.506 0.291 0.155 0.048]", "[0.507 0.29  0.155 0.048]", True),  # last digit
        ("[0.506 0.291]", "[0.52 0.265]", False),  # another estimate
        ("30000 [0.5]", "29999 [0.5]", False),  # integers are exact
        ("TV 0.05", "TV 0.05 0.1", False),
        ("a 1.5e-03", "a 1.6e-03", True),
        ("a 1.5e-03", "a 1.8e-03", False),
        ("north", "south", False),
    ],
)
def test_outputs_are_compared_to_the_last_digit(shown, got, same):
    assert outputs_match(shown, got) is same
