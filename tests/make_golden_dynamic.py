"""Regenerate tests/data/golden_dynamic.npz: trajectories of model §11 configs recorded with the
numpy implementation of the dynamic step (commit 6188e3c, before the compiled kernel), for
``test_dynamics.py::test_dynamic_step_matches_the_numpy_implementation``. Re-baseline only on
purpose, from that commit: ``PYTHONPATH=<checkout of 6188e3c> python tests/make_golden_dynamic.py``."""

from make_golden import record, write  # noqa: F401 (record: used by the test)

_REQ = (20.0, 30.0, 25.0, 10.0)
CASES = {
    "dynamic_small": ("msenv/MultiSpin-Dynamic-Small-v0", dict(alpha_grid_size=32, episode_length=25)),
    "hidden_alpha": ("msenv/MultiSpin-HiddenAlpha-v0", dict(num_devices=5, episode_length=25)),
    "mobile": ("msenv/MultiSpin-Mobile-v0", dict(num_devices=5, episode_length=25)),
    "iid_requests_random": ("msenv/MultiSpin-v0", dict(num_devices=5, episode_length=25, alpha_dynamics="request",
                                                      alpha_observed=False, request_mean_tokens=_REQ,
                                                      mode_policy="random", fading="reciprocal")),
    "gm_statistical_chain": ("msenv/MultiSpin-v0",
                             dict(num_devices=5, episode_length=25, channel_dynamics="gauss_markov",
                                                       csi="statistical", speed_range_mps=(1.0, 30.0),
                                                       alpha_dynamics="markov", alpha_observed=False,
                                                       alpha_grid_size=32, request_mean_tokens=_REQ)),
    "fixed_hidden": ("msenv/MultiSpin-v0", dict(num_devices=4, episode_length=20, alpha_observed=False,
                                               fading_redraw="episode")),
}

if __name__ == "__main__":
    write(CASES, "golden_dynamic.npz")
