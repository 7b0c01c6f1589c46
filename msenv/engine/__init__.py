"""The functional, batched engine: one object per config (chosen by
:func:`~msenv.engine.functional.engine_for`), of one *kind* per module — the paper scenario's
(:mod:`~msenv.engine.kinds.paper`), the model §11 dynamics' (:mod:`~msenv.engine.kinds.dynamics`) or the
traces' (:mod:`~msenv.engine.kinds.traces`) — each with its state type, its observation table, its draws,
its context and its step, over what every kind shares (:mod:`~msenv.engine.base`).
Imports :mod:`msenv.traces`, :mod:`msenv.model` and :mod:`msenv.config`; never an environment shell."""
