"""The engine's kinds, one module each (a long compiled round in a module of its own): the paper
scenario's (:mod:`~msenv.engine.kinds.paper`), the model §11 dynamics'
(:mod:`~msenv.engine.kinds.dynamics`, its round :mod:`~msenv.engine.kinds.dynamics_round`) and the
traces' (:mod:`~msenv.engine.kinds.traces`, its round :mod:`~msenv.engine.kinds.traces_round`). A kind
owns its state type, its observation table, its draws, its context type, its ``info`` keys and its
step; :func:`~msenv.engine.functional.engine_for` picks one per config."""
