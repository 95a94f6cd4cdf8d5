"""scripts/llamaref.py: the reference pieces shared by the one-time data
scripts scripts/train-tiny-llama.py and scripts/llama-golden.py (Debian's
python3-torch and python3-numpy only; no transformers, no safetensors
package). Tests never run it: they read what the scripts committed.

- A Llama-family forward pass in plain torch with Hugging Face transformers'
  semantics (LlamaForCausalLM / MistralForCausalLM / Qwen2ForCausalLM with
  eager attention), capturing every module output under its HF name, as
  PyTorch forward hooks on the HF model would.
- A byte-level BPE tokenizer (GPT-2 / Llama 3 style) restricted to ASCII
  text, where its Split regex is exactly Llama 3's.
- A small safetensors reader and writer.
"""
import json
import math
import re
import struct

import numpy as np
import torch

# ---- safetensors -----------------------------------------------------------

ST_DTYPES = {"F32": (np.float32, 4), "F16": (np.float16, 2), "BF16": (np.uint16, 2),
             "F64": (np.float64, 8), "I32": (np.int32, 4), "I64": (np.int64, 8)}


def tensor_bytes(t, dtype):
    """(safetensors dtype name, little-endian bytes) of torch tensor t stored
    as dtype ("F32", "F16", "BF16", "F64", "I32"); BF16 rounds to nearest
    even as torch's .to(torch.bfloat16) does."""
    t = t.detach().contiguous()
    if dtype == "BF16":
        raw = t.to(torch.bfloat16).view(torch.int16).numpy().astype("<i2")
    elif dtype == "F16":
        raw = t.to(torch.float16).numpy().astype("<f2")
    elif dtype == "F32":
        raw = t.to(torch.float32).numpy().astype("<f4")
    elif dtype == "F64":
        raw = t.to(torch.float64).numpy().astype("<f8")
    elif dtype == "I32":
        raw = t.to(torch.int32).numpy().astype("<i4")
    else:
        raise ValueError("unsupported dtype " + dtype)
    return raw.tobytes()


