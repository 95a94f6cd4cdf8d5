#!/usr/bin/python3
"""scripts/train-tiny-llama.py [OUTDIR]: the one-time data step that makes
data/llama-tiny/ (see its PROVENANCE.md). Needs Debian's python3-torch and
python3-numpy (`apt-get install -y python3-torch python3-numpy`); run it
with /usr/bin/python3. Tests never run it: they read what it committed.

1. Trains a byte-level BPE tokenizer (Llama 3 style: Split regex,
   ByteLevel, ignore_merges) on the Debian licence texts in
   /usr/share/common-licenses (a fixed, sorted file list; MPL-2.0 held out).
2. Trains a small Llama (GQA, tied embeddings, RMSNorm, RoPE, SwiGLU) on
   them with a fixed seed and step count, on the CPU.
3. Writes the BF16 checkpoint as a Hugging Face model folder, the held-out
   text, and two evaluation task files (choices.jsonl, exact.jsonl) whose
   reference answers come from the fp32 forward of the saved BF16 weights.
"""
import collections
import hashlib
import json
import math
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import llamaref as L  # noqa: E402

SEED = 20240917
STEPS = 600
BATCH = 4
SEQ = 512
LR = 3e-3
WARMUP = 40
N_MERGES = 510
LICENSES = "/usr/share/common-licenses"
HELDOUT = ["MPL-2.0"]
BOS, EOS = "<|begin_of_text|>", "<|end_of_text|>"

CONFIG = {
    "architectures": ["LlamaForCausalLM"],
    "attention_bias": False,
    "attention_dropout": 0.0,
    "bos_token_id": None,  # filled in once the vocabulary is known
    "eos_token_id": None,
    "head_dim": 32,
    "hidden_act": "silu",
    "hidden_size": 128,
    "initializer_range": 0.02,
    "intermediate_size": 344,
    "max_position_embeddings": 1024,
    "mlp_bias": False,
    "model_type": "llama",
    "num_attention_heads": 4,
    "num_hidden_layers": 4,
    "num_key_value_heads": 2,
    "pretraining_tp": 1,
    "rms_norm_eps": 1e-05,
    "rope_scaling": None,
    "rope_theta": 10000.0,
    "tie_word_embeddings": True,
    "torch_dtype": "bfloat16",
    "use_cache": True,
    "vocab_size": None,
}


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def license_files():
    """Regular files of /usr/share/common-licenses (symlinks skipped, as
    they repeat a file), sorted by name."""
    names = sorted(n for n in os.listdir(LICENSES)
                   if not os.path.islink(os.path.join(LICENSES, n)))
    return [(n, os.path.join(LICENSES, n)) for n in names]


def read_text(path):
    with open(path, "rb") as f:
        text = f.read().decode("ascii")
    return text


# ---- tokenizer training ----------------------------------------------------------

def train_bpe(texts, n_merges):
    """Classic BPE on pre-token counts: n_merges times, merge the most
    frequent adjacent pair (ties: the smallest pair in code-point order)."""
    counts = collections.Counter()
    for t in texts:
        counts.update(L.pretokenize(t))
    words = [(list(w), c) for w, c in sorted(counts.items())]
    merges = []
    for _ in range(n_merges):
        pairs = collections.Counter()
        for parts, c in words:
            for i in range(len(parts) - 1):
                pairs[(parts[i], parts[i + 1])] += c
        if not pairs:
            break
        best = min(pairs.items(), key=lambda kv: (-kv[1], kv[0]))[0]
        merges.append(best)
        joined = best[0] + best[1]
        for parts, _ in words:
            i = 0
            while i < len(parts) - 1:
                if parts[i] == best[0] and parts[i + 1] == best[1]:
                    parts[i:i + 2] = [joined]
                i += 1
    vocab = {c: i for i, (_, c) in enumerate(L.BYTE_TABLE)}
    for a, b in merges:
        vocab[a + b] = len(vocab)
    return vocab, merges


