#!/usr/bin/env python3
"""GR00T-N1.5 reference outputs for ember's parity tests (issue 41).

How to run
----------
Needs the N1.5 model code of LeRobot 0.5.1 (the last LeRobot with N1.5; 0.6.x ships N1.7) and
diffusers, on top of a Python >= 3.12 with torch and transformers 5.x (the LeRobot 0.6.1 venv of
scripts/setup.sh has both):

    PY=~/.cache/ember/venv-lerobot/bin/python
    $PY -m pip install --no-deps --target /tmp/n15 lerobot==0.5.1 diffusers==0.35.2
    PYTHONPATH=/tmp/n15 $PY tests/python/groot_n15_reference.py [--variant n15|shuffle] OUT_DIR

(tests/fixtures/groot_n15_tiny is --variant n15, N1.5's own Eagle layout; groot_n15_shuffle_tiny
is --variant shuffle.)

Only LeRobot's N1.5 modules are imported (`policies/groot/action_head/*`,
`policies/groot/eagle2_hg_model/modeling_eagle2_5_vl.py`, `policies/groot/groot_n1.py`'s
EagleBackbone), not its package __init__ (which pulls every policy's dependencies). peft is
replaced by a stub: Eagle imports it for LoRA, which this model does not use. No network: the
Eagle 2.5 backbone is built from a shrunken Eagle25VLConfig (SigLIP + Qwen3) instead of the Hub
config EagleBackbone would fetch. Random weights from a fixed seed, fp32 on the CPU, one thread.

OUT_DIR then holds
  config.json          GR00T-N1.5's config (model_type gr00t_n1_5: backbone_cfg, action_head_cfg)
  model.safetensors    the state dict in GR00TN15's names (backbone.eagle_model.*, action_head.*)
  ember_shrink.json    what no tensor shows of the shrunken backbone (the SigLIP head count; the
                       rest ember reads from the tensors or takes as N1.5's)
  reference.safetensors  fixed inputs and the reference's outputs; its metadata key "reference"
                       (JSON) lists them and the sample layout

The batch: every sample has the same number of images and prompt tokens, because N1.5 attends
to padded backbone tokens (its DiT passes no encoder mask) where ember masks them: with equal
lengths there is no padding and both compute the same function.

--verify DIR   loads DIR's config.json and model.safetensors (e.g. written by `ember export --to
               groot_n15`) strictly into the reference modules and compares their outputs on the
               inputs of OUT's reference.safetensors (--inputs FILE) with the stored ones; exit 1
               beyond --rtol (default 1e-4).

Exits 0 with a line starting "skipped:" when the reference cannot be imported.
"""

from __future__ import annotations

import argparse
import importlib.machinery
import json
import os
import sys
import types

SEED = 4321
VISION = {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2, "num_attention_heads": 2,
          "image_size": 28, "patch_size": 7, "layer_norm_eps": 1e-6, "hidden_act": "gelu_pytorch_tanh"}
TEXT = {"architectures": ["Qwen3ForCausalLM"], "hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 3,
        "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 512,
        "rope_theta": 1000000.0, "rms_norm_eps": 1e-6, "max_position_embeddings": 256, "tie_word_embeddings": False,
        "attention_bias": False, "hidden_act": "silu"}
IMAGE_TOKEN = 511
# N1.5's Eagle (its eagle config: no pixel shuffle, one Linear as the connector), and Eagle 2.5's
# other layout (pixel shuffle 0.5, LayerNorm + Linear + GELU + Linear), which ember also reads
VARIANTS = {"n15": {"use_pixel_shuffle": False, "mlp_connector_layers": 1},
            "shuffle": {"use_pixel_shuffle": True, "mlp_connector_layers": 2}}
