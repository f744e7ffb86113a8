"""Verification of privacy guarantees on exact channels, attacks and accounting.

Checks epsilon-LDP, (X_S, Y_P, epsilon)-ULDP and (X_S, epsilon)-OSLDP
pointwise on a mechanism's exact channel matrix, returning the worst
log-ratio found and the invertible outputs; audits a sampler empirically
(:func:`audit_mechanism`, a statistical lower bound on its realized epsilon;
:func:`audit_rounds` for the reports of many rounds); measures what an
adversary learns from one report (:func:`attack_success_rate`) and what a
shuffler buys the collector (:func:`shuffle_amplification`); keeps the
budget (:class:`BudgetAccountant`).
"""

from . import _attacks, _audit, _audit_rounds, _budget, _checks, _context_aware, _shuffle
from ._attacks import *  # noqa: F403
from ._audit import *  # noqa: F403
from ._audit_rounds import *  # noqa: F403
from ._budget import *  # noqa: F403
from ._checks import *  # noqa: F403
from ._context_aware import *  # noqa: F403
from ._shuffle import *  # noqa: F403

# The public names of the modules above (their own __all__), in one place.
__all__ = [
    *_audit.__all__,
    *_checks.__all__,
    *_budget.__all__,
    *_audit_rounds.__all__,
    *_context_aware.__all__,
    *_attacks.__all__,
    *_shuffle.__all__,
]
