"""The functional, batched engine: one object per config (:mod:`~msenv.engine.kinds`, chosen by
:func:`~msenv.engine.functional.engine_for`) — the paper scenario's, the model §11 dynamics' or the
traces' — with the state and its random draws, the observation and its layout, what a controller
sees (the context), reset and step, and the padded rows of a cell generator.
Imports :mod:`msenv.traces`, :mod:`msenv.model` and :mod:`msenv.config`; never an environment shell."""
