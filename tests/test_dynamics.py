"""model §11 dynamics (msenv.engine.kinds.dynamics): requests, their renewals and the tokens they count."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

import msenv  # noqa: F401
from msenv import SystemConfig
from msenv.engine import functional as F
from msenv.engine.kinds.dynamics import REQUEST_POOL
from msenv.envs.env import MultiSpinEnv
from msenv.envs.vector import MultiSpinVectorEnv
from msenv.model import acceptance


def test_tokens_past_a_requests_end_are_never_counted():
    cfg = SystemConfig(num_devices=6, alpha_dynamics="request", acceptance_rates=(0.99, 0.99, 0.99, 0.99),
                       alpha_concentration=1000.0, request_mean_tokens=(3.0, 3.0, 3.0, 3.0), episode_length=50)
    env = MultiSpinEnv(cfg)
    env.reset(seed=1)
    wasted = 0
    for _ in range(40):
        left = env.state.remaining[0].copy()
        _, r, _, _, info = env.step(np.full(6, 10))
        generated = info["accepted"] + 1
        np.testing.assert_array_equal(info["tokens"], np.minimum(generated, left))
        assert r == pytest.approx(np.minimum(generated, left).sum() / info["latency"], rel=1e-12)
        wasted += int(np.sum(generated - info["tokens"]))
        assert np.all(info["request_done"] == (generated >= left))
    assert wasted > 0  # long drafts past short requests do waste tokens


def test_the_jth_request_is_the_same_whatever_the_controller():
    """Common random numbers: request j of a device has the same task, length and α under
    different draft lengths, although it starts at different rounds."""
    cfg = SystemConfig(num_devices=5, alpha_dynamics="markov", request_mean_tokens=(6.0, 8.0, 5.0, 7.0),
                       episode_length=200)
    seen = []
    for g in (1, 9):
        env = MultiSpinEnv(cfg)
        env.reset(seed=12)
        reqs = {}
        for _ in range(60):
            s = env.state
            for k in range(5):
                reqs.setdefault((k, int(s.req_index[0, k])), (int(s.task[0, k]), float(s.alpha_req[0, k])))
            env.step(np.full(5, g))
        seen.append(reqs)
    common = {key for key in set(seen[0]) & set(seen[1]) if key[1] <= REQUEST_POOL}  # later: step draws
    assert len([j for (_, j) in common if j >= 1]) >= 10
    for key in common:
        assert seen[0][key] == seen[1][key], key


@pytest.mark.parametrize("over", [dict(alpha_dynamics="request", alpha_observed=False, alpha_belief="beta"),
                                  dict(alpha_dynamics="markov", alpha_observed=False),
                                  dict(alpha_dynamics="markov", alpha_observed=False, alpha_belief="beta"),
                                  dict(alpha_dynamics="request", channel_dynamics="gauss_markov", csi="statistical")])
def test_request_renewals_in_and_past_the_pool(over):
    """Short requests exhaust the reset pool: every renewal starts the pool's next request (or, past
    it, one from the step's draws) with its task's prior belief and the chain's α, and the step's
    cached observation equals the one recomputed from the state's fields."""

    cfg = SystemConfig(num_devices=4, request_mean_tokens=(2.0, 3.0, 2.0, 2.0), episode_length=200, **over)
    venv = MultiSpinVectorEnv(3, cfg)
    venv.reset(seed=4)
    in_pool = past = 0
    grid = acceptance.grid_belief(cfg) if cfg.belief == "grid" else None
    for t in range(40):
        before = venv.state
        obs, _, _, _, info = venv.step(np.full((3, 4), 1 + t % 4))
        s = venv.state
        np.testing.assert_array_equal(obs, F.observe(s._replace(obs=None), cfg))
        done = info["request_done"]
        np.testing.assert_array_equal(s.req_index, before.req_index + done)
        for r, i in zip(*np.nonzero(done)):
            j = s.req_index[r, i]
            if j <= REQUEST_POOL:
                in_pool += 1
                task, length, u_alpha = before.req_pool[r, i, j - 1]
                a0, b0 = acceptance.beta_prior(cfg.acceptance_rates[int(task)], cfg.alpha_concentration)
                assert s.alpha_req[r, i] == pytest.approx(stats.beta(a0, b0).ppf(u_alpha), rel=1e-9)
                assert (s.task[r, i], s.remaining[r, i]) == (task, length)
            else:
                past += 1
                assert s.remaining[r, i] >= 1 and 0 < s.alpha_req[r, i] <= 1
            want = (acceptance.markov_alpha(s.alpha_req[r, i], s.hard[r, i], cfg.markov_delta)
                    if cfg.alpha_dynamics == "markov" else s.alpha_req[r, i])
            assert s.alpha[r, i] == want
            mean = cfg.acceptance_rates[s.task[r, i]]
            if cfg.belief == "beta":
                assert (s.post_a[r, i], s.post_b[r, i]) == acceptance.beta_prior(mean, cfg.alpha_concentration)
            elif grid is not None:
                np.testing.assert_array_equal(s.belief[r, i], grid["prior"][s.task[r, i]])
        not_done = ~done
        np.testing.assert_array_equal(s.task[not_done], before.task[not_done])
    assert in_pool > 20 and past > 20
