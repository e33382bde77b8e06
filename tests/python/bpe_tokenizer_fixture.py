#!/usr/bin/env python3
"""Writes tests/fixtures/bpe_tiny: a tiny byte-level BPE tokenizer in Qwen2's configuration, by HF `tokenizers`.

How to run
----------
Needs `tokenizers` 0.22.2 and `transformers` 5.5.4 (the LeRobot venv of scripts/setup.sh has both):

    ~/.cache/ember/venv-lerobot/bin/python tests/python/bpe_tokenizer_fixture.py tests/fixtures/bpe_tiny

No network. The trainer is deterministic, so a second run writes the same files.

What it writes
--------------
  tokenizer.json, tokenizer_config.json
        a BPE of 256 byte symbols and a few hundred merges trained on robot task strings, with
        Qwen2Tokenizer's model options, NFC normalizer, Split(PRETOKENIZE_REGEX, isolated) +
        ByteLevel(use_regex=false) pre-tokenizer and ByteLevel decoder (the regex is read from
        transformers' own qwen2/tokenization_qwen2.py), and Qwen3's kinds of added tokens:
        special, not normalized (<|endoftext|>, <|im_start|>, <|im_end|>, <img>, </img>,
        <IMG_CONTEXT>) and not special, not normalized (<think>, </think>); the config names
        eos <|im_end|>, pad <|endoftext|>, no bos (Qwen3's)
  slow/vocab.json, slow/merges.txt, slow/tokenizer_config.json, slow/added_tokens.json
        the same tokenizer in the "slow" layout of Isaac-GR00T's eagle2_hg_model directory
        (merges.txt with its "#version" line, added_tokens_decoder id -> {content, special, ...})
  gpt2/tokenizer.json
        the same vocabulary and merges with GPT-2's pipeline: no normalizer, ByteLevel(use_regex=true)
  expected.json
        for each pipeline ("qwen2", "gpt2"): strings with HF's ids
        (`encode(s, add_special_tokens=False)`), `decode(ids)`, `decode(ids, skip_special_tokens=True)`
        and the pre-tokenizer's pieces (byte-level mapped; added tokens not split out);
        "specials": the bos / eos / pad / unk ids the config names (-1: none)

The script checks that transformers' tokenizer loaded from slow/ gives the ids and decodes of
tokenizer.json, and that transformers' decode equals the tokenizers library's (no clean-up).
"""

from __future__ import annotations

import json
import pathlib
import shutil
import sys
import tempfile

SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<img>", "</img>", "<IMG_CONTEXT>"]
NOT_SPECIAL = ["<think>", "</think>"]
NUM_MERGES = 400

TASKS = [
    "pick up the red cube and place it in the bowl",
    "put the green block on top of the blue block",
    "open the top drawer of the cabinet",
    "close the microwave door",
    "push the yellow button twice",
    "stack the cups from largest to smallest",
    "move the spoon to the left of the plate",
    "turn on the stove and put the pot on it",
    "Pick up the black bowl next to the cookie box and place it on the plate.",
    "Don't drop the mug; it's fragile! We'll try again if it fails.",
    "The robot's gripper is at 12345 mm, rotate 90 degrees.",
    "Place 3 apples, 2 oranges and 1 banana in the basket.",
    "<|im_start|>user\npick up the cube<|im_end|>\n<|im_start|>assistant\n",
    "Mettez la tasse sur la table du café, s'il vous plaît.",
    "日本語のロボットは箱を持ち上げる",
    "Greifen Sie die Flasche über dem Tisch.",
]

# the strings whose ids the C++ test compares (robot tasks, punctuation, digits, contractions,
# whitespace runs, newlines, tabs, a chat template, added tokens, non-ASCII UTF-8, an emoji)
STRINGS = [
    "pick up the red cube",
    "Pick up the black bowl next to the cookie box and place it on the plate.",
    "put the green block on top of the blue block",
    "open the top drawer, then close it!",
    "12345",
    "rotate 90 degrees (clockwise) at 3.5 rad/s",
    "don't",
    "It's the robot's cube; we'll see, they've done it, I'm sure, you'd know, they're here.",
    "DON'T SHOUT, IT'S FINE",
    "a  b   c    d",
    "   leading and trailing spaces   ",
    "line one\nline two\n\nline four\r\n",
    "tab\tseparated\t\tvalues",
    "\n\n\n",
    " ",
    "",
    "<|im_start|>user\npick up the cube<|im_end|>\n<|im_start|>assistant\n",
    "<img><IMG_CONTEXT><IMG_CONTEXT></img> describe the scene",
    "<think>reasoning</think>answer",
    "<|im_end|><|im_end|>x<|endoftext|>",
    "<|im_start",
    "café",
    "Mettez la tasse sur la table du café, s'il vous plaît.",
    "日本語",
    "日本語のロボットは箱を持ち上げる",
    "pick up the 🤖 robot 🎉!",
    "naïve façade — “quoted” … ‘single’",
    "x\u00a0y\u3000z\u2003w",
    "a\u0085b",
    # where regex engines differ on \s (HF's Oniguruma counts U+0085 as space, PCRE2 not): the pieces show it
    "a\u0085\u0085b", "a\u00a0\u00a0b", "a\u3000\u3000b", "a\u2028\u2028b", "a\u180e\u180eb", "a\u001c\u001cb",
    "a\u000b\u000bb", "A'S 'LL", "\u017f'\u017f", "x\u2160\u00b2y",
    "$%^&*()_+-=[]{}|;:,.<>?/~`@#",
    "ÀÉÎÕÜ àéîõü ß ſ",
    "mixed123numbers456and789letters",
]


