"""Regenerate tests/data/golden_ids.npz: a trajectory of every registered id, recorded when the id
was released. ``test_functional.py::test_every_id_keeps_its_recorded_trajectory`` holds each id to
it (Gymnasium's rule: an id's version changes whenever its behaviour changes — a new behaviour
gets a new id, ``-v1``, recorded here, and the old trajectory stays). Run only to record a *new*
id: ``python tests/make_golden_ids.py``; existing ids keep their recording."""

from pathlib import Path

import numpy as np
from make_golden import record

import msenv

PATH = Path(__file__).parent / "data" / "golden_ids.npz"


def main() -> None:
    old = dict(np.load(PATH)) if PATH.exists() else {}
    data = dict(old)
    for env_id in list(msenv.ENV_IDS):
        if any(k.startswith(env_id + "/") for k in old):
            continue  # recorded at its release: never re-recorded
        for key, v in record(env_id, {}).items():
            data[f"{env_id}/{key}"] = v
    np.savez_compressed(PATH, **data)
    print(f"wrote {PATH} ({len(data)} arrays)")


if __name__ == "__main__":
    main()
