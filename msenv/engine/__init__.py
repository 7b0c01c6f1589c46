"""The functional, batched engine: the state and its random draws, the observation, what a
controller sees (the context), the model §11 dynamics, reset and step, and the SAA estimator.
Imports :mod:`msenv.model` and :mod:`msenv.config`; never an environment shell."""
