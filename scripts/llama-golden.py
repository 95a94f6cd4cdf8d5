#!/usr/bin/python3
"""scripts/llama-golden.py [OUTDIR]: the one-time step that writes the
reference activations of tests/golden/llama/ (see its README.md and
PROVENANCE.md) with Debian's python3-torch, independently of qprobe: the
forward of scripts/llamaref.py (HF transformers' semantics, eager
attention) in float32 on weights read back from the committed files.

- The bundled model data/llama-tiny (made by scripts/train-tiny-llama.py):
  every module output for one sequence and for a batch of two, the
  llama.cpp-style perplexity of heldout.txt, and the reference scores of
  choices.jsonl and exact.jsonl.
- Tiny random-weight checkpoints, each with its config and reference:
  llama3-rope (GQA, rope_scaling llama3, untied, F32), linear-rope-f16
  (rope_scaling linear, MHA, tied, F16), qwen2-bias (q/k/v biases, tied,
  BF16, in two shards with an index), mistral (head_dim other than
  hidden/heads, untied, BF16).
Tests never run it.
"""
import hashlib
import json
import math
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import llamaref as L  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
TINY = os.path.join(ROOT, "data", "llama-tiny")
SEED = 424242

VARIANTS = {
    "llama3-rope": ({
        "architectures": ["LlamaForCausalLM"], "model_type": "llama",
        "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2,
        "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 16,
        "vocab_size": 64, "max_position_embeddings": 128, "rms_norm_eps": 1e-5,
        "rope_theta": 10000.0,
        "rope_scaling": {"rope_type": "llama3", "factor": 4.0, "low_freq_factor": 1.0,
                         "high_freq_factor": 4.0, "original_max_position_embeddings": 32},
        "tie_word_embeddings": False, "attention_bias": False, "mlp_bias": False,
        "hidden_act": "silu", "bos_token_id": 0, "eos_token_id": 1,
        "torch_dtype": "float32"}, "F32", (36,)),
    "linear-rope-f16": ({
        "architectures": ["LlamaForCausalLM"], "model_type": "llama",
        "hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 2,
        "num_attention_heads": 4, "num_key_value_heads": 4,
        "vocab_size": 64, "max_position_embeddings": 64, "rms_norm_eps": 1e-6,
        "rope_theta": 10000.0, "rope_scaling": {"type": "linear", "factor": 2.0},
        "tie_word_embeddings": True, "attention_bias": False, "mlp_bias": False,
        "hidden_act": "silu", "bos_token_id": 0, "eos_token_id": 1,
        "torch_dtype": "float16"}, "F16", (2, 6)),
    "qwen2-bias": ({
        "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2",
        "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2,
        "num_attention_heads": 4, "num_key_value_heads": 2,
        "vocab_size": 64, "max_position_embeddings": 128, "rms_norm_eps": 1e-6,
        "rope_theta": 1000000.0, "rope_scaling": None,
        "tie_word_embeddings": True, "use_sliding_window": False, "sliding_window": 4096,
        "max_window_layers": 2, "hidden_act": "silu", "bos_token_id": 0,
        "eos_token_id": 1, "torch_dtype": "bfloat16"}, "BF16", (12,)),
    "mistral": ({
        "architectures": ["MistralForCausalLM"], "model_type": "mistral",
        "hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 2,
        "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,
        "vocab_size": 64, "max_position_embeddings": 128, "rms_norm_eps": 1e-5,
        "rope_theta": 1000000.0, "sliding_window": None,
        "tie_word_embeddings": False, "hidden_act": "silu", "bos_token_id": 0,
        "eos_token_id": 1, "torch_dtype": "bfloat16"}, "BF16", (2, 6)),
}
SHARDED = "qwen2-bias"  # stored in two shards with an index

# ASCII texts for the tiny tokenizer (the script's BPE is exact on ASCII).
TOKENIZER_CASES = [
    "", " ", "\n", "Hello world", "  two leading spaces", "trailing spaces   ",
    "tabs\tand\t\ttabs", "new\nlines\n\n\nmany", "crlf\r\nline\r\n\r\n end",
    "form\x0cfeed and\x0b vertical tab", "mixed   \n  \t \n  white space",
    "digits 1 12 123 1234 12345 3.14159 1,000,000 v2.0",
    "contractions: don't I'm you're they've we'll she'd IT'S He'S",
    "punctuation!!! ??? ... --- (a) [b] {c} <d> \"q\" 'single' ``AS IS''",
    "e-mail <gnu@gnu.org> https://www.gnu.org/licenses/ 51 Franklin St",
    "UPPER CASE WORDS AND lower case words",
    "<|begin_of_text|>special tokens<|end_of_text|> in <|end_of_text|>text",
    "no special: <|begin_of_text| <|other|>",
    "The GNU General Public License is a free, copyleft license for\nsoftware.",
]


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def rel_l2(a, b):
    a, b = a.double(), b.double()
    return float((a - b).norm() / b.norm())