def tokenizer_json(vocab, merges, bos_id, eos_id):
    added = [{"id": i, "content": s, "single_word": False, "lstrip": False,
              "rstrip": False, "normalized": False, "special": True}
             for s, i in ((BOS, bos_id), (EOS, eos_id))]
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": None,
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": L.LLAMA3_SPLIT},
             "behavior": "Isolated", "invert": False},
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
             "use_regex": False}]},
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": BOS, "type_id": 0}},
                       {"Sequence": {"id": "A", "type_id": 0}}],
            "pair": [{"SpecialToken": {"id": BOS, "type_id": 0}},
                     {"Sequence": {"id": "A", "type_id": 0}},
                     {"SpecialToken": {"id": BOS, "type_id": 1}},
                     {"Sequence": {"id": "B", "type_id": 1}}],
            "special_tokens": {BOS: {"id": BOS, "ids": [bos_id], "tokens": [BOS]}}},
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True,
                    "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None,
                  "continuing_subword_prefix": None, "end_of_word_suffix": None,
                  "fuse_unk": False, "byte_fallback": False, "ignore_merges": True,
                  "vocab": vocab, "merges": [a + " " + b for a, b in merges]},
    }


# ---- model ---------------------------------------------------------------------

def init_weights(cfg, gen):
    """HF's initialisation: normal(0, initializer_range) for embeddings and
    linear layers, ones for the norms."""
    W = {}
    for name, shape in L.param_shapes(cfg):
        if name.endswith("norm.weight"):
            W[name] = torch.ones(shape)
        else:
            W[name] = torch.randn(shape, generator=gen) * cfg["initializer_range"]
        W[name].requires_grad_(True)
    return W


def lr_at(step):
    if step < WARMUP:
        return LR * (step + 1) / WARMUP
    t = (step - WARMUP) / max(1, STEPS - WARMUP)
    return LR * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * t)))


def batch_at(stream, gen):
    """BATCH windows of SEQ+1 tokens at random offsets; the first token of
    each window is replaced by BOS (as llama.cpp's perplexity does)."""
    starts = torch.randint(0, len(stream) - SEQ - 1, (BATCH,), generator=gen)
    x = torch.stack([stream[s:s + SEQ + 1] for s in starts.tolist()])
    x[:, 0] = CONFIG["bos_token_id"]
    return x[:, :-1], x[:, 1:]


def heldout_nll(cfg, W, ids):
    """Mean NLL over the held-out tokens in windows of SEQ (each window
    starting with BOS in place of its first token, all positions scored)."""
    tot, n = 0.0, 0
    for s in range(0, len(ids) - 1, SEQ - 1):
        w = ids[s:s + SEQ].clone()
        if len(w) < 2:
            break
        w[0] = cfg["bos_token_id"]
        nl = L.nll_tokens(cfg, W, w)
        tot += float(nl.sum())
        n += len(nl)
    return tot / n


def train(cfg, stream, held_ids):
    gen = torch.Generator().manual_seed(SEED)
    W = init_weights(cfg, gen)
    opt = torch.optim.AdamW(list(W.values()), lr=LR, betas=(0.9, 0.95),
                            weight_decay=0.1)
    log = []
    t0 = time.time()
    for step in range(STEPS):
        for g in opt.param_groups:
            g["lr"] = lr_at(step)
        x, y = batch_at(stream, gen)
        logits = L.forward(cfg, W, x)
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                                                 y.reshape(-1))
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(list(W.values()), 1.0)
        opt.step()
        if step % 50 == 0 or step == STEPS - 1:
            with torch.no_grad():
                h = heldout_nll(cfg, {k: v.detach() for k, v in W.items()}, held_ids)
            log.append((step, float(loss), h))
            print("step %4d  train loss %.4f  held-out loss %.4f  (%.0f s)"
                  % (step, float(loss), h, time.time() - t0), flush=True)
    return {k: v.detach() for k, v in W.items()}, log, time.time() - t0


