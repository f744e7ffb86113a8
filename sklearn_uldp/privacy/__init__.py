"""Verification of privacy guarantees on exact channels.

Checks epsilon-LDP, (X_S, Y_P, epsilon)-ULDP and (X_S, epsilon)-OSLDP
pointwise on a mechanism's exact channel matrix, returning the worst
log-ratio found and the invertible outputs; audits a sampler empirically
(:func:`audit_mechanism`, a statistical lower bound on its realized epsilon;
:func:`audit_rounds` for the reports of many rounds).
"""

from ._audit import AuditResult, audit_mechanism
from ._audit_rounds import audit_rounds
from ._budget import BudgetAccountant, longitudinal_exposure
from ._checks import (
    PrivacyCheck,
    as_channel_matrix,
    check_ldp,
    check_osldp,
    check_uldp,
    invertible_outputs,
)
from ._context_aware import (
    ContextAwareCheck,
    PrivacyMatrix,
    block_structured,
    check_context_aware,
    high_low,
    ldp,
    pairwise_log_ratio,
    privacy_profile,
)

__all__ = [
    "audit_mechanism",
    "AuditResult",
    "PrivacyCheck",
    "as_channel_matrix",
    "check_ldp",
    "check_uldp",
    "check_osldp",
    "invertible_outputs",
    "BudgetAccountant",
    "longitudinal_exposure",
    "audit_rounds",
    "PrivacyMatrix",
    "ContextAwareCheck",
    "ldp",
    "high_low",
    "block_structured",
    "check_context_aware",
    "pairwise_log_ratio",
    "privacy_profile",
]
