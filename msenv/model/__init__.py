"""The model's formulas and the one round kernel (channel, acceptance, latency, reactive stage,
goodput): pure, batched functions of arrays. Imports only :mod:`msenv.config`."""
