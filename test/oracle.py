#!/usr/bin/python3
"""Independent float64 PyTorch reference for the C oracle case files.

Written from test/ORACLE.md (model, objective switches, case-file format) and
the method's statement (README.md, "The method"; the project's copy of it was
../shared/METHOD.md) only - never from the C code. "METHOD.md" below means that text.

    oracle.py check FILE [--label TEXT]
        Parse a case file written by test/oracle_case, recompute everything in
        float64 with torch autograd and compare with the C values.
        Exit 0: all quantities within tolerance (last line "PASS <label>").
        Exit 1: some quantity out of tolerance (last line "FAIL <label>").
        Exit 2: the file is malformed (wrong magic, version, length, ...).
        Exit 3: a confidence lies within 1e-4 of tau, so a float32/float64
                difference could flip a mask; the driver retries another seed.
    oracle.py selftest
        A few hand-computed checks of the helper functions.

How every objective is turned into autograd: each one is "a per-token
coefficient times the cross-entropy gradient" (METHOD.md). We compute
nll = -log p_theta(target) with autograd, and a coefficient `coef` from
*detached* quantities (p, masks, window weight w_n, EAFT weight), and take
    loss = sum(coef * nll) / N.
Its gradient w.r.t. the logits is coef * (softmax - onehot) / N, exactly the
spec. ASFT adds beta * KL(p_ref || p_theta) / N with p_ref from a frozen float64
copy of the initial parameters; its logit gradient is beta * (p_theta - p_ref) / N.
"""
import argparse
import math
import sys

import numpy as np
import torch

DT = torch.float64
MAGIC = b"CUSETORC"
VERSION = 1
OBJECTIVES = ["sft", "dft", "profit", "eaft", "asft", "cuset"]
GAP_LIMIT = 1e-4          # mask-flip guard: min |p - tau| must be at least this
TOL_FORWARD = 1e-5        # logits, loss, ce
TOL_GRAD = 1e-4           # gradients, grad_norm0
TOL_PARAM = 1e-4          # final parameters
TOL_ZERO = 1e-7           # absolute tolerance when the reference is all zero


class CaseError(Exception):
    """The case file does not follow the format in ORACLE.md."""


# ---------------------------------------------------------------------------
# Parameters: names, shapes and weight-decay flags, in the table's order.
# ---------------------------------------------------------------------------

def param_table(cfg):
    """List of (name, shape, weight_decay) in the order of ORACLE.md's table."""
    Vp, maxT, L, C = cfg["Vp"], cfg["maxT"], cfg["L"], cfg["C"]
    return [
        ("wte", (Vp, C), True),
        ("wpe", (maxT, C), True),
        ("ln1w", (L, C), False),
        ("ln1b", (L, C), False),
        ("qkvw", (L, 3 * C, C), True),
        ("qkvb", (L, 3 * C), False),
        ("attprojw", (L, C, C), True),
        ("attprojb", (L, C), False),
        ("ln2w", (L, C), False),
        ("ln2b", (L, C), False),
        ("fcw", (L, 4 * C, C), True),
        ("fcb", (L, 4 * C), False),
        ("fcprojw", (L, C, 4 * C), True),
        ("fcprojb", (L, C), False),
        ("lnfw", (C,), False),
        ("lnfb", (C,), False),
    ]


def num_params(cfg):
    return sum(int(np.prod(shape)) for _, shape, _ in param_table(cfg))


def split_params(flat, cfg):
    """Cut a flat float array into named float64 tensors (table order)."""
    out, pos = {}, 0
    for name, shape, _ in param_table(cfg):
        n = int(np.prod(shape))
        out[name] = torch.tensor(flat[pos:pos + n], dtype=DT).reshape(shape)
        pos += n
    return out


# ---------------------------------------------------------------------------
# Case-file parsing (little-endian, no padding between fields).
# ---------------------------------------------------------------------------

HEADER_INTS1 = ["V", "Vp", "maxT", "L", "NH", "C", "B", "T", "steps", "accum",
                "objective", "conf", "cuda", "rew", "l"]