def run(cfg, W, ids, **kw):
    """Captures {name: tensor} of ids [T] or [B, T] (the batch dim dropped
    for one sequence, as the issue's [T, F] shapes say)."""
    cap = {}
    with torch.no_grad():
        L.forward(cfg, W, ids if ids.dim() == 2 else ids[None], capture=cap, **kw)
    return {k: (v if ids.dim() == 2 else v[0]) for k, v in cap.items()}


def save_ref(path, cfg, ids, cap):
    """input_ids (I32), model.rotary_emb.inv_freq and every capture (F32)
    in forward order."""
    items = [("input_ids", ids, "I32"),
             ("model.rotary_emb.inv_freq", L.rope_inv_freq(cfg), "F32")]
    items += [(n, cap[n], "F32") for n in L.capture_order(cfg)]
    L.st_save(path, items, {"format": "pt", "source": "scripts/llama-golden.py"})


def precision(cfg, W, ids, cap32):
    """Largest rel L2 between the float32 captures and a float64 forward."""
    cap64 = run(cfg, W, ids, dtype=torch.float64)
    return max(rel_l2(cap32[n], cap64[n]) for n in cap32)


# ---- the bundled model ------------------------------------------------------------

def load_tiny():
    cfg = json.load(open(os.path.join(TINY, "config.json")))
    W = L.st_load(os.path.join(TINY, "model.safetensors"))
    tj = json.load(open(os.path.join(TINY, "tokenizer.json")))
    specials = {t["content"]: t["id"] for t in tj["added_tokens"]}
    merges = [tuple(m.split(" ")) for m in tj["model"]["merges"]]
    tok = L.BPE(tj["model"]["vocab"], merges, specials)
    return cfg, W, tok


def task_refs(cfg, W, tok):
    """Reference scores of choices.jsonl and exact.jsonl."""
    choices, correct, correct_norm = [], 0, 0
    for line in open(os.path.join(TINY, "choices.jsonl")):
        it = json.loads(line)
        scores = L.choice_scores(cfg, W, tok, it["context"], it["choices"])
        lps = [sc for sc, _ in scores]
        nbytes = [len(ch.encode()) for ch in it["choices"]]
        pick = max(range(len(lps)), key=lambda k: lps[k])
        pick_norm = max(range(len(lps)), key=lambda k: lps[k] / nbytes[k])
        correct += pick == it["label"]
        correct_norm += pick_norm == it["label"]
        choices.append({"context_ids": tok.encode(it["context"], bos=True), "logprob": lps,
                        "n_tokens": [n for _, n in scores], "n_bytes": nbytes,
                        "pred": pick, "pred_norm": pick_norm})
    exact, hits = [], 0
    for line in open(os.path.join(TINY, "exact.jsonl")):
        it = json.loads(line)
        ids = tok.encode(it["prompt"], bos=True)
        out = L.greedy(cfg, W, ids, it["n_tokens"])
        hits += tok.decode(out) == it["answer"]
        exact.append({"prompt_ids": ids, "generated_ids": out})
    n = len(choices)
    return {"choices": {"file": "data/llama-tiny/choices.jsonl", "items": n,
                        "accuracy": correct / n, "accuracy_norm": correct_norm / n,
                        "per_item": choices},
            "exact": {"file": "data/llama-tiny/exact.jsonl", "items": len(exact),
                      "match_rate": hits / len(exact), "per_item": exact}}


