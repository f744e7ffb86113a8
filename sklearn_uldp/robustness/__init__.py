"""Robustness to fake users: poisoning attacks and robust frequency estimation.

A few percent of fake users who craft their reports inflate chosen items
under every frequency oracle (Cao, Jia & Gong, USENIX Security 2021).
:func:`poison` simulates the attacks (the maximal gain attack, fake users
privatizing a target honestly, uniform reports) against any frequency
oracle of the package, utility-optimized ones included;
:class:`RobustFrequencyEstimator` detects the targets and removes the fake
users' contribution (LDPRecover, Sun et al., arXiv 2403.09351). See the
"Poisoning and robust estimation" page.
"""

from ._estimator import RobustFrequencyEstimator
from ._models import ATTACKS
from ._poison import poison

__all__ = ["ATTACKS", "RobustFrequencyEstimator", "poison"]
