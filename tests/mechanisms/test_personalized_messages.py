"""``PersonalizedMechanism`` never quotes a user's value (issue 30).

A value or tag outside the domain was listed in the error ("holds values
['...'] that are not categories"); the message now counts them and says their
kind and rows, as every other mechanism's does.
"""

import pandas as pd
import pytest

from sklearn_uldp import PersonalizedMechanism

MARKER = "MARKER-7f3a"


@pytest.mark.parametrize(
    "frame, column",
    [
        (pd.DataFrame({"v": ["a", MARKER], "home": ["a", None]}), "Value column 'v'"),
        (pd.DataFrame({"v": ["a", "b"], "home": [MARKER, None]}), "Tag column 'home'"),
        (pd.DataFrame({"v": ["a", "b"], "home": [["b", MARKER], None]}), "Tag column 'home'"),
    ],
)
def test_values_outside_the_domain_are_counted_not_shown(frame, column):
    mech = PersonalizedMechanism(
        1.0, sensitive=["a"], tags=["home"], categories=list("abcd"), random_state=0
    )
    with pytest.raises(ValueError, match="not categories") as info:
        mech.fit_transform(frame)
    message = str(info.value)
    assert MARKER not in message, message
    assert column in message and "1 value (text)" in message