def bundled(out, notes):
    cfg, W, tok = load_tiny()
    text = ("The GNU General Public License is a free, copyleft license for\n"
            "software and other kinds of works.")
    single = torch.tensor(tok.encode(text, bos=True)[:16])
    batch = torch.tensor([tok.encode("Everyone is permitted to copy and distribute",
                                     bos=True)[:4],
                          tok.encode("Mozilla Public License Version 2.0", bos=True)[:4]])
    for name, ids in (("tiny-t16", single), ("tiny-b2t4", batch)):
        cap = run(cfg, W, ids)
        save_ref(os.path.join(out, name + ".safetensors"), cfg, ids, cap)
        notes.append((name, "data/llama-tiny", list(ids.shape), precision(cfg, W, ids, cap),
                      "wrong GQA mapping (query head j reads KV head j %% %d): %.3g"
                      % (cfg["num_key_value_heads"],
                         rel_l2(run(cfg, W, ids, kv_heads=torch.arange(
                             cfg["num_attention_heads"]) % cfg["num_key_value_heads"])
                             ["lm_head"], cap["lm_head"]))))
    # each row of the batch is the same sequence run alone
    one = run(cfg, W, batch[1])
    assert rel_l2(run(cfg, W, batch)["lm_head"][1], one["lm_head"]) < 1e-6

    cases = [{"text": t, "ids": tok.encode(t), "ids_add_special": tok.encode(t, bos=True)}
             for t in TOKENIZER_CASES]
    with open(os.path.join(out, "tiny-tokenizer.json"), "w") as f:
        json.dump({"tokenizer": "data/llama-tiny/tokenizer.json", "cases": cases}, f, indent=1)
        f.write("\n")
    held = open(os.path.join(TINY, "heldout.txt")).read()
    ids = torch.tensor(tok.encode(held, bos=True))
    assert tok.decode(ids[1:].tolist()) == held
    np.save(os.path.join(out, "tiny-heldout-ids.npy"), ids.numpy().astype(np.int32))
    ev = {"model": "data/llama-tiny", "text": "data/llama-tiny/heldout.txt",
          "ids": "tests/golden/llama/tiny-heldout-ids.npy", "n_ids": len(ids),
          "perplexity": [L.llamacpp_ppl(cfg, W, ids, c) for c in (512, 256, 128)]}
    ev.update(task_refs(cfg, W, tok))
    with open(os.path.join(out, "tiny-eval.json"), "w") as f:
        json.dump(ev, f, indent=1)
        f.write("\n")
    return ev


# ---- random-weight variants ---------------------------------------------------------

def random_weights(cfg, gen):
    """Weights with O(1) activations: linear N(0, 1/fan_in), embeddings
    N(0, 0.25), norms 1 + N(0, 0.04), biases N(0, 0.09)."""
    W = {}
    for name, shape in L.param_shapes(cfg):
        z = torch.randn(shape, generator=gen)
        if name.endswith("norm.weight"):
            W[name] = 1 + 0.2 * z
        elif name.endswith(".bias"):
            W[name] = 0.3 * z
        elif name == "model.embed_tokens.weight":
            W[name] = 0.5 * z
        else:
            W[name] = z / math.sqrt(shape[1])
    return W


