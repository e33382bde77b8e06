#!/usr/bin/env python3
"""A line-by-line Python transliteration of ember's pi05 computation (src/ember/model/pi05.cc,
layers.cc, vision.cc, attention.cc: the reference, non-CUDA paths, varlen layout, fp32), run on
the ember-named weights that lerobot_pi05_reference.py writes (ember_model.safetensors,
ember_policy.json) and compared with LeRobot's outputs in reference.safetensors.

It checks the name map and the claim of docs/lerobot_pi05.md that, on the model itself, ember
and LeRobot 0.6.1 compute the same function: it is no substitute for the C++ parity test (it
goes stale when the C++ changes), only the evidence until that test exists.

    ~/.cache/ember/venv-lerobot/bin/python tests/python/lerobot_pi05_reference.py /tmp/ref
    ~/.cache/ember/venv-lerobot/bin/python tests/python/ember_pi05_port_check.py /tmp/ref

Prints the largest relative differences (about 2e-7 with LeRobot 0.6.1, torch 2.11).
"""
import json, math, sys, torch
import torch.nn.functional as F
from safetensors.torch import load_file
d = sys.argv[1]
W = load_file(f"{d}/ember_model.safetensors"); R = load_file(f"{d}/reference.safetensors")
S = json.load(open(f"{d}/ember_policy.json"))
lin = lambda x, n, bias=True: F.linear(x, W[n + ".weight"], W.get(n + ".bias") if bias else None)
def vision(img):  # [n,3,S,S]
    v = S["vision"]; p = v["patch"]; n = img.shape[0]; g = img.shape[2] // p; w = v["width"]; h = v["heads"]
    rows = img.reshape(n, 3, g, p, g, p).permute(0, 2, 4, 1, 3, 5).reshape(n * g * g, -1)
    x = F.linear(rows, W["vision.patch_weight"].view(w, -1), W["vision.patch_bias"]).view(n, g * g, w) + W["vision.position_embed"]
    for b in range(v["layers"]):
        pre = f"vision.blocks.{b}."
        ln = lambda t, k: F.layer_norm(t, (w,), W[pre + k + ".weight"], W[pre + k + ".bias"], 1e-6)
        q, k_, v_ = lin(ln(x, "norm1"), pre + "qkv").view(n, g * g, 3, h, w // h).unbind(2)
        a = F.scaled_dot_product_attention(q.transpose(1, 2), k_.transpose(1, 2), v_.transpose(1, 2)).transpose(1, 2).reshape(n, g * g, w)
        x = x + lin(a, pre + "proj")
        x = x + lin(F.gelu(lin(ln(x, "norm2"), pre + "fc1"), approximate="tanh"), pre + "fc2")
    return F.layer_norm(x, (w,), W["vision.final_norm.weight"], W["vision.final_norm.bias"], 1e-6)
def rms(x, w=None): return F.rms_norm(x, (x.shape[-1],), w, 1e-6)
def rope(pos, hd):
    inv = torch.pow(10000.0, torch.arange(0, hd, 2, dtype=torch.float) / hd).reciprocal()
    a = pos.float()[:, None] * inv[None]
    return torch.cat([a.cos(), a.cos()], -1)[:, None], torch.cat([-a.sin(), a.sin()], -1)[:, None]
def rot(x, cs): c, s = cs; return x * c + x.roll(x.shape[-1] // 2, -1) * s
def ada(x, cond, n):
    m = lin(cond, n + ".modulation").unsqueeze(1); sc, sh, g = m.chunk(3, -1)
    return rms(x) * (1 + sc) + sh, g
def time_emb(t, w):
    frac = torch.linspace(0, 1, w // 2, dtype=torch.double); per = 4e-3 * (4.0 / 4e-3) ** frac
    a = t.double()[:, None] * (2 * math.pi / per)[None]
    return torch.cat([a.sin(), a.cos()], 1).float()
lm, ex = S["lm"], S["expert"]; L = lm["layers"]; H, hd, kvh = lm["heads"], lm["head_dim"], lm["kv_heads"]
def prefix_of(i):  # one sample: present cameras' tokens then its real prompt tokens
    imgs = R["model.images"][:, i]; m = R["model.image_masks"][:, i]
    toks = [lin(vision(imgs[c:c + 1]), "projector")[0] for c in range(imgs.shape[0]) if m[c]]
    ids = R["tokens"][i][R["token_mask"][i]]
    toks.append(F.embedding(ids, W["embedding"]) * math.sqrt(lm["width"]))
    return torch.cat(toks, 0)
def velocity(x_t, t):
    out = []
    for i in range(x_t.shape[0]):
        xp = prefix_of(i); tp = xp.shape[0]; xs = lin(x_t[i:i + 1], "action_in"); h = xs.shape[1]
        cond = F.silu(lin(F.silu(lin(time_emb(t[i:i + 1], ex["width"]), "time_in")), "time_out"))
        rp, rs = rope(torch.arange(tp), hd), rope(tp + torch.arange(h), hd)
        for l in range(L):
            P, E = f"lm.{l}.", f"expert.{l}."
            y = rms(xp, W[P + "norm1.weight"])
            kp = rot(lin(y, P + "k", False).view(tp, kvh, hd), rp); vp = lin(y, P + "v", False).view(tp, kvh, hd)
            a1, g1 = ada(xs, cond, E + "ada1"); ys = a1.reshape(h, -1)
            qs = rot(lin(ys, E + "q", False).view(h, H, hd), rs); ks = rot(lin(ys, E + "k", False).view(h, kvh, hd), rs); vs = lin(ys, E + "v", False).view(h, kvh, hd)
            K = torch.cat([kp, ks]).repeat_interleave(H // kvh, 1).transpose(0, 1)[None]; V = torch.cat([vp, vs]).repeat_interleave(H // kvh, 1).transpose(0, 1)[None]
            os_ = F.scaled_dot_product_attention(qs.transpose(0, 1)[None], K, V)[0].transpose(0, 1)
            if l + 1 < L:
                qp = rot(lin(y, P + "q", False).view(tp, H, hd), rp)
                Kp = kp.repeat_interleave(H // kvh, 1).transpose(0, 1)[None]; Vp = vp.repeat_interleave(H // kvh, 1).transpose(0, 1)[None]
                op = F.scaled_dot_product_attention(qp.transpose(0, 1)[None], Kp, Vp)[0].transpose(0, 1)
            xs = xs + g1 * lin(os_.reshape(h, -1), E + "o", False).view(1, h, -1)
            a2, g2 = ada(xs, cond, E + "ada2")
            xs = xs + g2 * lin(F.gelu(lin(a2, E + "mlp.gate", False), approximate="tanh") * lin(a2, E + "mlp.up", False), E + "mlp.down", False)
            if l + 1 < L:
                xp = xp + lin(op.reshape(tp, -1), P + "o", False)
                y2 = rms(xp, W[P + "norm2.weight"])
                xp = xp + lin(F.gelu(lin(y2, P + "mlp.gate", False), approximate="tanh") * lin(y2, P + "mlp.up", False), P + "mlp.down", False)
        out.append(lin(ada(xs, cond, "expert_final_norm")[0], "action_out"))
    return torch.cat(out, 0)
with torch.no_grad():
    A = R["model.actions"]; n, t = R["noise"], R["time"]; tt = t.view(-1, 1, 1)
    v = velocity(tt * n + (1 - tt) * A, t)
    err = (v - (n - A)) ** 2
    mask = torch.zeros_like(err); mask[..., :R["actions"].shape[-1]] = 1
    loss = (err * mask).sum() / mask.sum()
    x = R["sample_noise"].clone(); steps = S["flow_steps"]; dt = -1.0 / steps
    for i in range(steps):
        x = x + dt * velocity(x, torch.full((x.shape[0],), 1.0 + i * dt))
rel = lambda a, b: ((a - b).abs().max() / b.abs().max()).item()
print("velocity", rel(v, R["velocity"])); print("per_element", rel(err, R["loss.per_element"]))
print("loss", loss.item(), R["loss"].item(), rel(loss, R["loss"])); print("sample_actions", rel(x, R["sample_actions"]))
