#!/usr/bin/env python3
"""Writes tests/fixtures/groot_lerobot_tiny: a LeRobot 0.5.1 GrootPolicy directory, by LeRobot's own classes.

How to run
----------
Needs LeRobot 0.5.1 (its groot policy is N1.5) and what its config and processor modules import,
on a Python >= 3.12 with torch (the LeRobot venv of scripts/setup.sh):

    PY=~/.cache/ember/venv-lerobot/bin/python
    $PY -m pip install --no-deps --target /tmp/n15 lerobot==0.5.1 pandas pyarrow av imageio pyserial deepdiff \
        orderly-set cachebox datasets
    PYTHONPATH=/tmp/n15 $PY tests/python/groot_lerobot_fixture.py tests/fixtures/groot_lerobot_tiny

What it writes (the layout `GrootPolicy.save_pretrained` and the processors' `save_pretrained` give):
  config.json        LeRobot's GrootConfig, encoded against PreTrainedConfig as LeRobot saves a
                     policy's config (with its "type"); base_model_path names the GR00T-N1.5
                     directory the policy was made from: ../groot_n15_tiny (the shrunken model of
                     groot_n15_reference.py), where a real one names nvidia/GR00T-N1.5-3B
  model.safetensors  groot_n15_tiny's GR00TN15 state dict under "_groot_model." (the policy's
                     attribute holding the model), as GrootPolicy's state dict names it
  policy_preprocessor.json, policy_preprocessor_step_2_groot_pack_inputs_v3.safetensors
                     make_groot_pre_post_processors' pipeline: its pack step's min-max statistics
  policy_postprocessor.json, policy_postprocessor_step_0_groot_action_unpack_unnormalize_v1.safetensors

Only LeRobot's config and processor modules are imported, not lerobot.policies' package __init__
(which imports every policy, and N1.5's model code needs transformers 4.x). No network.
Exits 0 with a line starting "skipped:" when they cannot be imported.
"""

from __future__ import annotations

import json
import os
import pathlib
import sys
import types

# the robot of the fixture: two cameras, a 5-wide state and a 6-wide action (the heads are 8 wide),
# N1.5's so100 embodiment (its projector 2 of the shrunken model's 3)
STATE_MIN, STATE_MAX = [-1.0, -2.0, -3.0, -4.0, -5.0], [1.0, 2.0, 3.0, 4.0, 5.0]
ACTION_MIN, ACTION_MAX = [-0.5] * 6, [0.5, 1.0, 1.5, 2.0, 2.5, 3.0]


def skip(reason: str) -> None:
    print(f"skipped: {reason}")
    sys.exit(0)


def main() -> None:
    if len(sys.argv) != 2:
        sys.exit("usage: groot_lerobot_fixture.py OUT_DIR")
    out = pathlib.Path(sys.argv[1])
    if sys.version_info < (3, 12):
        skip(f"LeRobot 0.5.1 needs Python >= 3.12, this is {sys.version.split()[0]}")
    try:
        import torch
        import draccus
        from safetensors.torch import load_file, save_file
        import lerobot
        base = os.path.join(os.path.dirname(lerobot.__file__), "policies")
        for name, path in [("lerobot.policies", base), ("lerobot.policies.groot", os.path.join(base, "groot"))]:
            module = types.ModuleType(name)
            module.__path__ = [path]
            sys.modules[name] = module
        from lerobot.configs.policies import PreTrainedConfig
        from lerobot.configs.types import FeatureType, PolicyFeature
        from lerobot.policies.groot.configuration_groot import GrootConfig
        from lerobot.policies.groot.processor_groot import make_groot_pre_post_processors
    except Exception as e:  # ImportError, or a broken install
        skip(f"cannot import LeRobot 0.5.1's groot config and processors ({type(e).__name__}: {e})")

    n15 = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "groot_n15_tiny"
    image = {"shape": (3, 28, 28)}
    config = GrootConfig(
        chunk_size=4, n_action_steps=4, max_state_dim=8, max_action_dim=8, embodiment_tag="so100",
        base_model_path="../groot_n15_tiny", device="cpu",
        input_features={"observation.images.wrist": PolicyFeature(type=FeatureType.VISUAL, **image),
                        "observation.images.front": PolicyFeature(type=FeatureType.VISUAL, **image),
                        "observation.state": PolicyFeature(type=FeatureType.STATE, shape=(5,))},
        output_features={"action": PolicyFeature(type=FeatureType.ACTION, shape=(6,))})
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "config.json", "w") as f:
        json.dump(draccus.encode(config, PreTrainedConfig), f, indent=4)
    state = {"_groot_model." + k: v for k, v in load_file(str(n15 / "model.safetensors")).items()}
    save_file(state, str(out / "model.safetensors"), metadata={"format": "pt"})
    stats = {"observation.state": {"min": torch.tensor(STATE_MIN), "max": torch.tensor(STATE_MAX),
                                   "mean": torch.zeros(5), "std": torch.ones(5)},
             "action": {"min": torch.tensor(ACTION_MIN), "max": torch.tensor(ACTION_MAX),
                        "mean": torch.zeros(6), "std": torch.ones(6)}}
    pre, post = make_groot_pre_post_processors(config, stats)
    pre.save_pretrained(str(out))
    post.save_pretrained(str(out))
    print(f"wrote {out}: {len(state)} tensors")


if __name__ == "__main__":
    main()