SELECT_LAYER = 2  # of 3 language model layers: the third is popped, as N1.5 pops past select_layer 12
ACTION_HEAD = {
    "action_dim": 8, "action_horizon": 4, "add_pos_embed": True, "backbone_embedding_dim": 64, "hidden_size": 32,
    "input_embedding_dim": 48, "max_num_embodiments": 3, "max_seq_len": 16, "max_state_dim": 8, "model_dtype": "float32",
    "noise_beta_alpha": 1.5, "noise_beta_beta": 1.0, "noise_s": 0.999, "num_inference_timesteps": 4,
    "num_target_vision_tokens": 4, "num_timestep_buckets": 1000, "tune_diffusion_model": True, "tune_projector": True,
    "use_vlln": True,
    "diffusion_model_cfg": {"attention_head_dim": 24, "cross_attention_dim": 64, "dropout": 0.2, "final_dropout": True,
                            "interleave_self_attention": True, "norm_type": "ada_norm", "num_attention_heads": 2,
                            "num_layers": 4, "output_dim": 32, "positional_embeddings": None},
    "vl_self_attention_cfg": {"attention_head_dim": 32, "dropout": 0.2, "final_dropout": True, "num_attention_heads": 2,
                              "num_layers": 1, "positional_embeddings": None},
}
BACKBONE = {"eagle_path": "shrunken Eagle 2.5 (tests/python/groot_n15_reference.py)", "load_bf16": False,
            "project_to_dim": None, "reproject_vision": False, "select_layer": SELECT_LAYER, "tune_llm": False,
            "tune_visual": False, "use_flash_attention": False}
# the batch: 3 samples, 2 cameras each (4 tokens per image after the pixel shuffle), 5 prompt tokens
BATCH, CAMERAS, PROMPT = 3, 2, 5
EMBODIMENTS = [1, 0, 2]
STATE_DIM, ACTION_DIM = 5, 6  # real widths; N1.5 pads to max_state_dim 8 / action_dim 8
TIME = [0.125, 0.5, 0.9375]


def skip(reason: str) -> None:
    print(f"skipped: {reason}")
    sys.exit(0)


def import_reference():
    """LeRobot 0.5.1's N1.5 classes, without lerobot.policies' package __init__."""
    if sys.version_info < (3, 12):
        skip(f"LeRobot's N1.5 code needs Python >= 3.12, this is {sys.version.split()[0]}")
    try:
        import lerobot
        base = os.path.join(os.path.dirname(lerobot.__file__), "policies")
        if not os.path.exists(os.path.join(base, "groot", "action_head", "flow_matching_action_head.py")):
            skip(f"{base}/groot has no N1.5 action head (LeRobot {getattr(lerobot, '__version__', '?')}; N1.5 is in 0.5.1)")
        for name, path in [("lerobot.policies", base), ("lerobot.policies.groot", os.path.join(base, "groot"))]:
            module = types.ModuleType(name)
            module.__path__ = [path]
            sys.modules[name] = module
        if "peft" not in sys.modules:
            peft = types.ModuleType("peft")
            peft.__spec__ = importlib.machinery.ModuleSpec("peft", None)

            def unused(*_a, **_k):
                raise RuntimeError("peft stub: LoRA is not used by the reference")

            peft.LoraConfig = peft.get_peft_model = unused
            sys.modules["peft"] = peft
        from lerobot.policies.groot.action_head import flow_matching_action_head as fm
        from lerobot.policies.groot.eagle2_hg_model import configuration_eagle2_5_vl as ec
        from lerobot.policies.groot.eagle2_hg_model import modeling_eagle2_5_vl as em
    except SystemExit:
        raise
    except Exception as e:  # ImportError, or a broken install
        skip(f"cannot import LeRobot 0.5.1's N1.5 modules ({type(e).__name__}: {e})")
    return fm, ec, em


def eagle_backbone_class(torch):
    class EagleBackbone(torch.nn.Module):
        """groot_n1.py's EagleBackbone once built (that module does not import under transformers
        5.5: its GR00TN15Config dataclass fails): the same attribute names, so the same state-dict
        keys; the language model's layers past select_layer popped; forward_eagle's computation."""

        def __init__(self, eagle, linear, select_layer):
            super().__init__()
            self.eagle_model = eagle
            self.eagle_linear = linear
            while len(eagle.language_model.model.layers) > select_layer:
                eagle.language_model.model.layers.pop(-1)
            self.select_layer = select_layer

        def forward(self, vl_input):
            eagle_input = {k.removeprefix("eagle_"): v for k, v in vl_input.items() if k.startswith("eagle_")}
            del eagle_input["image_sizes"]
            out = self.eagle_model(**eagle_input, output_hidden_states=True, return_dict=True)
            features = self.eagle_linear(out.hidden_states[self.select_layer])
            from transformers.feature_extraction_utils import BatchFeature
            return BatchFeature(data={"backbone_features": features, "backbone_attention_mask": eagle_input["attention_mask"]})

    return EagleBackbone


