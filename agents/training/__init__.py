"""Training PPO on an msenv id and comparing it with the controllers on held-out episodes — the
library behind ``train.py``:

- :mod:`~agents.training.config`: :class:`TrainingConfig`, a run's validated settings (their
  defaults: :mod:`agents.defaults`, the one table);
- :mod:`~agents.training.errors`: a bad setting's ``ValueError``, worded for Python or the command line;
- :mod:`~agents.training.options`: the command line's options, mapped to those fields;
- :mod:`~agents.training.resume`: the run's folder, and a stopped run's settings to continue it;
- :mod:`~agents.training.phases` and :mod:`~agents.training.compare`: the phases — baselines,
  training, the comparison table — which :func:`run` (:mod:`~agents.training.runner`) runs in order.
"""

from .config import TrainingConfig
from .errors import SettingError, SettingTypeError
from .resume import resumed
from .runner import EXIT_IO_ERROR, run

__all__ = ["EXIT_IO_ERROR", "SettingError", "SettingTypeError", "TrainingConfig", "resumed", "run"]