HEADER_FLOATS1 = ["tau", "lam", "alpha", "beta", "max_lr", "min_lr"]
HEADER_INTS2 = ["warmup", "total"]
HEADER_FLOATS2 = ["b1", "b2", "eps", "wd", "grad_clip"]


class Reader:
    """Sequential little-endian reader over a bytes object."""

    def __init__(self, data):
        self.data, self.pos = data, 0

    def take(self, dtype, count):
        nbytes = np.dtype(dtype).itemsize * count
        if self.pos + nbytes > len(self.data):
            raise CaseError("file ends early (at byte %d, need %d more)"
                            % (self.pos, nbytes))
        arr = np.frombuffer(self.data, dtype=dtype, count=count, offset=self.pos)
        self.pos += nbytes
        return arr.copy()  # copy: aligned, writable


def read_header(r):
    """Magic, version and the scalar configuration."""
    magic = bytes(r.take("u1", 8))
    if magic != MAGIC:
        raise CaseError("bad magic %r (want %r)" % (magic, MAGIC))
    version = int(r.take("<i4", 1)[0])
    if version != VERSION:
        raise CaseError("unsupported version %d (want %d)" % (version, VERSION))
    cfg = {}
    for name, v in zip(HEADER_INTS1, r.take("<i4", len(HEADER_INTS1))):
        cfg[name] = int(v)
    # float32 values, kept exactly (as float64) for the float64 reference
    for name, v in zip(HEADER_FLOATS1, r.take("<f4", len(HEADER_FLOATS1))):
        cfg[name] = float(v)
    for name, v in zip(HEADER_INTS2, r.take("<i4", len(HEADER_INTS2))):
        cfg[name] = int(v)
    for name, v in zip(HEADER_FLOATS2, r.take("<f4", len(HEADER_FLOATS2))):
        cfg[name] = float(v)
    return cfg


def validate_config(cfg):
    """Reject configurations the model or the objective cannot mean."""
    def need(cond, msg):
        if not cond:
            raise CaseError("bad header: " + msg)
    for k in ["V", "Vp", "maxT", "L", "NH", "C", "B", "T", "steps", "accum"]:
        need(cfg[k] >= 1, "%s = %d must be >= 1" % (k, cfg[k]))
    need(cfg["Vp"] % 64 == 0 and cfg["V"] <= cfg["Vp"] < cfg["V"] + 64,
         "Vp = %d is not V = %d padded to a multiple of 64" % (cfg["Vp"], cfg["V"]))
    need(cfg["C"] % cfg["NH"] == 0, "C = %d not divisible by NH = %d" % (cfg["C"], cfg["NH"]))
    need(cfg["T"] <= cfg["maxT"], "T = %d > maxT = %d" % (cfg["T"], cfg["maxT"]))
    need(0 <= cfg["objective"] < len(OBJECTIVES), "objective = %d" % cfg["objective"])
    for k in ["conf", "cuda", "rew"]:
        need(cfg[k] in (0, 1), "%s = %d must be 0 or 1" % (k, cfg[k]))
    if OBJECTIVES[cfg["objective"]] == "cuset" and cfg["rew"]:
        need(cfg["l"] >= 1, "window l = %d must be >= 1" % cfg["l"])
    need(cfg["warmup"] >= 0 and cfg["total"] >= 1, "warmup/total")


def expected_size(cfg):
    """Exact byte length of a case file with this header."""
    BT, P = cfg["B"] * cfg["T"], num_params(cfg)
    header = 8 + 4 + 4 * (len(HEADER_INTS1) + len(HEADER_FLOATS1)
                          + len(HEADER_INTS2) + len(HEADER_FLOATS2))
    batches = cfg["steps"] * cfg["accum"] * BT * (4 + 4 + 1 + 1)
    floats = P + BT * cfg["Vp"] + 2 * cfg["steps"] + P + 1 + P + 1
    return header + batches + 4 * floats


