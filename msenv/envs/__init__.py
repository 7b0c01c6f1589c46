"""The environments: thin Gymnasium shells over :mod:`msenv.engine` (single, vector, cell
generator), rendering, and the adapters for PettingZoo and Stable-Baselines3. The top of msenv."""