# ---- evaluation tasks -------------------------------------------------------------

def sentences(text):
    """Prose sentences of a licence text, white space folded to single
    spaces (split at '. ' and '; ', and at blank lines); sentences with
    box-drawing asterisks, all-capital ones and short ones are dropped."""
    out = []
    for para in text.split("\n\n"):
        flat = " ".join(para.split())
        for s in flat.replace("; ", ";\x00").replace(". ", ".\x00").split("\x00"):
            s = s.strip()
            if len(s.split(" ")) >= 10 and "*" not in s and s != s.upper():
                out.append(s)
    return out


def split_sentence(s, k):
    """(context, continuation) of sentence s: the continuation is the k
    words after at least 6 words of context; the context ends with a letter
    and the continuation is ' ' + a word starting with a letter, so that
    tokenizing them apart equals tokenizing them together; None when no
    such split exists."""
    w = s.split(" ")
    for c in range(6, len(w) - k + 1):
        ctx, cont = " ".join(w[:c]), " " + " ".join(w[c:c + k])
        if ctx[-1].isalpha() and cont[1].isalpha() and c >= len(w) // 2:
            return ctx, cont
    return None


def make_choices(cfg, W, tok, held_text, gen, n_items=60, k=5):
    """Multiple-choice items from held-out sentences: the context is the
    sentence's first words, the choices its next k words and three other
    orders of the same words (same bytes, nearly the same tokens, so
    neither length nor word frequency decides; continuations taken from
    other sentences left this model at chance level)."""
    splits = [sp for sp in (split_sentence(s, k) for s in sentences(held_text)) if sp]
    items = []
    for idx in torch.randperm(len(splits), generator=gen).tolist():
        if len(items) == n_items:
            break
        ctx, cont = splits[idx]
        words, others = cont[1:].split(" "), []
        for _ in range(100):
            c = " " + " ".join(words[i] for i in torch.randperm(k, generator=gen).tolist())
            if c != cont and c not in others and c[1].isalpha():
                others.append(c)
            if len(others) == 3:
                break
        if len(others) < 3:
            continue
        choices = others + [cont]
        choices = [choices[p] for p in torch.randperm(4, generator=gen).tolist()]
        items.append({"context": ctx, "choices": choices, "label": choices.index(cont)})
    correct = 0
    for it in items:
        scores = [sc for sc, _ in L.choice_scores(cfg, W, tok, it["context"], it["choices"])]
        correct += int(max(range(4), key=lambda i: scores[i]) == it["label"])
    return items, correct / len(items)


def exact_candidate(cfg, W, tok, para, max_tokens=8):
    """(prompt, answer) from the opening of paragraph para: the first place
    after 5 words where the model, fed BOS + the text, predicts the next 3
    to max_tokens tokens right, forming whole words on one line; or None."""
    ids = tok.encode(para, bos=True)
    with torch.no_grad():
        pred = torch.argmax(L.forward(cfg, W, torch.tensor([ids]))[0], dim=-1).tolist()
    for p in range(6, len(ids) - 4):
        run = 0  # greedy from BOS + ids[1..p] follows the text while right
        while p + run + 1 < len(ids) and run < max_tokens and pred[p + run] == ids[p + run + 1]:
            run += 1
        prompt = tok.decode(ids[1:p + 1])
        while run >= 3:
            ans = tok.decode(ids[p + 1:p + 1 + run])
            after = tok.decode(ids[p + 1 + run:p + 2 + run])
            if (len(prompt.split()) >= 5 and prompt[-1].isalpha() and ans[0] == " " and
                    ans[1:2].isalpha() and "\n" not in ans and len(ans.split()) >= 2 and
                    ans[-1].isalpha() and not after[:1].isalnum() and
                    tok.encode(prompt) == ids[1:p + 1]):
                return prompt, ans, ids[p + 1:p + 1 + run]
            run -= 1
    return None