def read_batches(r, cfg):
    """batches[s][a] = dict(inputs, targets, is_target, is_cuda), each (B, T)."""
    B, T = cfg["B"], cfg["T"]
    batches = []
    for s in range(cfg["steps"]):
        step = []
        for a in range(cfg["accum"]):
            mb = {
                "inputs": r.take("<i4", B * T).reshape(B, T),
                "targets": r.take("<i4", B * T).reshape(B, T),
                "is_target": r.take("u1", B * T).reshape(B, T),
                "is_cuda": r.take("u1", B * T).reshape(B, T),
            }
            validate_batch(mb, cfg, "step %d micro-batch %d" % (s, a))
            step.append(mb)
        batches.append(step)
    return batches


def validate_batch(mb, cfg, where):
    """Token ids in range, 0/1 flags, target positions contiguous in each row."""
    V = cfg["V"]
    if mb["inputs"].min() < 0 or mb["inputs"].max() >= V:
        raise CaseError("%s: input id outside [0, V)" % where)
    for k in ["is_target", "is_cuda"]:
        if mb[k].max() > 1:
            raise CaseError("%s: %s has values other than 0/1" % (where, k))
    tmask = mb["is_target"] == 1
    tt = mb["targets"][tmask]
    if tt.size and (tt.min() < 0 or tt.max() >= V):
        raise CaseError("%s: target id outside [0, V) at a target position" % where)
    for b, row in enumerate(mb["is_target"]):
        idx = np.nonzero(row)[0]
        if idx.size and idx[-1] - idx[0] + 1 != idx.size:
            raise CaseError("%s row %d: target positions not contiguous" % (where, b))


def parse_case(path):
    """Read and check a whole case file; returns a dict of numpy arrays/ints."""
    with open(path, "rb") as f:
        data = f.read()
    r = Reader(data)
    cfg = read_header(r)
    validate_config(cfg)
    want = expected_size(cfg)
    if len(data) != want:
        raise CaseError("file is %d bytes, header implies %d" % (len(data), want))
    P, BT, steps = num_params(cfg), cfg["B"] * cfg["T"], cfg["steps"]
    case = {"cfg": cfg}
    case["batches"] = read_batches(r, cfg)
    case["params0"] = r.take("<f4", P)
    case["logits"] = r.take("<f4", BT * cfg["Vp"])
    case["loss"] = r.take("<f4", steps)
    case["ce"] = r.take("<f4", steps)
    case["grads"] = r.take("<f4", P)
    case["grad_norm0"] = r.take("<f4", 1)
    case["params_final"] = r.take("<f4", P)
    case["min_gap"] = float(r.take("<f4", 1)[0])
    assert r.pos == len(data)
    return case


# ---------------------------------------------------------------------------
# The model (ORACLE.md "The model"), float64, layers and heads looped plainly.
# ---------------------------------------------------------------------------

def layer_norm(x, w, b):
    """(x - mean) / sqrt(var + 1e-5) * w + b over the last dim, biased var."""
    mean = x.mean(dim=-1, keepdim=True)
    var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + 1e-5) * w + b


def gelu(u):
    """tanh approximation of GELU."""
    return 0.5 * u * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (u + 0.044715 * u ** 3)))


def causal_self_attention(q, k, v, NH):
    """q, k, v: (B, T, C). Per head j (columns j*hs..(j+1)*hs-1): causal softmax."""
    B, T, C = q.shape
    hs = C // NH
    causal = torch.ones(T, T, dtype=torch.bool).tril()   # position t sees 0..t
    heads = []
    for j in range(NH):
        cols = slice(j * hs, (j + 1) * hs)
        qj, kj, vj = q[:, :, cols], k[:, :, cols], v[:, :, cols]
        scores = qj @ kj.transpose(1, 2) / math.sqrt(hs)   # (B, T, T)
        scores = scores.masked_fill(~causal, float("-inf"))
        att = torch.softmax(scores, dim=-1)
        heads.append(att @ vj)                              # (B, T, hs)
    return torch.cat(heads, dim=-1)                         # head j -> its columns


