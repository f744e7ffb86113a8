"""The shared docstring fragments: whole-line placeholders, indentation kept."""

import pytest

from sklearn_uldp.utils._docstrings import fill_doc, fill_docstring


def test_fragment_is_indented_as_its_placeholder():
    doc = "Head.\n\n    Parameters\n    ----------\n    %(p)s\n    q : int\n"
    out = fill_docstring(doc, {"p": "\n    p : int\n        The p.\n\n        More.\n"})
    assert out == (
        "Head.\n\n    Parameters\n    ----------\n    p : int\n        The p.\n\n"
        "        More.\n    q : int\n"
    )


def test_only_whole_line_placeholders_are_filled():
    doc = "95 % of %(p)s users {a, b}\n%(p)s\n"
    assert fill_docstring(doc, {"p": "x"}) == "95 % of %(p)s users {a, b}\nx\n"


def test_unknown_fragment_is_an_error():
    with pytest.raises(KeyError, match="nope"):
        fill_doc({})(type("C", (), {"__doc__": "  %(nope)s\n"}))


def test_every_public_docstring_is_filled():
    # A placeholder left in a rendered docstring means a class forgot @fill_doc.
    import importlib
    import inspect
    import pkgutil

    import sklearn_uldp

    for info in pkgutil.iter_modules(sklearn_uldp.__path__):
        if info.name.startswith("_") or not info.ispkg:
            continue
        sub = importlib.import_module(f"sklearn_uldp.{info.name}")
        for name in getattr(sub, "__all__", []):
            obj = getattr(sub, name)
            members = [obj, *(m for _, m in inspect.getmembers(obj, inspect.isfunction))]
            for member in members:
                assert "%(" not in (member.__doc__ or ""), f"{info.name}.{name}"