def st_save(path, tensors, metadata=None):
    """Writes [(name, torch tensor, dtype)] to path as safetensors: header
    padded with spaces to a multiple of 8, tensors back to back in list
    order."""
    header, blobs, off = {}, [], 0
    if metadata:
        header["__metadata__"] = dict(metadata)
    for name, t, dtype in tensors:
        b = tensor_bytes(t, dtype)
        header[name] = {"dtype": dtype, "shape": list(t.shape),
                        "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)


def st_load(path):
    """{name: float32 torch tensor (integers stay int64)} of a safetensors
    file; BF16 and F16 are upcast exactly."""
    with open(path, "rb") as f:
        data = f.read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    base = 8 + n
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        npdt, size = ST_DTYPES[e["dtype"]]
        b, end = e["data_offsets"]
        a = np.frombuffer(data[base + b:base + end], dtype=np.dtype(npdt).newbyteorder("<"))
        if e["dtype"] == "BF16":
            a = (a.astype(np.uint32) << 16).view(np.float32)
        if a.dtype.kind == "f":
            out[name] = torch.from_numpy(a.astype(np.float32)).reshape(e["shape"])
        else:
            out[name] = torch.from_numpy(a.astype(np.int64)).reshape(e["shape"])
    return out


# ---- configuration -----------------------------------------------------------

def head_dim(cfg):
    return cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"]


def has_qkv_bias(cfg):
    """Qwen2 always has q/k/v biases; Llama when attention_bias."""
    return cfg["model_type"] == "qwen2" or bool(cfg.get("attention_bias", False))


def has_o_bias(cfg):
    """Llama's attention_bias also gives o_proj a bias; Qwen2's o_proj has none."""
    return cfg["model_type"] != "qwen2" and bool(cfg.get("attention_bias", False))


def param_shapes(cfg):
    """[(HF name, shape)] of every weight of cfg's checkpoint, in the order
    HF's state_dict lists them."""
    h, inter, v = cfg["hidden_size"], cfg["intermediate_size"], cfg["vocab_size"]
    hd, nh, nkv = head_dim(cfg), cfg["num_attention_heads"], cfg["num_key_value_heads"]
    bias = has_qkv_bias(cfg)
    out = [("model.embed_tokens.weight", (v, h))]
    for i in range(cfg["num_hidden_layers"]):
        p = "model.layers.%d." % i
        out.append((p + "self_attn.q_proj.weight", (nh * hd, h)))
        if bias:
            out.append((p + "self_attn.q_proj.bias", (nh * hd,)))
        out.append((p + "self_attn.k_proj.weight", (nkv * hd, h)))
        if bias:
            out.append((p + "self_attn.k_proj.bias", (nkv * hd,)))
        out.append((p + "self_attn.v_proj.weight", (nkv * hd, h)))
        if bias:
            out.append((p + "self_attn.v_proj.bias", (nkv * hd,)))
        out.append((p + "self_attn.o_proj.weight", (h, nh * hd)))
        if has_o_bias(cfg):
            out.append((p + "self_attn.o_proj.bias", (h,)))
        out.append((p + "mlp.gate_proj.weight", (inter, h)))
        out.append((p + "mlp.up_proj.weight", (inter, h)))
        out.append((p + "mlp.down_proj.weight", (h, inter)))
        out.append((p + "input_layernorm.weight", (h,)))
        out.append((p + "post_attention_layernorm.weight", (h,)))
    out.append(("model.norm.weight", (h,)))
    if not cfg.get("tie_word_embeddings", False):
        out.append(("lm_head.weight", (v, h)))
    return out


# ---- rotary embedding (HF modeling_rope_utils) -------------------------------

def rope_inv_freq(cfg, dtype=torch.float32):
    """inv_freq[head_dim/2] as HF computes it: in float32,
    1 / base ** (arange(0, d, 2).float() / d), then rope_scaling ("linear":
    divided by factor; "llama3": _compute_llama3_parameters). dtype float64
    gives the same formula in double (for the precision check)."""
    d = head_dim(cfg)
    base = float(cfg.get("rope_theta", 10000.0))
    inv = 1.0 / (base ** (torch.arange(0, d, 2, dtype=torch.int64).to(dtype) / d))
    rs = cfg.get("rope_scaling")
    if not rs:
        return inv
    kind = rs.get("rope_type", rs.get("type"))
    if kind == "default":
        return inv
    if kind == "linear":
        return inv / rs["factor"]
    if kind != "llama3":
        raise ValueError("rope_scaling %r not supported" % kind)
    factor = rs["factor"]
    low, high = rs["low_freq_factor"], rs["high_freq_factor"]
    old = rs["original_max_position_embeddings"]
    low_wavelen, high_wavelen = old / low, old / high
    wavelen = 2 * math.pi / inv
    inv_l = torch.where(wavelen > low_wavelen, inv / factor, inv)
    smooth = (old / wavelen - low) / (high - low)
    smoothed = (1 - smooth) * inv_l / factor + smooth * inv_l
    medium = ~(wavelen < high_wavelen) * ~(wavelen > low_wavelen)
    return torch.where(medium, smoothed, inv_l)


def rope_cos_sin(cfg, T, dtype=torch.float32):
    """cos, sin [T, head_dim] for positions 0..T-1 (HF LlamaRotaryEmbedding:
    freqs = pos.float() * inv_freq in float32, emb = cat(freqs, freqs),
    attention_scaling 1 for default/linear/llama3)."""
    inv = rope_inv_freq(cfg, dtype)
    pos = torch.arange(T, dtype=torch.int64).to(dtype)
    freqs = pos[:, None] * inv[None, :]
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos(), emb.sin()


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


# ---- forward ----------------------------------------------------------------

def rms_norm(x, w, eps):
    """HF LlamaRMSNorm: x * rsqrt(mean(x^2) + eps) in float32, times weight."""
    xf = x.to(torch.float32) if x.dtype != torch.float64 else x
    var = xf.pow(2).mean(-1, keepdim=True)
    return w * (xf * torch.rsqrt(var + eps)).to(x.dtype)


def linear(x, w, b=None):
    y = torch.matmul(x, w.t())
    return y + b if b is not None else y


def forward(cfg, W, ids, capture=None, dtype=torch.float32, kv_heads=None):
    """Logits [B, T, vocab] of ids [B, T] (int64) for weights W {HF name:
    tensor}, computed in dtype (weights upcast). When capture is a dict, it
    receives every module output under its HF name, shaped [B, T, F].
    kv_heads[j] is the KV head query head j reads: HF's repeat_kv
    (j // (heads / kv_heads)) unless given (to check that a wrong mapping
    shows in the reference)."""
    def cap(name, t):
        if capture is not None:
            capture[name] = t.detach().clone()
        return t

    Wc = {k: v.to(dtype) for k, v in W.items()}
    B, T = ids.shape
    nh, nkv, hd = cfg["num_attention_heads"], cfg["num_key_value_heads"], head_dim(cfg)
    eps = cfg["rms_norm_eps"]
    cos, sin = rope_cos_sin(cfg, T, dtype)
    causal = torch.ones(T, T, dtype=torch.bool).tril()
    x = cap("model.embed_tokens", Wc["model.embed_tokens.weight"][ids])
    for i in range(cfg["num_hidden_layers"]):
        p = "model.layers.%d." % i
        h = cap(p + "input_layernorm", rms_norm(x, Wc[p + "input_layernorm.weight"], eps))
        q = cap(p + "self_attn.q_proj", linear(h, Wc[p + "self_attn.q_proj.weight"],
                                               Wc.get(p + "self_attn.q_proj.bias")))
        k = cap(p + "self_attn.k_proj", linear(h, Wc[p + "self_attn.k_proj.weight"],
                                               Wc.get(p + "self_attn.k_proj.bias")))
        v = cap(p + "self_attn.v_proj", linear(h, Wc[p + "self_attn.v_proj.weight"],
                                               Wc.get(p + "self_attn.v_proj.bias")))
        q = q.view(B, T, nh, hd).transpose(1, 2)
        k = k.view(B, T, nkv, hd).transpose(1, 2)
        v = v.view(B, T, nkv, hd).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        if kv_heads is None:  # HF repeat_kv: query head j reads kv head j // rep
            kv_heads = torch.arange(nh) // (nh // nkv)
        k, v = k[:, kv_heads], v[:, kv_heads]
        s = torch.matmul(q, k.transpose(2, 3)) * (hd ** -0.5)
        s = s.masked_fill(~causal, torch.finfo(dtype).min)
        a = torch.softmax(s, dim=-1, dtype=dtype)
        o = torch.matmul(a, v).transpose(1, 2).reshape(B, T, nh * hd)
        o = cap(p + "self_attn.o_proj", linear(o, Wc[p + "self_attn.o_proj.weight"],
                                               Wc.get(p + "self_attn.o_proj.bias")))
        x = x + o
        h = cap(p + "post_attention_layernorm",
                rms_norm(x, Wc[p + "post_attention_layernorm.weight"], eps))
        g = cap(p + "mlp.gate_proj", linear(h, Wc[p + "mlp.gate_proj.weight"]))
        u = cap(p + "mlp.up_proj", linear(h, Wc[p + "mlp.up_proj.weight"]))
        d = cap(p + "mlp.down_proj",
                linear(torch.nn.functional.silu(g) * u, Wc[p + "mlp.down_proj.weight"]))
        x = cap(p[:-1], x + d)
    x = cap("model.norm", rms_norm(x, Wc["model.norm.weight"], eps))
    head = Wc.get("lm_head.weight", Wc["model.embed_tokens.weight"])
    return cap("lm_head", linear(x, head))


def capture_order(cfg):
    """HF module names in the order the forward produces them."""
    names = ["model.embed_tokens"]
    for i in range(cfg["num_hidden_layers"]):
        p = "model.layers.%d." % i
        names += [p + "input_layernorm", p + "self_attn.q_proj", p + "self_attn.k_proj",
                  p + "self_attn.v_proj", p + "self_attn.o_proj",
                  p + "post_attention_layernorm", p + "mlp.gate_proj", p + "mlp.up_proj",
                  p + "mlp.down_proj", p[:-1]]
    return names + ["model.norm", "lm_head"]


# ---- evaluation -----------------------------------------------------------------

def nll_tokens(cfg, W, ids):
    """Per-token negative log-likelihood [T-1] (double) of one sequence ids
    [T]: row r of the float32 logits predicts ids[r + 1]."""
    with torch.no_grad():
        logits = forward(cfg, W, ids[None])[0]
    lp = torch.log_softmax(logits.double(), dim=-1)
    return -lp[:-1].gather(1, ids[1:, None])[:, 0]


def llamacpp_ppl(cfg, W, ids, ctx):
    """llama.cpp's perplexity of ids (BOS + the text's tokens): len // ctx
    chunks of ctx tokens, each chunk's first token replaced by BOS, logits
    rows ctx/2 .. ctx-2 scoring tokens ctx/2+1 .. ctx-1; the uncertainty as
    llama.cpp prints it, ppl * sqrt(var(nll) / (n - 1))."""
    nchunk = len(ids) // ctx
    nll = []
    for c in range(nchunk):
        w = ids[c * ctx:(c + 1) * ctx].clone()
        w[0] = cfg["bos_token_id"]
        nll.append(nll_tokens(cfg, W, w)[ctx // 2:])
    nll = torch.cat(nll)
    n, mean = len(nll), float(nll.mean())
    unc = math.sqrt(max(0.0, float((nll * nll).mean()) - mean * mean) / (n - 1))
    return {"ctx": ctx, "chunks": nchunk, "scored_tokens": n, "nll_mean": mean,
            "ppl": math.exp(mean), "ppl_uncertainty": math.exp(mean) * unc}


def choice_scores(cfg, W, tok, context, choices):
    """[(summed log-probability, tokens)] of each choice after BOS +
    context: the reference for `qprobe eval --choices`."""
    c = tok.encode(context, bos=True)
    out = []
    for ch in choices:
        x = tok.encode(ch)
        assert tok.encode(context + ch) == c[1:] + x
        nll = nll_tokens(cfg, W, torch.tensor(c + x))
        out.append((-float(nll[len(c) - 1:].sum()), len(x)))
    return out


def greedy(cfg, W, ids, n):
    """n greedy tokens after ids (a full forward per token: the reference
    for a KV-cache generator)."""
    ids = list(ids)
    out = []
    with torch.no_grad():
        for _ in range(n):
            logits = forward(cfg, W, torch.tensor([ids]))[0, -1]
            t = int(torch.argmax(logits))
            out.append(t)
            ids.append(t)
    return out


# ---- byte-level BPE ------------------------------------------------------------

# Llama 3's pre-tokenizer regex, as written into tokenizer.json.
LLAMA3_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
                r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
# The same on ASCII text with Python's re: \p{L} = [A-Za-z], \p{N} = [0-9],
# \s = [ \t\n\v\f\r] (Oniguruma's ASCII white space; Python's \s would also
# take \x1c-\x1f).
_S = r" \t\n\x0b\x0c\r"
ASCII_SPLIT = re.compile(
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\nA-Za-z0-9]?[A-Za-z]+|[0-9]{1,3}|"
    r" ?[^" + _S + r"A-Za-z0-9]+[\r\n]*|[" + _S + r"]*[\r\n]+|[" + _S + r"]+(?![^" + _S +
    r"])|[" + _S + r"]+")


def bytes_to_unicode():
    """GPT-2's byte -> printable character table, in id order: the 188
    printable Latin-1 bytes keep their code point, the other 68 map to
    U+0100 upwards."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + \
        list(range(0xAE, 0x100))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return [(b, chr(c)) for b, c in zip(bs, cs)]


BYTE_TABLE = bytes_to_unicode()
B2U = {b: c for b, c in BYTE_TABLE}
U2B = {c: b for b, c in BYTE_TABLE}


def pretokenize(text):
    """Pre-tokens of ASCII text, each mapped to byte-level characters."""
    if not text.isascii():
        raise ValueError("the reference tokenizer handles ASCII text only")
    return ["".join(B2U[b] for b in piece.encode()) for piece in ASCII_SPLIT.findall(text)]


class BPE:
    """Byte-level BPE with HF tokenizers' semantics for ignore_merges=True:
    a pre-token found whole in the vocabulary is one token; otherwise the
    lowest-ranked adjacent pair is merged until none is left."""

    def __init__(self, vocab, merges, specials):
        self.vocab = vocab                      # token string -> id
        self.ranks = {m: r for r, m in enumerate(merges)}
        self.specials = specials                # special token string -> id
        self.inv = {i: s for s, i in vocab.items()}
        self.inv.update({i: s for s, i in specials.items()})
        self.cache = {}

    def word(self, w):
        if w in self.vocab:
            return [self.vocab[w]]
        if w in self.cache:
            return self.cache[w]
        parts = list(w)
        while len(parts) > 1:
            best = min(range(len(parts) - 1),
                       key=lambda i: (self.ranks.get((parts[i], parts[i + 1]), 1 << 30), i))
            pair = (parts[best], parts[best + 1])
            if pair not in self.ranks:
                break
            out, i = [], 0
            while i < len(parts):  # every occurrence, left to right
                if i + 1 < len(parts) and (parts[i], parts[i + 1]) == pair:
                    out.append(parts[i] + parts[i + 1])
                    i += 2
                else:
                    out.append(parts[i])
                    i += 1
            parts = out
        ids = [self.vocab[p] for p in parts]
        self.cache[w] = ids
        return ids

    def encode(self, text, bos=False):
        """Ids of text, special tokens written in it recognized (as HF's
        added tokens: exact matches, split out before pre-tokenizing);
        bos=True prepends <|begin_of_text|> as the post-processor does."""
        ids = [self.specials["<|begin_of_text|>"]] if bos else []
        alt = "|".join(re.escape(s) for s in sorted(self.specials, key=len, reverse=True))
        for piece in re.split("(" + alt + ")", text):
            if piece in self.specials:
                ids.append(self.specials[piece])
                continue
            for w in pretokenize(piece):
                ids += self.word(w)
        return ids

    def decode(self, ids):
        out = bytearray()
        for i in ids:
            s = self.inv[i]
            if s in self.specials:
                out += s.encode()
            else:
                out += bytes(U2B[c] for c in s)
        return out.decode("utf-8", errors="replace")
