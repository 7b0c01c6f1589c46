"""Configs shared by several test modules."""

DYNAMIC = [
    dict(channel_dynamics="gauss_markov", csi="decision", speed_range_mps=(0.5, 1.5)),
    dict(channel_dynamics="gauss_markov", csi="oracle", speed_range_mps=(0.0, 0.05), fading="reciprocal",
         alpha_dynamics="request", alpha_observed=False),
    dict(channel_dynamics="gauss_markov", csi="statistical", speed_range_mps=(1.0, 2.0), alpha_dynamics="markov",
         alpha_observed=False, mode_policy="random", request_mean_tokens=(20.0, 30.0, 25.0, 10.0)),
    dict(alpha_dynamics="request", alpha_observed=False, alpha_belief="grid", alpha_grid_size=16,
         request_mean_tokens=(20.0, 30.0, 25.0, 10.0)),
]