def forward(P, cfg, inputs):
    """Logits (B, T, Vp) for int token ids inputs (B, T)."""
    C, NH = cfg["C"], cfg["NH"]
    T = inputs.shape[1]
    idx = torch.as_tensor(inputs, dtype=torch.long)
    x = P["wte"][idx] + P["wpe"][0:T]
    for l in range(cfg["L"]):
        h = layer_norm(x, P["ln1w"][l], P["ln1b"][l])
        qkv = h @ P["qkvw"][l].T + P["qkvb"][l]
        q, k, v = qkv[..., 0:C], qkv[..., C:2 * C], qkv[..., 2 * C:3 * C]
        y = causal_self_attention(q, k, v, NH)
        x = x + y @ P["attprojw"][l].T + P["attprojb"][l]
        h = layer_norm(x, P["ln2w"][l], P["ln2b"][l])
        u = h @ P["fcw"][l].T + P["fcb"][l]
        x = x + gelu(u) @ P["fcprojw"][l].T + P["fcprojb"][l]
    x = layer_norm(x, P["lnfw"], P["lnfb"])
    return x @ P["wte"].T


# ---------------------------------------------------------------------------
# Objective helpers (METHOD.md equations, ORACLE.md switches).
# ---------------------------------------------------------------------------

def window_bounds(j, T_n, l):
    """METHOD.md eq. 5: the window R_{n,j} of target position j (1-based, inclusive),
    max(1, j - floor(l/2)) .. min(T_n, j + ceil(l/2) - 1), for every T_n."""
    return max(1, j - math.floor(l / 2)), min(T_n, j + math.ceil(l / 2) - 1)


def hardest_window_mean(p, l):
    """METHOD.md eqs. 6-7: C_n = min over j = 1..T_n of the mean of p over R_{n,j}.

    p: 1-D float64 tensor, the confidences of one row's target tokens in order. Every
    window comes from eq. 5, clipped ones included, whatever T_n is."""
    T_n = p.shape[0]
    means = [p[lo - 1:hi].mean() for lo, hi in (window_bounds(j, T_n, l) for j in range(1, T_n + 1))]
    return torch.stack(means).min()


def top_k_entropy(logits_v, k):
    """Entropy of the softmax renormalised over the k largest logits (EAFT)."""
    top = torch.topk(logits_v, k, dim=-1).values
    logq = torch.log_softmax(top, dim=-1)
    return -(logq.exp() * logq).sum(dim=-1)


def cuset_sample_weight(p, is_target, l):
    """w_n = 1 - C_n per row (B,), from detached p (B, T); rows with T_n = 0 -> 0."""
    w = torch.zeros(p.shape[0], dtype=DT)
    for b in range(p.shape[0]):
        p_row = p[b][is_target[b]]           # target positions are contiguous, in order
        if p_row.numel() > 0:
            w[b] = 1.0 - hardest_window_mean(p_row, l)
    return w


def token_coefficients(p, logits_v, mb, cfg):
    """Constant per-token coefficient (B, T); only target positions matter."""
    obj = OBJECTIVES[cfg["objective"]]
    if obj == "sft":
        return torch.ones_like(p)
    if obj in ("dft", "asft"):
        return p
    if obj == "profit":
        return (p >= cfg["tau"]).to(DT)
    if obj == "eaft":
        H = top_k_entropy(logits_v, min(20, cfg["V"]))
        return (H / 3.0) ** cfg["alpha"]
    # cuset: hybrid mask M times sample weight w_n
    M = (p > cfg["tau"]).to(DT) if cfg["conf"] else torch.ones_like(p)
    if cfg["cuda"]:
        M = M + cfg["lam"] * torch.as_tensor(mb["is_cuda"], dtype=DT)
    if cfg["rew"]:
        is_t = torch.as_tensor(mb["is_target"] == 1)
        M = M * cuset_sample_weight(p, is_t, cfg["l"])[:, None]
    return M