class Reference:
    """GR00TN15's two halves as GR00TN15 holds them (backbone, action_head), built without the Hub."""

    def __init__(self, config: dict, variant: str):
        import torch
        fm, ec, em = import_reference()
        self.torch = torch
        EagleBackbone = eagle_backbone_class(torch)
        ecfg = ec.Eagle25VLConfig(vision_config=dict(VISION, model_type="siglip_vision_model"), text_config=dict(TEXT),
                                  select_layer=-1, downsample_ratio=0.5, **VARIANTS[variant],
                                  image_token_index=IMAGE_TOKEN, use_backbone_lora=0, use_llm_lora=0,
                                  _attn_implementation="eager")
        # Eagle's constructor would build SigLIP with flash attention (none on the CPU): given
        # the two towers, built from the same configs with eager attention, it builds the rest
        from transformers.models.qwen3.modeling_qwen3 import Qwen3ForCausalLM
        from transformers.models.siglip.modeling_siglip import SiglipVisionModel
        for c in (ecfg.vision_config, ecfg.text_config):
            c._attn_implementation = "eager"
        eagle = em.Eagle25VLForConditionalGeneration(ecfg, vision_model=SiglipVisionModel(ecfg.vision_config),
                                                     language_model=Qwen3ForCausalLM(ecfg.text_config))
        bcfg = config["backbone_cfg"]
        linear = (torch.nn.Linear(TEXT["hidden_size"], bcfg["project_to_dim"])
                  if bcfg["project_to_dim"] is not None else torch.nn.Identity())
        backbone = EagleBackbone(eagle, linear, bcfg["select_layer"])
        head = fm.FlowmatchingActionHead(fm.FlowmatchingActionHeadConfig(**config["action_head_cfg"]))
        self.model = torch.nn.Module()
        self.model.backbone = backbone
        self.model.action_head = head
        self.model.eval()

    def randomise(self, seed: int):
        """Weights that make every path matter: N(0, 1/fan_in) matrices, norms near 1, biases near 0."""
        torch = self.torch
        g = torch.Generator().manual_seed(seed)
        with torch.no_grad():
            for name, p in self.model.named_parameters():
                if p.dim() == 1:
                    base = 1.0 if name.endswith("weight") else 0.0
                    p.copy_(base + 0.2 * torch.randn(p.shape, generator=g))
                elif name.endswith(("embed_tokens.weight", "position_embedding.weight", "future_tokens.weight")):
                    p.copy_(torch.randn(p.shape, generator=g))
                else:
                    fan_in = p.shape[1] if name.endswith(".W") else p[0].numel()
                    p.copy_(torch.randn(p.shape, generator=g) / fan_in ** 0.5)

    def backbone_input(self, t):
        from transformers.feature_extraction_utils import BatchFeature
        return BatchFeature(data={"eagle_input_ids": t["input_ids"], "eagle_attention_mask": t["attention_mask"],
                                  "eagle_pixel_values": t["pixel_values"], "eagle_image_sizes": None})

    def action_input(self, t, with_actions=True):
        from transformers.feature_extraction_utils import BatchFeature
        d = {"state": t["state"], "embodiment_id": t["embodiment_id"]}
        if with_actions:
            d.update(action=t["actions"], action_mask=t["action_mask"])
        return BatchFeature(data=d)

    def outputs(self, t):
        """Backbone features, the training loss on t's noise and time, get_action on t's sample noise."""
        torch = self.torch
        head = self.model.action_head
        out = {}
        with torch.no_grad():
            bb = self.model.backbone(self.backbone_input(t))
            out["backbone_features"] = bb["backbone_features"].clone()
            # forward draws its noise with torch.randn(actions.shape) and then its time: the
            # stored ones are given through the generator's state and sample_time
            real_sample_time = head.sample_time
            head.sample_time = lambda b, device, dtype: t["time"].to(device, dtype)
            torch.manual_seed(t["seed"])
            noise = torch.randn(t["actions"].shape)
            torch.manual_seed(t["seed"])
            loss = head(self.model.backbone(self.backbone_input(t)), self.action_input(t))["loss"]
            head.sample_time = real_sample_time
            out["noise"] = noise
            out["loss"] = loss.reshape(1)
            torch.manual_seed(t["seed"] + 1)
            sample_noise = torch.randn(t["actions"].shape)
            torch.manual_seed(t["seed"] + 1)
            act = head.get_action(self.model.backbone(self.backbone_input(t)), self.action_input(t, False))["action_pred"]
            out["sample_noise"] = sample_noise
            out["sample_actions"] = act
        return out