def make_exact(cfg, W, tok, train_texts, n_items=20):
    """Exact-match items from paragraph openings of the training texts (at
    most two per file): prompts whose fp32 greedy continuation, checked by
    generation, is the text itself."""
    items, per_file = [], collections.Counter()
    for rnd in range(2):
        for name, text in train_texts:
            for para in text.split("\n\n"):
                para = para.strip()[:400]
                if len(items) == n_items or per_file[name] > rnd:
                    break
                if len(para.split()) < 10 or any(it["prompt"] in para for it in items):
                    continue
                c = exact_candidate(cfg, W, tok, para)
                if not c:
                    continue
                prompt, ans, want = c
                got = L.greedy(cfg, W, tok.encode(prompt, bos=True), len(want))
                assert got == want, (prompt, ans)
                items.append({"prompt": prompt, "answer": ans, "n_tokens": len(want),
                              "source": name})
                per_file[name] += 1
    return items


# ---- output ----------------------------------------------------------------------

def write_json(path, obj):
    with open(path, "w") as f:
        json.dump(obj, f, indent=2, ensure_ascii=False)
        f.write("\n")


def write_jsonl(path, items):
    with open(path, "w") as f:
        for it in items:
            f.write(json.dumps(it, ensure_ascii=False) + "\n")


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "data", "llama-tiny")
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(SEED)
    torch.set_num_threads(1)  # deterministic, and faster than 2 here
    files = license_files()
    train_files = [(n, p) for n, p in files if n not in HELDOUT]
    held_files = [(n, p) for n, p in files if n in HELDOUT]
    train_texts = [(n, read_text(p)) for n, p in train_files]
    held_text = "".join(read_text(p) for _, p in held_files)

    vocab, merges = train_bpe([t for _, t in train_texts], N_MERGES)
    bos_id, eos_id = len(vocab), len(vocab) + 1
    tok = L.BPE(vocab, merges, {BOS: bos_id, EOS: eos_id})
    cfg = dict(CONFIG, bos_token_id=bos_id, eos_token_id=eos_id, vocab_size=len(vocab) + 2)
    CONFIG.update(cfg)
    stream = []
    for _, t in train_texts:
        ids = tok.encode(t)
        assert tok.decode(ids) == t
        stream += [bos_id] + ids + [eos_id]
    stream = torch.tensor(stream)
    held_ids = torch.tensor(tok.encode(held_text, bos=True))
    assert tok.decode(held_ids[1:].tolist()) == held_text
    print("vocab %d, %d merges, %d training tokens, %d held-out tokens"
          % (cfg["vocab_size"], len(merges), len(stream), len(held_ids)), flush=True)

    W32, log, secs = train(cfg, stream, held_ids)
    Wbf = {k: v.to(torch.bfloat16).to(torch.float32) for k, v in W32.items()}
    gen = torch.Generator().manual_seed(SEED + 1)
    with torch.no_grad():
        held32 = heldout_nll(cfg, W32, held_ids)
        heldbf = heldout_nll(cfg, Wbf, held_ids)
        trainbf = heldout_nll(cfg, Wbf, stream[:len(held_ids)])
        ppl512 = L.llamacpp_ppl(cfg, Wbf, held_ids, 512)
        ppl256 = L.llamacpp_ppl(cfg, Wbf, held_ids, 256)
        choices, acc = make_choices(cfg, Wbf, tok, held_text, gen)
        exact = make_exact(cfg, Wbf, tok, train_texts)

    names = [n for n, _ in L.param_shapes(cfg)]
    L.st_save(os.path.join(out, "model.safetensors"),
              [(n, W32[n], "BF16") for n in names], {"format": "pt"})
    write_json(os.path.join(out, "config.json"), cfg)
    write_json(os.path.join(out, "tokenizer.json"), tokenizer_json(vocab, merges, bos_id, eos_id))
    added = {str(i): {"content": s, "lstrip": False, "normalized": False, "rstrip": False,
                      "single_word": False, "special": True}
             for s, i in ((BOS, bos_id), (EOS, eos_id))}
    write_json(os.path.join(out, "tokenizer_config.json"), {
        "added_tokens_decoder": added, "bos_token": BOS, "clean_up_tokenization_spaces": False,
        "eos_token": EOS, "model_input_names": ["input_ids", "attention_mask"],
        "model_max_length": cfg["max_position_embeddings"],
        "tokenizer_class": "PreTrainedTokenizerFast"})
    write_json(os.path.join(out, "generation_config.json"),
               {"bos_token_id": bos_id, "eos_token_id": eos_id, "do_sample": False})
    with open(os.path.join(out, "heldout.txt"), "w") as f:
        f.write(held_text)
    write_jsonl(os.path.join(out, "choices.jsonl"), choices)
    write_jsonl(os.path.join(out, "exact.jsonl"), exact)

    res = {"train_secs": secs, "log": log, "held_nll_fp32_trained": held32,
           "held_nll_bf16": heldbf, "train_nll_bf16": trainbf, "ppl512": ppl512,
           "ppl256": ppl256, "choices_acc": acc, "n_choices": len(choices),
           "n_exact": len(exact), "n_train_tokens": len(stream),
           "n_held_tokens": len(held_ids)}
    write_provenance(out, cfg, train_files, held_files, res)
    print(json.dumps(res, indent=1))