def uses_tau(cfg):
    obj = OBJECTIVES[cfg["objective"]]
    return obj == "profit" or (obj == "cuset" and cfg["conf"] == 1)


def micro_batch_loss(P, P_ref, mb, cfg, N):
    """Scalar loss of one micro-batch (already divided by the step's N).

    Returns (loss, logits, sum of -log p over target positions, p at targets)."""
    V = cfg["V"]
    logits = forward(P, cfg, mb["inputs"])
    logits_v = logits[..., 0:V]                 # padding columns never enter
    logp = torch.log_softmax(logits_v, dim=-1)
    is_t = torch.as_tensor(mb["is_target"] == 1)
    tgt = torch.as_tensor(np.where(mb["is_target"] == 1, mb["targets"], 0), dtype=torch.long)
    nll = -logp.gather(-1, tgt[..., None]).squeeze(-1)      # (B, T), autograd
    nll = torch.where(is_t, nll, torch.zeros_like(nll))
    p = torch.exp(-nll).detach()                            # sg(c_{n,t})
    coef = token_coefficients(p, logits_v.detach(), mb, cfg).detach()
    coef = torch.where(is_t, coef, torch.zeros_like(coef))
    loss = (coef * nll).sum() / N
    if OBJECTIVES[cfg["objective"]] == "asft":
        loss = loss + cfg["beta"] * kl_to_reference(P_ref, mb, cfg, logp, is_t) / N
    return loss, logits, nll.sum().detach(), p[is_t]


def kl_to_reference(P_ref, mb, cfg, logp, is_t):
    """Sum over target positions of KL(p_ref || p_theta) over the V real columns."""
    with torch.no_grad():
        logp_ref = torch.log_softmax(forward(P_ref, cfg, mb["inputs"])[..., 0:cfg["V"]], dim=-1)
    kl = (logp_ref.exp() * (logp_ref - logp)).sum(dim=-1)   # (B, T)
    return kl[is_t].sum()


# ---------------------------------------------------------------------------
# Optimizer (ORACLE.md "The optimizer step").
# ---------------------------------------------------------------------------

def learning_rate(s, cfg):
    """Linear warmup, then cosine from max_lr to min_lr over total - warmup."""
    max_lr, min_lr, warmup, total = cfg["max_lr"], cfg["min_lr"], cfg["warmup"], cfg["total"]
    if s < warmup:
        return max_lr * (s + 1) / warmup
    frac = (s - warmup) / max(1, total - warmup)
    return min_lr + 0.5 * (max_lr - min_lr) * (1.0 + math.cos(math.pi * frac))


def global_norm(grads):
    return torch.sqrt(sum((g ** 2).sum() for g in grads.values()))


def clip_gradients(grads, cfg):
    """Scale all gradients by grad_clip / g when g > grad_clip > 0."""
    g = global_norm(grads)
    if cfg["grad_clip"] > 0 and g > cfg["grad_clip"]:
        for name in grads:
            grads[name] = grads[name] * (cfg["grad_clip"] / g)
    return g


def adamw_update(P, grads, m, v, s, cfg):
    """One AdamW step in place on the float64 tensors of P (s is 0-based)."""
    t = s + 1
    lr, b1, b2, eps, wd = learning_rate(s, cfg), cfg["b1"], cfg["b2"], cfg["eps"], cfg["wd"]
    with torch.no_grad():
        for name, _, decay in param_table(cfg):
            g = grads[name]
            m[name] = b1 * m[name] + (1 - b1) * g
            v[name] = b2 * v[name] + (1 - b2) * g * g
            mhat = m[name] / (1 - b1 ** t)
            vhat = v[name] / (1 - b2 ** t)
            update = mhat / (torch.sqrt(vhat) + eps)
            if decay:
                update = update + wd * P[name]
            P[name] -= lr * update


# ---------------------------------------------------------------------------
# The whole reference run.
# ---------------------------------------------------------------------------

