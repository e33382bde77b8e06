#!/usr/bin/env python3
"""LeRobot pi0.5 reference outputs for ember's parity tests (issue 21).

How to run
----------
Needs Python >= 3.12 with LeRobot 0.6.1 and its `pi` extra (transformers 5.x):

    ~/.pyenv/versions/3.12.1/bin/python3 -m venv ~/.cache/ember/venv-lerobot
    ~/.cache/ember/venv-lerobot/bin/pip install "lerobot[pi]==0.6.1"
    ~/.cache/ember/venv-lerobot/bin/python tests/python/lerobot_pi05_reference.py OUT_DIR

No network is needed: the policy is built from a PI05Config whose Gemma / SigLIP configs are
shrunk (see SHRINK below) with random weights from a fixed seed, and the PaliGemma tokenizer
(which LeRobot would download) is replaced by a byte-level stub. fp32 on the CPU, one thread:
running it twice writes byte-identical files.

OUT_DIR then holds
  config.json, model.safetensors         PI05Policy.save_pretrained (LeRobot's names)
  policy_preprocessor.json, policy_postprocessor.json and their *.safetensors state files
                                         (the normalisation statistics), as lerobot-train saves them
  ember_shrink.json                      the shrunken sizes (config.json only names the variants
                                         "gemma_2b" / "gemma_300m"; a loader needs these to build
                                         the same shapes)
  ember_model.safetensors, ember_policy.json
                                         the same weights in ember's parameter names and ember's
                                         shape JSON (the name map of docs/lerobot_pi05.md)
  reference.safetensors                  fixed inputs and LeRobot's outputs on them; tensor names
                                         and meanings are in its metadata: one key "reference",
                                         a JSON object whose "contents" lists them

Other modes:
  --full-size [--device cuda]
                    pi0.5's real shapes (random weights rounded to bf16 values, no download), the
                    outputs in float32 and after LeRobot's bf16 cast, for the GPU parity test
                    (tests/model/lerobot_pi05_gpu_test.cc; bench/lerobot_parity_h200.sh runs both).
  --describe FILE   also write a JSON inventory: every state_dict key with shape and dtype for the
                    shrunken model (fp32 and bf16) and for pi0.5's real shapes (meta device, no
                    3B allocation), config.json, and the processor files.
  --verify DIR      load DIR (e.g. one written by `ember export --to lerobot`) with
                    PI05Policy.from_pretrained under the same shrink, run it on the inputs of
                    DIR/reference.safetensors (or --inputs FILE), and print the largest relative
                    differences to the stored outputs; exit 1 beyond --rtol (default 1e-4).

Exits 0 with a line starting "skipped:" when LeRobot cannot be imported (a CI machine without
Python 3.12), so CI can call it unconditionally.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import sys
from pathlib import Path

SEED = 1234

# The shrunken sizes. LeRobot 0.6.1 hard-codes 8 query heads in its joint layer
# (modeling_pi05.py compute_layer_complete: reshape(batch, -1, 1 * 8 * head_dim)), so heads stay 8;
# kv_heads 1 and head_dim shared by both towers, as in pi0.5. Depth 3 so that ember's
# "last language-model layer has only k, v" path is exercised next to an ordinary layer.
SHRINK = {
    "paligemma": {"width": 64, "depth": 3, "mlp_dim": 128, "num_heads": 8, "num_kv_heads": 1, "head_dim": 16},
    "action_expert": {"width": 48, "depth": 3, "mlp_dim": 96, "num_heads": 8, "num_kv_heads": 1, "head_dim": 16},
    "vision": {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2, "num_attention_heads": 2,
               "patch_size": 8},
    # both the PaliGemma embedding (tied lm_head) and the action expert's unused lm_head
    "vocab_size": 512,
}

# The policy config of the reference model (PI05Config fields).
IMAGE = 32
CAMERAS = ["observation.images.base", "observation.images.wrist"]
STATE_DIM, ACTION_DIM = 6, 6
CONFIG = {
    "image_resolution": (IMAGE, IMAGE),
    "chunk_size": 6,
    "n_action_steps": 6,
    "max_state_dim": 8,
    "max_action_dim": 8,
    "tokenizer_max_length": 12,
    "empty_cameras": 1,
    "num_inference_steps": 10,
    "dtype": "float32",
    "device": "cpu",
}
# --full-size: pi0.5's real shapes (PI05Config's defaults: gemma_2b + gemma_300m, 224 px, 32
# dims, 200 tokens, chunk 50), on the GPU; one prompt full, one short
FULL_CONFIG = dict(CONFIG, image_resolution=(224, 224), chunk_size=50, n_action_steps=50, max_state_dim=32,
                   max_action_dim=32, tokenizer_max_length=200, device="cuda")
FULL_PROMPT_LENS = [200, 57]
BATCH = 2
PROMPT_LENS = [12, 7]  # real tokens per sample (bos included), the rest right padding
TIME = [0.25, 0.8125]
TASKS = ["  pick_up the\ncube ", "open the drawer"]
BOS, PAD = 2, 0


def skip(reason: str) -> None:
    print(f"skipped: {reason}")
    sys.exit(0)


def import_lerobot():
    if sys.version_info < (3, 12):
        skip(f"LeRobot 0.6.1 needs Python >= 3.12, this is {sys.version.split()[0]}")
    try:
        import torch  # noqa: F401
        import lerobot  # noqa: F401
        import transformers  # noqa: F401
        from lerobot.policies.pi05 import modeling_pi05  # noqa: F401
    except Exception as e:  # ImportError, or a broken install
        skip(f"cannot import lerobot's pi05 ({type(e).__name__}: {e})")


# ----------------------------------------------------------------------------------------------
# shrinking


@contextlib.contextmanager
def shrunk(spec: dict):
    """Makes PI05Policy build the shrunken shapes of `spec` while active.

    LeRobot builds its configs in modeling_pi05.PaliGemmaWithExpertModel.__init__ from
    get_gemma_config(variant) and then overwrites some SigLIP fields (intermediate_size 4304,
    projection_dim 2048). We replace get_gemma_config and wrap the two model classes it
    instantiates so that the config is shrunk just before construction.
    """
    from lerobot.policies.pi05 import modeling_pi05 as m

    pg, ex, vis = spec["paligemma"], spec["action_expert"], spec["vision"]
    variants = {"gemma_2b": pg, "gemma_300m": ex}
    real_get = m.get_gemma_config
    real_pali = m.PaliGemmaForConditionalGenerationWithPiGemma
    real_expert = m.PiGemmaForCausalLM

    def get_gemma_config(variant):
        # the default variants: paligemma_variant gemma_2b, action_expert_variant gemma_300m
        return m.GemmaConfig(**variants[variant])

    def pali(config):
        vc = config.vision_config
        for k, v in vis.items():
            setattr(vc, k, v)
        vc.projection_dim = config.text_config.hidden_size
        config.projection_dim = config.text_config.hidden_size
        config.text_config.vocab_size = spec["vocab_size"]
        config.vocab_size = spec["vocab_size"]
        return real_pali(config)

    def expert(config):
        config.vocab_size = spec["vocab_size"]
        return real_expert(config)

    m.get_gemma_config, m.PaliGemmaForConditionalGenerationWithPiGemma, m.PiGemmaForCausalLM = (
        get_gemma_config, pali, expert)
    try:
        yield
    finally:
        m.get_gemma_config, m.PaliGemmaForConditionalGenerationWithPiGemma, m.PiGemmaForCausalLM = (
            real_get, real_pali, real_expert)


class StubTokenizer:
    """Stands in for the PaliGemma tokenizer LeRobot downloads: bos, then one id per UTF-8 byte
    (3 + byte), right-padded with 0. Only the prompt *text* is a reference; its ids are not."""

    def __call__(self, text, max_length, truncation, padding, padding_side, return_tensors):
        import torch

        texts = [text] if isinstance(text, str) else list(text)
        ids = torch.zeros(len(texts), max_length, dtype=torch.long)
        mask = torch.zeros(len(texts), max_length, dtype=torch.long)
        for i, t in enumerate(texts):
            row = ([BOS] + [3 + b for b in t.encode()])[:max_length]
            ids[i, : len(row)] = torch.tensor(row)
            mask[i, : len(row)] = 1
        return {"input_ids": ids, "attention_mask": mask}


@contextlib.contextmanager
def stub_tokenizer():
    from lerobot.processor import tokenizer_processor as tp

    real = tp.AutoTokenizer

    class Auto:
        @staticmethod
        def from_pretrained(name, *a, **k):
            return StubTokenizer()

    tp.AutoTokenizer = Auto
    try:
        yield
    finally:
        tp.AutoTokenizer = real


def features(image: int = IMAGE):
    from lerobot.configs import FeatureType, PolicyFeature

    inputs = {cam: PolicyFeature(type=FeatureType.VISUAL, shape=(3, image, image)) for cam in CAMERAS}
    inputs["observation.state"] = PolicyFeature(type=FeatureType.STATE, shape=(STATE_DIM,))
    outputs = {"action": PolicyFeature(type=FeatureType.ACTION, shape=(ACTION_DIM,))}
    return inputs, outputs


def make_config(cfg: dict = CONFIG, **over):
    from lerobot.policies.pi05.configuration_pi05 import PI05Config

    inputs, outputs = features(cfg["image_resolution"][0])
    kw = dict(cfg)
    kw.update(over)
    return PI05Config(input_features=inputs, output_features=outputs, **kw)


def build_policy(spec=SHRINK, cfg: dict = CONFIG, bf16_values: bool = False, **over):
    """PI05Policy with random weights: shrunk to `spec`, or pi0.5's real shapes when spec is None.
    bf16_values: every weight rounded to a bf16 value, so that the fp32 model and its bf16 cast
    (LeRobot's dtype=bfloat16) hold the same weights and a bf16 save loses nothing."""
    import torch
    from lerobot.policies.pi05.modeling_pi05 import PI05Policy

    torch.manual_seed(SEED)
    with shrunk(spec) if spec is not None else contextlib.nullcontext():
        policy = PI05Policy(make_config(cfg, **over))
    # LeRobot initialises the adaRMS modulations' weights to zero (pi_gemma.py PiGemmaRMSNorm),
    # which would hide the conditioning path from a parity test, and the Gemma RMSNorm weights
    # to 0 (scale 1 + 0), which would hide a wrong 1 + w convention.
    # Give every parameter a random value instead (same seed, deterministic order), drawn where
    # the policy lives (pi0.5's 3.6e9 values on the GPU).
    device = next(policy.parameters()).device
    gen = torch.Generator(device).manual_seed(SEED + 1)
    with torch.no_grad():
        for name, p in policy.named_parameters():
            r = torch.randn(p.shape, generator=gen, device=device)
            r = r / p[0].numel() ** 0.5 if p.dim() >= 2 else r * 0.1
            p.copy_(r.bfloat16() if bf16_values else r)
    policy.eval()
    return policy


# ----------------------------------------------------------------------------------------------
# inputs


def make_inputs(vocab: int, cfg: dict = CONFIG, prompt_lens=PROMPT_LENS):
    import torch

    g = torch.Generator().manual_seed(SEED + 2)
    h, a = cfg["chunk_size"], cfg["max_action_dim"]
    lt = cfg["tokenizer_max_length"]
    image = cfg["image_resolution"][0]
    x = {}
    for cam in CAMERAS:
        x[f"images.{cam}"] = torch.rand(BATCH, 3, image, image, generator=g)
    tokens = torch.full((BATCH, lt), PAD, dtype=torch.long)
    mask = torch.zeros(BATCH, lt, dtype=torch.bool)
    for i, n in enumerate(prompt_lens):
        tokens[i, 0] = BOS
        tokens[i, 1:n] = torch.randint(3, vocab, (n - 1,), generator=g)
        mask[i, :n] = True
    x["tokens"] = tokens
    x["token_mask"] = mask
    x["actions"] = torch.randn(BATCH, h, ACTION_DIM, generator=g)
    x["noise"] = torch.randn(BATCH, h, a, generator=g)
    x["time"] = torch.tensor(TIME, dtype=torch.float32)
    x["sample_noise"] = torch.randn(BATCH, h, a, generator=g)
    # for the processor: raw state / action with statistics; the second sample's state has
    # values outside [q01, q99] (normalised beyond [-1, 1]: LeRobot's bins -1 and 255)
    # (inside [q01, q99] = [-1, 1] or wider, see dataset_stats), except: sample 1's first two
    # values beyond the quantiles; the last dimension is constant in the statistics (q01 = q99 =
    # 0.5), sample 0 sits on it (normalised to -1: bin 0) and sample 1 does not (LeRobot: bin -1)
    x["processor.raw_state"] = torch.rand(BATCH, STATE_DIM, generator=g) * 1.6 - 0.8
    x["processor.raw_state"][1, 0] = -5.0
    x["processor.raw_state"][1, 1] = 5.0
    x["processor.raw_state"][0, -1] = 0.5
    x["processor.raw_action"] = torch.randn(BATCH, h, ACTION_DIM, generator=g) * 2
    # resize_with_pad: a non-square [0, 1] image (LeRobot resizes it to the policy's square
    # resolution keeping the aspect ratio, padding with black, before scaling to [-1, 1])
    x["resize.input"] = torch.rand(1, 3, 24, 40, generator=g)
    return x


def dataset_stats():
    import torch

    g = torch.Generator().manual_seed(SEED + 3)
    stats = {}
    for key, dim in (("observation.state", STATE_DIM), ("action", ACTION_DIM)):
        q01 = -1.0 - torch.rand(dim, generator=g)
        q99 = 1.0 + torch.rand(dim, generator=g)
        q01[-1] = q99[-1] = 0.5  # a constant dimension: LeRobot replaces the zero range by eps
        stats[key] = {
            "mean": torch.randn(dim, generator=g) * 0.1, "std": 1.0 + torch.rand(dim, generator=g),
            "min": q01 - 0.5, "max": q99 + 0.5,
            "q01": q01, "q99": q99,
            "q10": q01 * 0.8, "q90": q99 * 0.8,
        }
    for cam in CAMERAS:  # images are IDENTITY in pi05's normalization_mapping
        stats[cam] = {k: torch.full((3, 1, 1), v) for k, v in
                      (("mean", 0.5), ("std", 0.25), ("min", 0.0), ("max", 1.0))}
    return stats


def lerobot_batch(x):
    batch = {cam: x[f"images.{cam}"] for cam in CAMERAS}
    batch["observation.language.tokens"] = x["tokens"]
    batch["observation.language.attention_mask"] = x["token_mask"]
    batch["action"] = x["actions"]
    return batch


# ----------------------------------------------------------------------------------------------
# LeRobot's outputs


def model_outputs(policy, x):
    """The loss (per element, per sample, reduced), the training forward's velocity and
    sample_actions' output, all from LeRobot's own code paths on the inputs x."""
    import torch

    out = {}
    batch = lerobot_batch(x)
    model = policy.model
    # PI05Policy.forward draws noise and time; hand it ours instead
    model.sample_noise = lambda shape, device: x["noise"].clone()
    model.sample_time = lambda bsize, device: x["time"].clone()

    captured = []
    hook = model.action_out_proj.register_forward_hook(lambda mod, inp, o: captured.append(o.detach().clone()))
    with torch.no_grad():
        loss, _ = policy.forward(batch)
        per_sample, _ = policy.forward(batch, reduction="none")
        images, img_masks = policy._preprocess_images(batch)
        actions = policy.prepare_action(batch)
        per_element = model.forward(images, img_masks, x["tokens"], x["token_mask"], actions, x["noise"], x["time"])
    hook.remove()
    out["loss"] = loss.detach().reshape(())
    out["loss.per_sample"] = per_sample.detach()
    out["loss.per_element"] = per_element.detach()
    out["velocity"] = captured[-1]
    out["model.images"] = torch.stack(images)  # [slots, B, 3, S, S] in [-1, 1]; empty camera -1
    out["model.image_masks"] = torch.stack(img_masks)  # [slots, B]
    out["model.actions"] = actions
    with torch.no_grad():
        out["sample_actions"] = model.sample_actions(images, img_masks, x["tokens"], x["token_mask"],
                                                     noise=x["sample_noise"].clone())
        # consistency of LeRobot's two paths: one Euler step from t = 1 (KV-cached prefix, then
        # the expert alone) against the joint training forward at t = 1 (x_t = noise)
        one = model.sample_actions(images, img_masks, x["tokens"], x["token_mask"],
                                   noise=x["sample_noise"].clone(), num_steps=1)
        v_cached = x["sample_noise"] - one
        captured.clear()
        hook = model.action_out_proj.register_forward_hook(lambda mod, inp, o: captured.append(o.detach().clone()))
        model.forward(images, img_masks, x["tokens"], x["token_mask"], actions, x["sample_noise"],
                      torch.ones_like(x["time"]))
        hook.remove()
    out["check.velocity_t1_cached"] = v_cached
    out["check.velocity_t1_joint"] = captured[-1]
    return out


def processor_outputs(policy, x, out_dir: Path | None):
    import torch
    from lerobot.policies.pi05.processor_pi05 import make_pi05_pre_post_processors

    out, prompts = {}, []
    stats = dataset_stats()
    with stub_tokenizer():
        pre, post = make_pi05_pre_post_processors(policy.config, dataset_stats=stats)
    raw = {"observation.state": x["processor.raw_state"], "action": x["processor.raw_action"],
           "task": list(TASKS)}
    for cam in CAMERAS:
        raw[cam] = x[f"images.{cam}"]
    from lerobot.policies.pi05.processor_pi05 import Pi05PrepareStateTokenizerProcessorStep
    from lerobot.lerobot_types import TransitionKey

    transition = pre.to_transition(raw)
    for step in pre.steps:
        transition = step(transition)
        if isinstance(step, Pi05PrepareStateTokenizerProcessorStep):
            prompts = list(transition[TransitionKey.COMPLEMENTARY_DATA]["task"])
            out["processor.state"] = transition[TransitionKey.OBSERVATION]["observation.state"].clone()
            out["processor.action"] = transition[TransitionKey.ACTION].clone()
    # the postprocessor on the sampled actions (cut to the dataset's action dim)
    sampled = x["_sample_actions"][:, :, :ACTION_DIM].clone()
    out["processor.unnormalized_sample_actions"] = post(sampled)
    out["resize.output"] = resize_with_pad(x["resize.input"])
    if out_dir is not None:
        pre.save_pretrained(out_dir)
        post.save_pretrained(out_dir)
    return out, prompts


def resize_with_pad(img):
    """LeRobot's image path for a camera not at the policy's resolution: PI05Policy
    ._preprocess_images (BHWC, resize_with_pad_torch, then * 2 - 1)."""
    from lerobot.policies.common.vla_utils import resize_with_pad_torch

    hwc = img.permute(0, 2, 3, 1)
    return (resize_with_pad_torch(hwc, IMAGE, IMAGE) * 2.0 - 1.0).permute(0, 3, 1, 2).contiguous()


CONTENTS = {
    "images.<camera>": "[B,3,S,S] float32 in [0,1]: the batch's camera images (LeRobot's dataset range)",
    "tokens": "[B,L] int64 prompt token ids (bos=2 first, right padding 0); L = tokenizer_max_length",
    "token_mask": "[B,L] bool, true for real tokens",
    "actions": "[B,H,action_dim] normalised action chunk",
    "noise": "[B,H,max_action_dim] flow noise of the loss",
    "time": "[B] flow time of the loss",
    "sample_noise": "[B,H,max_action_dim] initial noise of sample_actions (t = 1)",
    "model.images": "[slots,B,3,S,S] what PI05Pytorch sees: cameras in config order *2-1, then empty cameras (-1)",
    "model.image_masks": "[slots,B] bool: false for empty cameras",
    "model.actions": "[B,H,max_action_dim] actions zero-padded",
    "loss.per_element": "[B,H,max_action_dim] PI05Pytorch.forward: (noise - actions - v)^2, before any reduction",
    "loss.per_sample": "[B] PI05Policy.forward(reduction='none'): mean over H and the first action_dim dims",
    "loss": "[] PI05Policy.forward: mean of loss.per_element[:, :, :action_dim]",
    "velocity": "[B,H,max_action_dim] v_t of the training forward (action_out_proj output)",
    "sample_actions": "[B,H,max_action_dim] PI05Pytorch.sample_actions(noise=sample_noise), num_inference_steps Euler steps",
    "check.velocity_t1_cached": "[B,H,max_action_dim] velocity of one Euler step from t=1 via LeRobot's KV-cache path",
    "check.velocity_t1_joint": "[B,H,max_action_dim] velocity of the joint training forward at t=1 on sample_noise",
    "processor.raw_state": "[B,state_dim] raw state",
    "processor.raw_action": "[B,H,action_dim] raw action chunk",
    "processor.state": "[B,state_dim] the preprocessor's normalised state (QUANTILES)",
    "processor.action": "[B,H,action_dim] the preprocessor's normalised action (QUANTILES)",
    "processor.unnormalized_sample_actions": "[B,H,action_dim] the postprocessor on sample_actions[..., :action_dim]",
    "resize.input": "[1,3,24,40] float32 in [0,1], a non-square camera image",
    "resize.output": "[1,3,S,S] LeRobot's resize_with_pad then *2-1 of resize.input",
}


def versions():
    import lerobot
    import safetensors
    import torch
    import transformers

    return {"lerobot": lerobot.__version__, "torch": torch.__version__.split("+")[0],
            "transformers": transformers.__version__, "safetensors": safetensors.__version__,
            "python": sys.version.split()[0]}


def reference_meta(contents: dict, spec, cfg: dict, **more) -> dict:
    """reference.safetensors' metadata: what it holds and how it was made."""
    return {"contents": contents, "versions": versions(), "shrink": spec,
            "config": {k: list(v) if isinstance(v, tuple) else v for k, v in cfg.items()},
            "cameras": CAMERAS, "seed": SEED, **more}


def build(out_dir: Path) -> dict:
    import torch
    from safetensors.torch import save_file

    out_dir.mkdir(parents=True, exist_ok=True)
    policy = build_policy()
    policy.save_pretrained(out_dir)
    (out_dir / "ember_shrink.json").write_text(json.dumps(SHRINK, indent=2, sort_keys=True) + "\n")
    x = make_inputs(SHRINK["vocab_size"])
    outs = model_outputs(policy, x)
    x["_sample_actions"] = outs["sample_actions"]
    pouts, prompts = processor_outputs(policy, x, out_dir)
    del x["_sample_actions"]
    tensors = {**x, **outs, **pouts}
    tensors = {k: v.detach().contiguous() for k, v in tensors.items()}
    check = (tensors["check.velocity_t1_cached"] - tensors["check.velocity_t1_joint"]).abs().max().item()
    meta = reference_meta(CONTENTS, SHRINK, CONFIG, tasks=TASKS, prompts=prompts,
                          **{"check.velocity_t1_max_abs_diff": check})
    # one metadata key: safetensors writes its metadata map in hash order, so several keys
    # would make the file's bytes differ from run to run
    save_file(tensors, str(out_dir / "reference.safetensors"),
              metadata={"reference": json.dumps(meta, sort_keys=True)})
    # the same weights in ember's names, so that a parity test can load them with ember's own
    # loader before the LeRobot importer exists
    ember, skipped = ember_state_dict(policy.state_dict(), SHRINK["paligemma"]["depth"],
                                      SHRINK["vision"]["num_hidden_layers"])
    save_file({k: v.contiguous() for k, v in ember.items()}, str(out_dir / "ember_model.safetensors"),
              metadata={"skipped": json.dumps(skipped)})
    (out_dir / "ember_policy.json").write_text(json.dumps(ember_shape_json(SHRINK), indent=2) + "\n")
    return {"tensors": tensors, "prompts": prompts, "check": check}


# ----------------------------------------------------------------------------------------------
# --full-size


MODEL_OUTPUTS = ("loss", "loss.per_sample", "loss.per_element", "velocity", "sample_actions",
                 "check.velocity_t1_cached", "check.velocity_t1_joint")


def max_rel(a, b) -> float:
    a, b = a.double(), b.double()
    return ((a - b).abs().max() / b.abs().max().clamp_min(1e-12)).item()


def full_size(out_dir: Path, device: str = "cuda", spec: dict | None = None) -> dict:
    """pi0.5 at its real shapes (or at `spec`, for a quick check on the CPU) with random weights
    rounded to bf16 values: LeRobot's outputs in float32 (TF32 off) and again after LeRobot's own
    bf16 cast (PaliGemmaWithExpertModel.to_bfloat16_for_selected_params, what dtype=bfloat16
    does), written as a LeRobot policy directory with reference.safetensors ("bf16." prefixes the
    bf16 outputs). The bf16 model is what is saved: its values are the fp32 model's."""
    import torch
    from lerobot.policies.pi05.processor_pi05 import make_pi05_pre_post_processors
    from safetensors.torch import save_file

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    out_dir.mkdir(parents=True, exist_ok=True)
    cfg = dict(FULL_CONFIG, device=device)
    if spec is not None:
        cfg.update(CONFIG, device=device)
    policy = build_policy(spec, cfg, bf16_values=True)
    vocab = policy.model.paligemma_with_expert.paligemma.model.language_model.embed_tokens.weight.shape[0]
    x = make_inputs(vocab, cfg, FULL_PROMPT_LENS if spec is None else PROMPT_LENS)
    on = {k: v.to(device) for k, v in x.items()}
    fp32 = model_outputs(policy, on)
    policy.model.paligemma_with_expert.to_bfloat16_for_selected_params("bfloat16")
    bf16 = {k: v for k, v in model_outputs(policy, on).items() if k in MODEL_OUTPUTS}
    policy.save_pretrained(out_dir)
    with stub_tokenizer():
        pre, post = make_pi05_pre_post_processors(policy.config, dataset_stats=dataset_stats())
    pre.save_pretrained(out_dir)
    post.save_pretrained(out_dir)
    if spec is not None:
        (out_dir / "ember_shrink.json").write_text(json.dumps(spec, indent=2, sort_keys=True) + "\n")
    tensors = {**x, **fp32, **{"bf16." + k: v for k, v in bf16.items()}}
    tensors = {k: v.detach().cpu().contiguous() for k, v in tensors.items()}
    bf16_vs_fp32 = {k: max_rel(bf16[k], fp32[k]) for k in MODEL_OUTPUTS}
    contents = {k: v for k, v in CONTENTS.items() if not k.startswith(("processor.", "resize."))}
    contents["bf16.<output>"] = "the same output after LeRobot's bf16 cast of the model"
    meta = reference_meta(contents, spec, cfg, lerobot_bf16_vs_fp32=bf16_vs_fp32,
                          device=torch.cuda.get_device_name() if device.startswith("cuda") else device)
    save_file(tensors, str(out_dir / "reference.safetensors"), metadata={"reference": json.dumps(meta, sort_keys=True)})
    return {"fp32": fp32, "bf16_vs_fp32": bf16_vs_fp32}


# ----------------------------------------------------------------------------------------------
# LeRobot names -> ember names (docs/lerobot_pi05.md, "Name map")

PG = "model.paligemma_with_expert.paligemma."
VT = PG + "model.vision_tower.vision_model."
LM = PG + "model.language_model."
EX = "model.paligemma_with_expert.gemma_expert."


def ember_state_dict(sd: dict, lm_layers: int, vision_layers: int):
    """Converts a LeRobot PI05Policy state dict (keys with the "model." prefix) to ember's
    parameter names (src/ember/model: pi05.cc, layers.cc, vision.cc). Returns (ember tensors,
    skipped LeRobot keys). Transforms: vision q/k/v fused into qkv (concatenated on dim 0 in
    that order), Gemma RMSNorm scales w -> 1 + w (ember's RmsNorm multiplies by its weight,
    Gemma's by 1 + weight); the language model's last layer keeps only k, v and its input norm.
    """
    import torch

    out, used = {}, set()

    def take(key):
        used.add(key)
        return sd[key]

    emb = LM + "embed_tokens.weight"
    out["embedding"] = take(emb) if emb in sd else take(PG + "lm_head.weight")
    out["vision.patch_weight"] = take(VT + "embeddings.patch_embedding.weight")
    out["vision.patch_bias"] = take(VT + "embeddings.patch_embedding.bias")
    out["vision.position_embed"] = take(VT + "embeddings.position_embedding.weight")
    for i in range(vision_layers):
        src, dst = f"{VT}encoder.layers.{i}.", f"vision.blocks.{i}."
        for part in ("weight", "bias"):
            out[dst + "qkv." + part] = torch.cat([take(f"{src}self_attn.{x}_proj.{part}") for x in "qkv"], 0)
            out[dst + "proj." + part] = take(f"{src}self_attn.out_proj.{part}")
            out[dst + "norm1." + part] = take(f"{src}layer_norm1.{part}")
            out[dst + "norm2." + part] = take(f"{src}layer_norm2.{part}")
            out[dst + "fc1." + part] = take(f"{src}mlp.fc1.{part}")
            out[dst + "fc2." + part] = take(f"{src}mlp.fc2.{part}")
    out["vision.final_norm.weight"] = take(VT + "post_layernorm.weight")
    out["vision.final_norm.bias"] = take(VT + "post_layernorm.bias")
    out["projector.weight"] = take(PG + "model.multi_modal_projector.linear.weight")
    out["projector.bias"] = take(PG + "model.multi_modal_projector.linear.bias")
    for i in range(lm_layers):
        src, dst = f"{LM}layers.{i}.", f"lm.{i}."
        last = i + 1 == lm_layers
        out[dst + "k.weight"] = take(src + "self_attn.k_proj.weight")
        out[dst + "v.weight"] = take(src + "self_attn.v_proj.weight")
        out[dst + "norm1.weight"] = 1.0 + take(src + "input_layernorm.weight").float()
        if not last:
            out[dst + "q.weight"] = take(src + "self_attn.q_proj.weight")
            out[dst + "o.weight"] = take(src + "self_attn.o_proj.weight")
            out[dst + "norm2.weight"] = 1.0 + take(src + "post_attention_layernorm.weight").float()
            for x in ("gate", "up", "down"):
                out[f"{dst}mlp.{x}.weight"] = take(f"{src}mlp.{x}_proj.weight")
        src, dst = f"{EX}model.layers.{i}.", f"expert.{i}."
        for x in "qkvo":
            out[f"{dst}{x}.weight"] = take(f"{src}self_attn.{x}_proj.weight")
        for part in ("weight", "bias"):
            out[f"{dst}ada1.modulation.{part}"] = take(f"{src}input_layernorm.dense.{part}")
            out[f"{dst}ada2.modulation.{part}"] = take(f"{src}post_attention_layernorm.dense.{part}")
        for x in ("gate", "up", "down"):
            out[f"{dst}mlp.{x}.weight"] = take(f"{src}mlp.{x}_proj.weight")
    for part in ("weight", "bias"):
        out["expert_final_norm.modulation." + part] = take(f"{EX}model.norm.dense.{part}")
        out["action_in." + part] = take("model.action_in_proj." + part)
        out["action_out." + part] = take("model.action_out_proj." + part)
        out["time_in." + part] = take("model.time_mlp_in." + part)
        out["time_out." + part] = take("model.time_mlp_out." + part)
    skipped = sorted(k for k in sd if k not in used)
    return out, skipped


def ember_shape_json(spec: dict) -> dict:
    """ember's policy.json (train/policy_checkpoint.cc shape_to_json) for the reference model."""
    def tower(t):
        return {"width": t["width"], "layers": t["depth"], "heads": t["num_heads"], "kv_heads": t["num_kv_heads"],
                "head_dim": t["head_dim"], "mlp": t["mlp_dim"]}
    v = spec["vision"]
    return {"type": "pi05", "preset": "lerobot-reference",
            "vision": {"image_size": IMAGE, "patch": v["patch_size"], "width": v["hidden_size"],
                       "layers": v["num_hidden_layers"], "heads": v["num_attention_heads"], "mlp": v["intermediate_size"]},
            "lm": tower(spec["paligemma"]), "expert": tower(spec["action_expert"]), "vocab": spec["vocab_size"],
            "horizon": CONFIG["chunk_size"], "max_action_dim": CONFIG["max_action_dim"],
            "max_cameras": len(CAMERAS) + CONFIG["empty_cameras"], "max_prompt": CONFIG["tokenizer_max_length"],
            "flow_steps": CONFIG["num_inference_steps"]}


# ----------------------------------------------------------------------------------------------
# --describe


def describe(path: Path, out_dir: Path) -> None:
    import torch
    from lerobot.policies.pi05.modeling_pi05 import PI05Pytorch
    from safetensors import safe_open

    inv = {}
    with safe_open(str(out_dir / "model.safetensors"), "pt") as f:
        inv["small_saved"] = {k: [list(f.get_slice(k).get_shape()), f.get_slice(k).get_dtype()] for k in f.keys()}
        inv["small_saved_metadata"] = f.metadata()
    policy_bf16 = build_policy(dtype="bfloat16")
    inv["small_bf16_state_dict"] = {k: [list(v.shape), str(v.dtype).replace("torch.", "")]
                                    for k, v in policy_bf16.state_dict().items()}
    tied = policy_bf16.model.paligemma_with_expert.paligemma
    inv["small_lm_head_tied_to_embed_tokens"] = (
        tied.lm_head.weight.data_ptr() == tied.model.language_model.embed_tokens.weight.data_ptr())
    # pi0.5's real shapes: the default PI05Config (gemma_2b + gemma_300m, 224 px, 32 dims)
    inputs, outputs = features()
    from lerobot.policies.pi05.configuration_pi05 import PI05Config

    real_cfg = PI05Config(input_features=inputs, output_features=outputs, device="cpu")
    with torch.device("meta"):
        real = PI05Pytorch(real_cfg)
    inv["real_state_dict"] = {"model." + k: [list(v.shape), str(v.dtype).replace("torch.", "")]
                              for k, v in real.state_dict().items()}
    inv["real_parameters"] = sum(p.numel() for p in real.parameters())
    real_sd = {"model." + k: v for k, v in real.state_dict().items()}
    ember, skipped = ember_state_dict(real_sd, 18, 27)
    inv["real_ember"] = {k: list(v.shape) for k, v in ember.items()}
    inv["real_ember_parameters"] = sum(v.numel() for v in ember.values())
    inv["real_skipped"] = {k: list(real_sd[k].shape) for k in skipped}
    small_sd = build_policy().state_dict()
    ember, skipped = ember_state_dict(small_sd, SHRINK["paligemma"]["depth"], SHRINK["vision"]["num_hidden_layers"])
    inv["small_ember"] = {k: list(v.shape) for k, v in ember.items()}
    inv["small_skipped"] = skipped
    inv["real_parameters_by_part"] = {}
    for k, v in real.named_parameters():
        part = ".".join(k.split(".")[:3]) if k.startswith("paligemma_with_expert") else k.split(".")[0]
        inv["real_parameters_by_part"][part] = inv["real_parameters_by_part"].get(part, 0) + v.numel()
    inv["config.json"] = json.loads((out_dir / "config.json").read_text())
    files = {}
    for p in sorted(out_dir.iterdir()):
        if p.suffix == ".json":
            files[p.name] = json.loads(p.read_text())
        elif p.name.startswith("policy_") and p.suffix == ".safetensors":
            with safe_open(str(p), "pt") as f:
                files[p.name] = {k: f.get_tensor(k).tolist() for k in f.keys()}
    inv["files"] = files
    inv["sha256"] = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(out_dir.iterdir())}
    path.write_text(json.dumps(inv, indent=1, sort_keys=True) + "\n")