def write_provenance(out, cfg, train_files, held_files, r):
    def row(n, p):
        return "| %s | %d | `%s` |" % (n, os.path.getsize(p), sha256(p))
    outputs = ["config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json",
               "generation_config.json", "heldout.txt", "choices.jsonl", "exact.jsonl"]
    lines = [
        "# data/llama-tiny: provenance",
        "",
        "Made by `/usr/bin/python3 scripts/train-tiny-llama.py` (one-time data step;",
        "tests never run Python). torch %s, numpy %s, %d CPU threads, seed %d."
        % (torch.__version__, __import__("numpy").__version__, torch.get_num_threads(), SEED),
        "",
        "## Model",
        "",
        "Llama (HF `LlamaForCausalLM` semantics, written in plain torch in",
        "`scripts/llamaref.py`): hidden %d, %d layers, %d heads, %d KV heads (GQA),"
        % (cfg["hidden_size"], cfg["num_hidden_layers"], cfg["num_attention_heads"],
           cfg["num_key_value_heads"]),
        "head_dim %d, SwiGLU intermediate %d, vocab %d, tied embeddings, RMSNorm eps %g,"
        % (cfg["head_dim"], cfg["intermediate_size"], cfg["vocab_size"], cfg["rms_norm_eps"]),
        "RoPE theta %g (no scaling), max_position_embeddings %d. %d parameters."
        % (cfg["rope_theta"], cfg["max_position_embeddings"],
           sum(math.prod(s) for _, s in L.param_shapes(cfg))),
        "Trained in float32 (AdamW, lr %g, betas (0.9, 0.95), weight decay 0.1, %d"
        % (LR, WARMUP),
        "warm-up steps then cosine to 0.1 x lr, gradient clipping 1.0) for %d steps of"
        % STEPS,
        "%d random windows of %d tokens (first token of each window replaced by BOS)"
        % (BATCH, SEQ),
        "in %.0f s; saved as BF16 (round to nearest even)." % r["train_secs"],
        "",
        "| step | train loss (batch) | held-out loss |",
        "|---:|---:|---:|",
    ] + ["| %d | %.4f | %.4f |" % e for e in r["log"]] + [
        "",
        "Final figures, fp32 forward of the saved BF16 weights (upcast):",
        "",
        "- held-out (%d tokens, windows of %d, every position scored): loss %.4f,"
        % (r["n_held_tokens"], SEQ, r["held_nll_bf16"]),
        "  PPL **%.2f** (uniform over the vocabulary: %d); before BF16 rounding %.4f."
        % (math.exp(r["held_nll_bf16"]), cfg["vocab_size"], r["held_nll_fp32_trained"]),
        "- training text (its first %d tokens, same windows): loss %.4f, PPL %.2f."
        % (r["n_held_tokens"], r["train_nll_bf16"], math.exp(r["train_nll_bf16"])),
        "- llama.cpp `perplexity` semantics on heldout.txt (BOS + tokens, %d chunks"
        % r["ppl512"]["chunks"],
        "  of 512, BOS replacing each chunk's first token, second half scored,",
        "  %d tokens): PPL **%.4f** +/- %.4f (mean NLL %.6f); ctx 256: %d chunks,"
        % (r["ppl512"]["scored_tokens"], r["ppl512"]["ppl"], r["ppl512"]["ppl_uncertainty"],
           r["ppl512"]["nll_mean"], r["ppl256"]["chunks"]),
        "  PPL %.4f +/- %.4f (mean NLL %.6f)."
        % (r["ppl256"]["ppl"], r["ppl256"]["ppl_uncertainty"], r["ppl256"]["nll_mean"]),
        "- choices.jsonl: %d items from held-out sentences (context: the first words;"
        % r["n_choices"],
        "  choices: the next 5 words and 3 other orders of them), accuracy %.3f by"
        % r["choices_acc"],
        "  summed log-probability of the choice after BOS + context (chance 0.25).",
        "- exact.jsonl: %d items from paragraph openings of the training texts; each"
        % r["n_exact"],
        "  answer is the decoding of the fp32 greedy continuation (n_tokens tokens",
        "  after BOS + prompt), which is also the text itself.",
        "",
        "## Tokenizer",
        "",
        "Byte-level BPE trained by the script on the training files: the 256 byte",
        "tokens in GPT-2's byte-to-unicode order (ids 0-255), %d merges (ids 256-%d),"
        % (N_MERGES, 255 + N_MERGES),
        "`%s` = %d and `%s` = %d as special added tokens. Pre-tokenizer: Llama 3's"
        % (BOS, cfg["bos_token_id"], EOS, cfg["eos_token_id"]),
        "Split regex (Isolated) then ByteLevel (no prefix space); `ignore_merges`",
        "true; post-processor TemplateProcessing adds BOS; decoder ByteLevel. The",
        "texts are ASCII, where the script's `re` version of the regex is exact.",
        "",
        "## Texts",
        "",
        "Debian's `/usr/share/common-licenses` (base-files), regular files sorted by",
        "name (symlinks GFDL, GPL, LGPL skipped: they repeat GFDL-1.3, GPL-3,",
        "LGPL-3). Each training file is tokenized alone and framed as BOS + text + EOS.",
        "",
        "| file | bytes | sha256 |",
        "|---|---:|---|",
    ] + [row(n, p) for n, p in train_files] + [
        "",
        "Held out (never seen in training; heldout.txt is a verbatim copy):",
        "",
        "| file | bytes | sha256 |",
        "|---|---:|---|",
    ] + [row(n, p) for n, p in held_files] + [
        "",
        "Licence: the texts are licence documents, which their authors allow to",
        "be copied and distributed verbatim; heldout.txt, the sentences in",
        "choices.jsonl and the phrases in exact.jsonl are quoted from them.",
        "",
        "## Files",
        "",
        "| file | bytes | sha256 |",
        "|---|---:|---|",
    ] + [row(n, os.path.join(out, n)) for n in outputs] + [""]
    with open(os.path.join(out, "PROVENANCE.md"), "w") as f:
        f.write("\n".join(lines))


if __name__ == "__main__":
    main()