def run_reference(case):
    """Replay the case in float64. Returns a dict of reference values."""
    cfg = case["cfg"]
    P = split_params(case["params0"].astype(np.float64), cfg)
    P_ref = {k: t.clone() for k, t in P.items()}              # frozen initial model
    for t in P.values():
        t.requires_grad_(True)
    m = {k: torch.zeros_like(t) for k, t in P.items()}
    v = {k: torch.zeros_like(t) for k, t in P.items()}
    out = {"loss": [], "ce": [], "min_gap": math.inf}
    for s, step in enumerate(case["batches"]):
        N = sum(int((mb["is_target"] == 1).sum()) for mb in step)
        N_div = max(N, 1)          # a step without target tokens has loss 0
        for t in P.values():
            t.grad = None
        loss_sum, nll_sum = 0.0, 0.0
        for a, mb in enumerate(step):
            loss, logits, nll, p_t = micro_batch_loss(P, P_ref, mb, cfg, N_div)
            loss.backward()        # .grad accumulates over micro-batches
            loss_sum += loss.item()
            nll_sum += nll.item()
            if uses_tau(cfg) and p_t.numel() > 0:
                out["min_gap"] = min(out["min_gap"], (p_t - cfg["tau"]).abs().min().item())
            if s == 0 and a == 0:
                out["logits"] = logits.detach().reshape(-1)
        out["loss"].append(loss_sum)
        out["ce"].append(nll_sum / N_div)
        grads = {k: t.grad.detach().clone() for k, t in P.items()}
        if s == 0:
            out["grads"] = {k: g.clone() for k, g in grads.items()}
        g = clip_gradients(grads, cfg)
        if s == 0:
            out["grad_norm0"] = g.reshape(1)
        adamw_update(P, grads, m, v, s, cfg)
    out["final"] = {k: t.detach() for k, t in P.items()}
    out["loss"] = torch.tensor(out["loss"], dtype=DT)
    out["ce"] = torch.tensor(out["ce"], dtype=DT)
    return out


# ---------------------------------------------------------------------------
# Comparison.
# ---------------------------------------------------------------------------

def compare(name, c_values, ref, tol):
    """Print one line; relative error, or absolute error for an all-zero reference."""
    c = torch.as_tensor(np.asarray(c_values, dtype=np.float64)).reshape(-1)
    ref = ref.detach().reshape(-1).to(DT)
    ref_norm = ref.norm().item()
    err = (c - ref).norm().item()
    if ref_norm < 1e-12:
        kind, tol = "abserr", TOL_ZERO
    else:
        kind, err = "relerr", err / ref_norm
    ok = err <= tol                     # False for NaN
    print("  %-16s %s=%.2e  tol=%.0e  %s" % (name, kind, err, tol, "ok" if ok else "FAIL"))
    return ok


def check_padding_zero(name, flat, cfg):
    """wte rows V..Vp-1 of a flat C parameter/gradient vector must be exactly 0."""
    wte = np.asarray(flat[:cfg["Vp"] * cfg["C"]]).reshape(cfg["Vp"], cfg["C"])
    pad = wte[cfg["V"]:]
    worst = float(np.abs(pad).max()) if pad.size else 0.0
    ok = bool(np.all(pad == 0))
    print("  %-16s max|x|=%.2e  exact 0  %s" % (name, worst, "ok" if ok else "FAIL"))
    return ok