# --inventory: GR00T-N1.5-3B's real sizes. The action head's configuration is nvidia/GR00T-N1.5-3B's
# config.json (docs/groot.md cites each value); the backbone's is Isaac-GR00T's N1.5-era Eagle 2.5
# config (gr00t/model/backbone/eagle2_hg_model/config.json: SigLIP 224 px / 14 / 1152 x 27, no
# pixel shuffle, one Linear, Qwen3-1.7B's layers, vocabulary 151680, tied embeddings)
N15_VISION = {"hidden_size": 1152, "intermediate_size": 4304, "num_hidden_layers": 27, "num_attention_heads": 16,
              "image_size": 224, "patch_size": 14, "layer_norm_eps": 1e-6, "hidden_act": "gelu_pytorch_tanh"}
N15_TEXT = {"architectures": ["Qwen3ForCausalLM"], "hidden_size": 2048, "intermediate_size": 6144, "num_hidden_layers": 28,
            "num_attention_heads": 16, "num_key_value_heads": 8, "head_dim": 128, "vocab_size": 151680,
            "rope_theta": 1000000.0, "rms_norm_eps": 1e-6, "max_position_embeddings": 40960, "tie_word_embeddings": True,
            "attention_bias": False, "hidden_act": "silu"}
N15_CONFIG = {
    "architectures": ["GR00T_N1_5"], "model_type": "gr00t_n1_5", "action_dim": 32, "action_horizon": 16,
    "compute_dtype": "bfloat16", "hidden_size": 2048, "model_dtype": "float32", "torch_dtype": "bfloat16",
    "backbone_cfg": {"eagle_path": "NVEagle/eagle_er-qwen3_1_7B-Siglip2_400M_stage1_5_128gpu_er_v7_1mlp_nops",
                     "load_bf16": False, "project_to_dim": None, "reproject_vision": False, "select_layer": 12,
                     "tune_llm": False, "tune_visual": True, "use_flash_attention": True},
    "action_head_cfg": {
        "action_dim": 32, "action_horizon": 16, "add_pos_embed": True, "backbone_embedding_dim": 2048, "hidden_size": 1024,
        "input_embedding_dim": 1536, "max_action_dim": 32, "max_num_embodiments": 32, "max_seq_len": 1024,
        "max_state_dim": 64, "model_dtype": "float32", "noise_beta_alpha": 1.5, "noise_beta_beta": 1.0, "noise_s": 0.999,
        "num_inference_timesteps": 4, "num_target_vision_tokens": 32, "num_timestep_buckets": 1000,
        "tune_diffusion_model": True, "tune_projector": True, "use_vlln": True,
        "diffusion_model_cfg": {"attention_head_dim": 48, "cross_attention_dim": 2048, "dropout": 0.2, "final_dropout": True,
                                "interleave_self_attention": True, "norm_type": "ada_norm", "num_attention_heads": 32,
                                "num_layers": 16, "output_dim": 1024, "positional_embeddings": None},
        "vl_self_attention_cfg": {"attention_head_dim": 64, "dropout": 0.2, "final_dropout": True, "num_attention_heads": 32,
                                  "num_layers": 4, "positional_embeddings": None}},
}