def save_checkpoint(d, cfg, W, dtype, shards):
    """W as d/model.safetensors, or split after layer 0 into two shards
    with model.safetensors.index.json."""
    names = [n for n, _ in L.param_shapes(cfg)]
    if shards == 1:
        L.st_save(os.path.join(d, "model.safetensors"), [(n, W[n], dtype) for n in names],
                  {"format": "pt"})
        return
    cut = names.index("model.layers.1.self_attn.q_proj.weight")
    files = ["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"]
    wmap, total = {}, 0
    for fname, part in zip(files, (names[:cut], names[cut:])):
        L.st_save(os.path.join(d, fname), [(n, W[n], dtype) for n in part], {"format": "pt"})
        for n in part:
            wmap[n] = fname
            total += len(L.tensor_bytes(W[n], dtype))
    with open(os.path.join(d, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": wmap}, f, indent=2)
        f.write("\n")


def load_checkpoint(d):
    """{name: float32 tensor} of d's model.safetensors or shards."""
    index = os.path.join(d, "model.safetensors.index.json")
    if not os.path.exists(index):
        return L.st_load(os.path.join(d, "model.safetensors"))
    W = {}
    for fname in sorted(set(json.load(open(index))["weight_map"].values())):
        W.update(L.st_load(os.path.join(d, fname)))
    return W


def write_variant(out, name, cfg, dtype, shape, gen, notes):
    d = os.path.join(out, name)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
        f.write("\n")
    save_checkpoint(d, cfg, random_weights(cfg, gen), dtype, 2 if name == SHARDED else 1)
    W = load_checkpoint(d)  # the stored values
    ids = torch.randint(2, cfg["vocab_size"], shape, generator=gen)
    cap = run(cfg, W, ids)
    save_ref(os.path.join(d, "ref.safetensors"), cfg, ids, cap)
    if cfg.get("rope_scaling"):
        plain = dict(cfg, rope_scaling=None)
        what = "without rope_scaling"
        other = run(plain, W, ids)["lm_head"]
    elif L.has_qkv_bias(cfg):
        what = "without the q/k/v biases"
        other = run(cfg, {k: v for k, v in W.items() if not k.endswith(".bias")}, ids)["lm_head"]
    else:
        what = "wrong GQA mapping (query head j reads KV head j %% %d)" % cfg["num_key_value_heads"]
        other = run(cfg, W, ids, kv_heads=torch.arange(cfg["num_attention_heads"]) %
                    cfg["num_key_value_heads"])["lm_head"]
    notes.append((name + "/ref", name + " (" + dtype + ")", list(ids.shape),
                  precision(cfg, W, ids, cap), "%s: %.3g" % (what, rel_l2(other, cap["lm_head"]))))


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "tests", "golden", "llama")
    os.makedirs(out, exist_ok=True)
    torch.set_num_threads(1)
    notes = []
    ev = bundled(out, notes)
    gen = torch.Generator().manual_seed(SEED)
    for name, (cfg, dtype, shape) in VARIANTS.items():
        write_variant(out, name, cfg, dtype, shape, gen, notes)
    write_provenance(out, notes, ev)


def write_provenance(out, notes, ev):
    files = []
    for dp, _, fs in sorted(os.walk(out)):
        for f in sorted(fs):
            if f not in ("README.md", "PROVENANCE.md"):
                p = os.path.join(dp, f)
                files.append((os.path.relpath(p, out), os.path.getsize(p), sha256(p)))
    ppl = ev["perplexity"]
    lines = [
        "# tests/golden/llama: provenance",
        "",
        "Written by `/usr/bin/python3 scripts/llama-golden.py` (torch %s, numpy %s, one"
        % (torch.__version__, np.__version__),
        "CPU thread, seed %d for the random variants), independently of qprobe: the" % SEED,
        "forward of `scripts/llamaref.py` in float32 on the weights read back from",
        "the files next to each reference (BF16/F16 upcast exactly to float32).",
        "Inputs of the bundled model: data/llama-tiny (model.safetensors sha256",
        "`%s`)." % sha256(os.path.join(TINY, "model.safetensors")),
        "",
        "## References",
        "",
        "`max rel L2 vs fp64` is the largest ||fp32 - fp64|| / ||fp64|| over the",
        "captured modules, with the same forward in float64: the float32 noise any",
        "correct implementation carries. The last column shows how far a plausible",
        "mistake moves the logits (rel L2), i.e. that the reference catches it.",
        "",
        "| reference | model | input_ids shape | max rel L2 vs fp64 | logits under a mistake |",
        "|---|---|---|---:|---|",
    ] + ["| %s.safetensors | %s | %s | %.2g | %s |" % n for n in notes] + [
        "",
        "qwen2-bias/ is stored in two shards with model.safetensors.index.json.",
        "",
        "## Evaluation references (tiny-eval.json)",
        "",
        "llama.cpp perplexity of data/llama-tiny/heldout.txt (ids in",
        "tiny-heldout-ids.npy: BOS + %d tokens):" % (ev["n_ids"] - 1),
        "",
        "| ctx | chunks | scored tokens | mean NLL | PPL | +/- |",
        "|---:|---:|---:|---:|---:|---:|",
    ] + ["| %d | %d | %d | %.6f | %.4f | %.4f |" % (p["ctx"], p["chunks"], p["scored_tokens"],
                                                 p["nll_mean"], p["ppl"], p["ppl_uncertainty"])
         for p in ppl] + [
        "",
        "choices.jsonl: %d items, accuracy %.4f (summed log-probability), %.4f"
        % (ev["choices"]["items"], ev["choices"]["accuracy"], ev["choices"]["accuracy_norm"]),
        "(log-probability per byte of the choice). exact.jsonl: %d items, match rate %.2f."
        % (ev["exact"]["items"], ev["exact"]["match_rate"]),
        "",
        "## Files",
        "",
        "| file | bytes | sha256 |",
        "|---|---:|---|",
    ] + ["| %s | %d | `%s` |" % f for f in files] + [
        "",
        "Total: %d bytes." % sum(f[1] for f in files),
        ""]
    with open(os.path.join(out, "PROVENANCE.md"), "w") as f:
        f.write("\n".join(lines))


if __name__ == "__main__":
    main()
