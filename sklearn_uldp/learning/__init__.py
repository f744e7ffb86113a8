"""Learning on privatized data: models trained on users' reports, never on their values.

* :class:`LabelPrivacyClassifier`: any scikit-learn classifier trained on
  privatized labels, with the channel's noise corrected (posterior weights,
  the forward correction, or Ghazi et al.'s RR-with-prior).
* :class:`LDPNaiveBayes`: categorical naive Bayes from privatized (label,
  feature value) pairs, one report per user.
* :class:`LDPLogisticRegression`, :class:`LDPLinearSVC`,
  :class:`LDPLinearRegression`: Wang et al.'s LDP-SGD (each user reports one
  perturbed gradient), and linear regression from privatized rows by
  moment correction.
* :class:`PrivatizedGroupReweighter`: Kamiran & Calders' reweighing for
  fairness when the sensitive attribute is privatized.

See ``docs/learning.md`` for the mathematics and the measured figures.
"""

from ._label_privacy import (
    LabelPrivacyClassifier,
    debiased_log_loss,
    rr_with_prior_likelihood,
    rr_with_prior_sizes,
)
from ._naive_bayes import LDPNaiveBayes
from ._reweighing import PrivatizedGroupReweighter
from ._sgd import (
    LDPLinearRegression,
    LDPLinearSVC,
    LDPLogisticRegression,
    gradient_variance,
    privatize_gradients,
)

__all__ = [
    "LabelPrivacyClassifier",
    "LDPNaiveBayes",
    "LDPLogisticRegression",
    "LDPLinearSVC",
    "LDPLinearRegression",
    "PrivatizedGroupReweighter",
    "privatize_gradients",
    "gradient_variance",
    "rr_with_prior_sizes",
    "rr_with_prior_likelihood",
    "debiased_log_loss",
]