def inventory(out_file: str):
    """Every tensor GR00TN15.save_pretrained writes at N1.5-3B's sizes, with its shape (meta device:
    nothing is allocated), and the config.json it writes beside them."""
    import torch
    global VISION, TEXT
    VISION, TEXT = N15_VISION, N15_TEXT
    torch.distributions.Distribution.set_default_validate_args(False)  # the head's Beta: no values to check on meta
    with torch.device("meta"):
        ref = Reference(N15_CONFIG, "n15")
    state = ref.model.state_dict()
    # tied embeddings: save_pretrained writes the embedding once (no lm_head)
    state.pop("backbone.eagle_model.language_model.lm_head.weight", None)
    with open(out_file, "w") as f:
        json.dump({"source": "tests/python/groot_n15_reference.py --inventory (LeRobot 0.5.1's N1.5 modules on the meta device)",
                   "config": N15_CONFIG, "tensors": {k: list(v.shape) for k, v in sorted(state.items())}}, f, indent=1)
        f.write("\n")
    print(f"wrote {out_file}: {len(state)} tensors, {sum(v.numel() for v in state.values())} values")


def full_config() -> dict:
    return {"architectures": ["GR00T_N1_5"], "model_type": "gr00t_n1_5", "action_dim": ACTION_HEAD["action_dim"],
            "action_horizon": ACTION_HEAD["action_horizon"], "backbone_cfg": BACKBONE, "action_head_cfg": ACTION_HEAD,
            "compute_dtype": "float32", "model_dtype": "float32", "hidden_size": TEXT["hidden_size"],
            "torch_dtype": "float32"}


