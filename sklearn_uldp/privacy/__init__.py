"""Verification of privacy guarantees on exact channels.

Checks epsilon-LDP, (X_S, Y_P, epsilon)-ULDP and (X_S, epsilon)-OSLDP
pointwise on a mechanism's exact channel matrix, returning the worst
log-ratio found and the invertible outputs; audits a sampler empirically
(:func:`audit_mechanism`, a statistical lower bound on its realized epsilon;
:func:`audit_rounds` for the reports of many rounds).
"""

from . import _audit, _audit_rounds, _budget, _checks, _context_aware
from ._audit import *  # noqa: F403
from ._audit_rounds import *  # noqa: F403
from ._budget import *  # noqa: F403
from ._checks import *  # noqa: F403
from ._context_aware import *  # noqa: F403

# The public names of the modules above (their own __all__), in one place.
__all__ = [
    *_audit.__all__,
    *_checks.__all__,
    *_budget.__all__,
    *_audit_rounds.__all__,
    *_context_aware.__all__,
]