def compare_qkv_bias(case, cfg, c_grads, c_final, ref):
    """The key bias (columns C..2C-1 of qkvb) gets an analytically zero gradient: adding
    the same vector to every key adds the same score q.b to every position, which the
    softmax ignores. The float64 reference therefore leaves it where it started, while
    float32 rounding leaves a gradient of ~1e-7 of the others, which Adam divides by
    its own tiny sqrt(v) + eps and so turns into steps of up to ~lr. So: the query and
    value biases are compared like every parameter; for the key bias we check that
    both gradients are noise-sized and that its drift stays within steps * max_lr."""
    C = cfg["C"]
    key = torch.zeros(3 * C, dtype=torch.bool)
    key[C:2 * C] = True
    key = key.repeat(cfg["L"])
    c_final = torch.as_tensor(np.asarray(c_final["qkvb"], dtype=np.float64)).reshape(-1)
    c_grad = torch.as_tensor(np.asarray(c_grads["qkvb"], dtype=np.float64)).reshape(-1)
    ref_final = ref["final"]["qkvb"].detach().reshape(-1)
    ref_grad = ref["grads"]["qkvb"].detach().reshape(-1)
    oks = [compare("final.qkvb.q,v", c_final[~key], ref_final[~key], TOL_PARAM)]
    scale = max(float(ref["grad_norm0"]), 1e-30)
    g_ref, g_c = ref_grad[key].abs().max().item(), c_grad[key].abs().max().item()
    drift, bound = (c_final[key] - ref_final[key]).abs().max().item(), cfg["steps"] * cfg["max_lr"]
    ok = g_ref <= 1e-12 * scale and g_c <= 1e-5 * scale and drift <= bound
    print("  %-16s |g64|=%.1e |g32|=%.1e (grad norm %.1e) drift=%.1e <= %.1e  %s"
          % ("final.qkvb.k", g_ref, g_c, scale, drift, bound, "ok" if ok else "FAIL"))
    return oks + [ok]


def compare_all(case, ref):
    cfg = case["cfg"]
    oks = [compare("logits", case["logits"], ref["logits"], TOL_FORWARD),
           compare("loss", case["loss"], ref["loss"], TOL_FORWARD),
           compare("ce", case["ce"], ref["ce"], TOL_FORWARD)]
    c_grads = split_params(case["grads"], cfg)
    for name, _, _ in param_table(cfg):
        oks.append(compare("grad." + name, c_grads[name], ref["grads"][name], TOL_GRAD))
    oks.append(compare("grad_norm0", case["grad_norm0"], ref["grad_norm0"], TOL_GRAD))
    c_final = split_params(case["params_final"], cfg)
    for name, _, _ in param_table(cfg):
        if name == "qkvb":
            oks += compare_qkv_bias(case, cfg, c_grads, c_final, ref)
            continue
        oks.append(compare("final." + name, c_final[name], ref["final"][name], TOL_PARAM))
    oks.append(check_padding_zero("grad.wte_pad", case["grads"], cfg))
    oks.append(check_padding_zero("final.wte_pad", case["params_final"], cfg))
    return all(oks)


def describe(cfg):
    obj = OBJECTIVES[cfg["objective"]]
    extra = ""
    if obj == "cuset":
        extra = " conf=%d cuda=%d rew=%d l=%d" % (cfg["conf"], cfg["cuda"], cfg["rew"], cfg["l"])
    return ("objective=%s%s V=%d Vp=%d maxT=%d L=%d NH=%d C=%d B=%d T=%d steps=%d accum=%d"
            % (obj, extra, cfg["V"], cfg["Vp"], cfg["maxT"], cfg["L"], cfg["NH"], cfg["C"],
               cfg["B"], cfg["T"], cfg["steps"], cfg["accum"]))


def cmd_check(path, label):
    label = label or path
    try:
        case = parse_case(path)
    except (CaseError, OSError) as e:
        print("ERROR %s: %s" % (label, e))
        return 2
    cfg = case["cfg"]
    print("case %s: %s" % (label, describe(cfg)))
    ref = run_reference(case)
    if uses_tau(cfg):
        print("  min|p - tau|: reference %.3e, C %.3e" % (ref["min_gap"], case["min_gap"]))
        if ref["min_gap"] < GAP_LIMIT:
            print("SKIP %s: a confidence lies within 1e-4 of tau" % label)
            return 3
    ok = compare_all(case, ref)
    print(("PASS %s" if ok else "FAIL %s") % label)
    return 0 if ok else 1


# ---------------------------------------------------------------------------
# Self-test of the helpers on hand-computed examples.
# ---------------------------------------------------------------------------