def make_inputs(torch, variant: str) -> dict:
    g = torch.Generator().manual_seed(SEED + 7)
    image_tokens = (VISION["image_size"] // VISION["patch_size"]) ** 2 // (4 if VARIANTS[variant]["use_pixel_shuffle"] else 1)
    ids, prompts = [], []
    for i in range(BATCH):
        prompt = [1] + [int(x) for x in torch.randint(2, IMAGE_TOKEN, (PROMPT - 1,), generator=g)]
        prompts.append(prompt)
        ids.append([IMAGE_TOKEN] * (CAMERAS * image_tokens) + prompt)
    state = torch.zeros(BATCH, 1, ACTION_HEAD["max_state_dim"])
    state[:, 0, :STATE_DIM] = torch.randn(BATCH, STATE_DIM, generator=g)
    actions = torch.zeros(BATCH, ACTION_HEAD["action_horizon"], ACTION_HEAD["action_dim"])
    actions[:, :, :ACTION_DIM] = torch.randn(BATCH, ACTION_HEAD["action_horizon"], ACTION_DIM, generator=g)
    mask = torch.zeros_like(actions)
    mask[:, :, :ACTION_DIM] = 1
    return {
        # images as ember feeds its vision tower: [-1, 1], sample-major, camera order
        "pixel_values": torch.rand(BATCH * CAMERAS, 3, VISION["image_size"], VISION["image_size"], generator=g) * 2 - 1,
        "input_ids": torch.tensor(ids, dtype=torch.long),
        "attention_mask": torch.ones(BATCH, len(ids[0]), dtype=torch.long),
        "state": state,
        "actions": actions,
        "action_mask": mask,
        "embodiment_id": torch.tensor(EMBODIMENTS, dtype=torch.long),
        "time": torch.tensor(TIME),
        "seed": SEED + 11,
        "prompts": prompts,
    }


def write(out_dir: str, variant: str):
    import torch
    from safetensors.torch import save_file
    torch.manual_seed(SEED)
    torch.set_num_threads(1)
    config = full_config()
    ref = Reference(config, variant)
    ref.randomise(SEED)
    os.makedirs(out_dir, exist_ok=True)
    state = {k: v.contiguous() for k, v in ref.model.state_dict().items()}
    save_file(state, os.path.join(out_dir, "model.safetensors"), metadata={"format": "pt"})
    with open(os.path.join(out_dir, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
        f.write("\n")
    with open(os.path.join(out_dir, "ember_shrink.json"), "w") as f:
        json.dump({"vision_heads": VISION["num_attention_heads"], "rope_base": TEXT["rope_theta"]}, f, indent=2)
        f.write("\n")
    t = make_inputs(torch, variant)
    out = ref.outputs(t)
    tensors = {k: v for k, v in t.items() if isinstance(v, torch.Tensor)}
    tensors.update(out)
    tensors = {k: v.contiguous() for k, v in tensors.items()}
    meta = {"variant": variant, "batch": BATCH, "cameras": CAMERAS, "state_dim": STATE_DIM, "action_dim": ACTION_DIM,
            "prompts": t["prompts"], "embodiments": EMBODIMENTS, "image_token": IMAGE_TOKEN,
            "contents": {"pixel_values": "[B * cameras, 3, S, S] in [-1, 1], sample-major",
                         "input_ids": "[B, L]: each sample's image tokens (IMAGE_TOKEN), then its prompt",
                         "state": "[B, 1, max_state_dim], zero past state_dim",
                         "actions": "[B, H, action_dim], zero past the real action_dim", "action_mask": "[B, H, action_dim]",
                         "time": "[B] flow time of the loss", "noise": "[B, H, action_dim] of the loss",
                         "backbone_features": "[B, L, D] EagleBackbone's output", "loss": "[1] FlowmatchingActionHead.forward",
                         "sample_noise": "[B, H, action_dim] get_action's initial noise",
                         "sample_actions": "[B, H, action_dim] get_action's action_pred"}}
    save_file(tensors, os.path.join(out_dir, "reference.safetensors"), metadata={"reference": json.dumps(meta)})
    print(f"wrote {out_dir}: {len(state)} tensors, loss {out['loss'].item():.6f}")


def verify(directory: str, inputs: str, rtol: float) -> int:
    import torch
    from safetensors.torch import load_file
    torch.set_num_threads(1)
    config = json.load(open(os.path.join(directory, "config.json")))
    state = load_file(os.path.join(directory, "model.safetensors"))
    # the connector's first layer says the layout: a LayerNorm (1-D) starts the pixel-shuffle one
    ref = Reference(config, "shuffle" if state["backbone.eagle_model.mlp1.0.weight"].dim() == 1 else "n15")
    missing, unexpected = ref.model.load_state_dict(state, strict=False)
    if missing or unexpected:
        print(f"FAIL: {directory}/model.safetensors: missing {missing}, unexpected {unexpected}")
        return 1
    stored = load_file(inputs)
    t = dict(stored)
    t["seed"] = SEED + 11
    out = ref.outputs(t)
    worst = 0.0
    for k in ("backbone_features", "noise", "loss", "sample_noise", "sample_actions"):
        d = ((out[k].double() - stored[k].double()).abs().max() / stored[k].double().abs().max().clamp_min(1e-12)).item()
        print(f"{k}: max rel diff {d:.3e}")
        worst = max(worst, d)
    print("OK" if worst <= rtol else f"FAIL: beyond {rtol}")
    return 0 if worst <= rtol else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out", nargs="?", help="directory to write")
    ap.add_argument("--verify", metavar="DIR")
    ap.add_argument("--inputs", metavar="FILE", help="reference.safetensors for --verify (default DIR/reference.safetensors)")
    ap.add_argument("--rtol", type=float, default=1e-4)
    ap.add_argument("--inventory", metavar="FILE", help="write N1.5-3B's tensor names and shapes (tests/fixtures/groot_n15_inventory.json)")
    ap.add_argument("--variant", choices=sorted(VARIANTS), default="n15",
                    help="n15: N1.5's Eagle (no pixel shuffle, one Linear; tests/fixtures/groot_n15_tiny); shuffle: the "
                         "pixel shuffle and the two-layer connector (tests/fixtures/groot_n15_shuffle_tiny)")
    a = ap.parse_args()
    if a.inventory:
        import_reference()
        inventory(a.inventory)
        return
    if a.verify:
        sys.exit(verify(a.verify, a.inputs or os.path.join(a.verify, "reference.safetensors"), a.rtol))
    if not a.out:
        ap.error("OUT directory or --verify DIR")
    write(a.out, a.variant)


if __name__ == "__main__":
    main()