def skip(reason: str) -> None:
    print(f"skipped: {reason}")
    sys.exit(0)


def corpus() -> list[str]:
    lines = []
    for i, t in enumerate(TASKS):
        for j in range(6):
            lines.append(t if j % 2 == 0 else t.upper() if j == 3 else t.capitalize())
            lines.append(f"{t} {i * 37 + j} times")
    return lines


def main() -> None:
    if len(sys.argv) != 2:
        sys.exit("usage: bpe_tokenizer_fixture.py OUT_DIR")
    out = pathlib.Path(sys.argv[1])
    try:
        import tokenizers
        import transformers
        from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
        from transformers import AutoTokenizer
        from transformers.models.qwen2 import tokenization_qwen2
    except ImportError as e:
        skip(f"tokenizers / transformers not importable ({e})")
    print(f"tokenizers {tokenizers.__version__}, transformers {transformers.__version__}")

    # Qwen2Tokenizer's configuration (transformers' qwen2/tokenization_qwen2.py)
    tok = Tokenizer(models.BPE(unk_token=None, continuing_subword_prefix="", end_of_word_suffix="",
                               fuse_unk=False, byte_fallback=False))
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(tokenization_qwen2.PRETOKENIZE_REGEX), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(vocab_size=256 + NUM_MERGES, min_frequency=1, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), special_tokens=[])
    tok.train_from_iterator(corpus(), trainer)
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in SPECIAL])
    tok.add_tokens([AddedToken(t, special=False, normalized=False) for t in NOT_SPECIAL])

    if out.exists():
        shutil.rmtree(out)
    (out / "slow").mkdir(parents=True)
    (out / "gpt2").mkdir()
    tok.save(str(out / "tokenizer.json"))
    tj = json.loads((out / "tokenizer.json").read_text())
    vocab, merges = tj["model"]["vocab"], tj["model"]["merges"]
    added = tj["added_tokens"]
    ids = {a["content"]: a["id"] for a in added}

    config = {
        "add_prefix_space": False,
        "added_tokens_decoder": {str(a["id"]): {k: a[k] for k in ("content", "lstrip", "normalized", "rstrip", "single_word", "special")}
                                 for a in added},
        "bos_token": None,
        "clean_up_tokenization_spaces": False,
        "eos_token": "<|im_end|>",
        "errors": "replace",
        "model_max_length": 4096,
        "pad_token": "<|endoftext|>",
        "tokenizer_class": "Qwen2Tokenizer",
        "unk_token": None,
    }
    dump = lambda path, j: path.write_text(json.dumps(j, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    dump(out / "tokenizer_config.json", config)
    dump(out / "slow" / "tokenizer_config.json", config)
    dump(out / "slow" / "vocab.json", vocab)
    dump(out / "slow" / "added_tokens.json", {a["content"]: a["id"] for a in added})
    (out / "slow" / "merges.txt").write_text("#version: 0.2\n" + "".join(f"{a} {b}\n" for a, b in merges), encoding="utf-8")

    gpt2 = Tokenizer.from_str(tok.to_str())
    gpt2.normalizer = None
    gpt2.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    gpt2.post_processor = processors.ByteLevel(trim_offsets=True)
    gpt2.save(str(out / "gpt2" / "tokenizer.json"))

    def cases(t: Tokenizer) -> list[dict]:
        rows = []
        for s in STRINGS:
            e = t.encode(s, add_special_tokens=False).ids
            pieces = [p for p, _ in t.pre_tokenizer.pre_tokenize_str(t.normalizer.normalize_str(s) if t.normalizer else s)]
            rows.append({"text": s, "ids": e, "decode": t.decode(e, skip_special_tokens=False),
                         "decode_skip_special": t.decode(e, skip_special_tokens=True), "pieces": pieces})
        return rows

    qwen2 = cases(tok)
    # transformers' tokenizer from tokenizer.json and from the slow files agree with the library
    with tempfile.TemporaryDirectory() as only_json:
        shutil.copy(out / "tokenizer.json", only_json)
        shutil.copy(out / "tokenizer_config.json", only_json)
        for where in (only_json, out / "slow"):
            hf = AutoTokenizer.from_pretrained(str(where))
            for row in qwen2:
                got = hf.encode(row["text"], add_special_tokens=False)
                assert got == row["ids"], (where, row["text"], got, row["ids"])
                assert hf.decode(got) == row["decode"], (where, row["text"])
                assert hf.decode(got, skip_special_tokens=True) == row["decode_skip_special"], (where, row["text"])
            assert hf.eos_token_id == ids["<|im_end|>"] and hf.pad_token_id == ids["<|endoftext|>"], where

    expected = {
        "qwen2": qwen2,
        "gpt2": cases(gpt2),
        "specials": {"bos": -1, "eos": ids["<|im_end|>"], "pad": ids["<|endoftext|>"], "unk": -1},
        "vocab_size": max(max(vocab.values()), max(ids.values())) + 1,
        "num_merges": len(merges),
    }
    dump(out / "expected.json", expected)
    size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    print(f"wrote {out}: {len(vocab)} pieces, {len(merges)} merges, {len(added)} added tokens, {size} bytes")


if __name__ == "__main__":
    main()