def selftest():
    failures = []

    def expect(what, got, want):
        good = abs(got - want) < 1e-12 if isinstance(want, float) else got == want
        print("  %-44s %s" % (what, "ok" if good else "FAIL (got %r, want %r)" % (got, want)))
        if not good:
            failures.append(what)

    # window bounds: l = 3 (odd) -> j-1 .. j+1; l = 4 (even) -> j-2 .. j+1; clipped to 1..T_n
    expect("l=3 j=1 T=5 (clipped left)", window_bounds(1, 5, 3), (1, 2))
    expect("l=3 j=3 T=5", window_bounds(3, 5, 3), (2, 4))
    expect("l=3 j=5 T=5 (clipped right)", window_bounds(5, 5, 3), (4, 5))
    expect("l=4 j=1 T=5 (clipped left)", window_bounds(1, 5, 4), (1, 2))
    expect("l=4 j=3 T=5", window_bounds(3, 5, 4), (1, 4))
    expect("l=4 j=5 T=5 (clipped right)", window_bounds(5, 5, 4), (3, 5))
    expect("l=1 j=2 T=5 (single token)", window_bounds(2, 5, 1), (2, 2))

    p = torch.tensor([0.9, 0.1, 0.5, 0.8, 0.2], dtype=DT)
    # l = 3 windows: [.9,.1] .5 | [.9,.1,.5] .5 | [.1,.5,.8] .4667 | [.5,.8,.2] .5 | [.8,.2] .5
    expect("min window mean l=3", hardest_window_mean(p, 3).item(), 1.4 / 3)
    # l = 2 windows: [.9] | [.9,.1] .5 | [.1,.5] .3 | [.5,.8] .65 | [.8,.2] .5
    expect("min window mean l=2", hardest_window_mean(p, 2).item(), 0.3)
    # l = 4 windows: [.9,.1] .5 | [.9,.1,.5] | [.9,.1,.5,.8] .575 | [.1,.5,.8,.2] .4 | [.5,.8,.2] .5
    expect("min window mean l=4", hardest_window_mean(p, 4).item(), 0.4)
    expect("min window mean l=1 (min p)", hardest_window_mean(p, 1).item(), 0.1)
    # l = 6 > T_n = 5 > ceil(6/2): clipped windows 1..3 .5 | 1..4 .575 | 1..5 .5 | 1..5 | 2..5 .4
    expect("ceil(l/2) < T_n < l: clipped windows", hardest_window_mean(p, 6).item(), 0.4)
    expect("T_n <= ceil(l/2): whole target", hardest_window_mean(p, 10).item(), 2.5 / 5)
    # METHOD.md's worked case (issue 10): l = 7, T_n = 6, windows 1..4 1..5 1..6 1..6 2..6 3..6
    expect("l=7 j=1 T=6", window_bounds(1, 6, 7), (1, 4))
    expect("l=7 j=6 T=6", window_bounds(6, 6, 7), (3, 6))
    q = torch.tensor([0.9, 0.9, 0.9, 0.1, 0.1, 0.1], dtype=DT)
    expect("l=7 T=6: C_n = 0.3", hardest_window_mean(q, 7).item(), 0.3)

    cfg = {"max_lr": 1.0, "min_lr": 0.1, "warmup": 2, "total": 6}
    expect("lr warmup s=0", learning_rate(0, cfg), 0.5)
    expect("lr cosine start s=2", learning_rate(2, cfg), 1.0)
    expect("lr cosine middle s=4", learning_rate(4, cfg), 0.55)

    H = top_k_entropy(torch.tensor([[0.0, 0.0, -1e9]], dtype=DT), 2)
    expect("top-2 entropy of two equal logits", H.item(), math.log(2))

    print("selftest: %s" % ("ok" if not failures else "%d FAILED" % len(failures)))
    return 0 if not failures else 1


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("check", help="compare a case file with the float64 reference")
    c.add_argument("file")
    c.add_argument("--label", default=None)
    sub.add_parser("selftest", help="check the helper functions")
    args = ap.parse_args(argv)
    torch.set_default_dtype(DT)
    if args.cmd == "selftest":
        return selftest()
    return cmd_check(args.file, args.label)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