# ----------------------------------------------------------------------------------------------
# --verify


def verify(dir_: Path, inputs: Path, rtol: float) -> int:
    import torch
    from lerobot.policies.pi05.modeling_pi05 import PI05Policy
    from safetensors.torch import load_file

    spec = json.loads((dir_ / "ember_shrink.json").read_text()) if (dir_ / "ember_shrink.json").exists() else SHRINK
    ref = load_file(str(inputs))
    with shrunk(spec):
        policy = PI05Policy.from_pretrained(str(dir_))
    policy.eval()
    x = {k: v for k, v in ref.items()}
    outs = model_outputs(policy, x)
    worst = 0.0
    for name in ("loss", "loss.per_sample", "loss.per_element", "velocity", "sample_actions"):
        a, b = outs[name].double(), ref[name].double()
        rel = ((a - b).abs().max() / b.abs().max().clamp_min(1e-12)).item()
        worst = max(worst, rel)
        print(f"{name:20s} max |diff| / max |ref| = {rel:.3e}")
    ok = worst <= rtol
    print(("passed" if ok else "FAILED") + f": worst {worst:.3e}, rtol {rtol:g}")
    return 0 if ok else 1


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out_dir", nargs="?", type=Path, help="where to write the policy and reference.safetensors")
    ap.add_argument("--describe", type=Path, help="also write a JSON inventory of keys, shapes and files")
    ap.add_argument("--verify", type=Path, help="a LeRobot policy directory to check against the reference")
    ap.add_argument("--inputs", type=Path, help="with --verify: the reference file (default DIR/reference.safetensors)")
    ap.add_argument("--rtol", type=float, default=1e-4)
    ap.add_argument("--full-size", action="store_true",
                    help="pi0.5's real shapes on --device, fp32 and bf16 outputs (see full_size)")
    ap.add_argument("--device", default="cuda", help="with --full-size (default cuda)")
    args = ap.parse_args()
    import_lerobot()
    import torch

    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if args.verify:
        return verify(args.verify, args.inputs or args.verify / "reference.safetensors", args.rtol)
    if args.out_dir is None:
        ap.error("out_dir is required")
    if args.full_size:
        torch.set_num_threads(os.cpu_count() or 1)
        torch.use_deterministic_algorithms(False)
        res = full_size(args.out_dir, args.device)
        print(f"wrote {args.out_dir}: loss {res['fp32']['loss'].item():.6f} (float32)")
        for k, v in res["bf16_vs_fp32"].items():
            print(f"LeRobot bf16 against float32: {k:26s} max |diff| / max |ref| = {v:.3e}")
        return 0
    res = build(args.out_dir)
    t = res["tensors"]
    print(f"wrote {args.out_dir}: loss {t['loss'].item():.6f}, {len(t)} tensors in reference.safetensors")
    print(f"prompts: {json.dumps(res['prompts'])}")
    print(f"check: LeRobot's cached vs joint velocity at t=1, max |diff| {res['check']:.3e}")
    if args.describe:
        describe(args.describe, args.out_dir)
        print(f"wrote {args.describe}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
