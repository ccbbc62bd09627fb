#!/usr/bin/python3
"""CPU training-throughput benchmark of the ORACLE.md GPT in PyTorch float32.

Same forward as test/ORACLE.md (attention written out with a causal mask),
plain cross-entropy over the first V logits at every position, torch AdamW.
Times `steps` full training steps (forward, loss, backward, optimizer step)
after `warmup` untimed ones and prints one final line:
    torch tokens_per_s <float>
"""
import argparse
import math
import time

import torch
import torch.nn as nn


def layer_norm(x, w, b):
    mean = x.mean(dim=-1, keepdim=True)
    var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + 1e-5) * w + b


def gelu(u):
    return 0.5 * u * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (u + 0.044715 * u ** 3)))


class GPT(nn.Module):
    """Parameters as in ORACLE.md's table (stacked over layers)."""

    def __init__(self, V, maxT, L, NH, C):
        super().__init__()
        self.V, self.Vp, self.L, self.NH, self.C = V, (V + 63) // 64 * 64, L, NH, C

        def p(*shape, std=0.02, fill=None):
            t = torch.full(shape, fill) if fill is not None else torch.randn(shape) * std
            return nn.Parameter(t)

        self.wte, self.wpe = p(self.Vp, C), p(maxT, C)
        self.ln1w, self.ln1b = p(L, C, fill=1.0), p(L, C, fill=0.0)
        self.qkvw, self.qkvb = p(L, 3 * C, C), p(L, 3 * C, fill=0.0)
        self.attprojw, self.attprojb = p(L, C, C), p(L, C, fill=0.0)
        self.ln2w, self.ln2b = p(L, C, fill=1.0), p(L, C, fill=0.0)
        self.fcw, self.fcb = p(L, 4 * C, C), p(L, 4 * C, fill=0.0)
        self.fcprojw, self.fcprojb = p(L, C, 4 * C), p(L, C, fill=0.0)
        self.lnfw, self.lnfb = p(C, fill=1.0), p(C, fill=0.0)
        with torch.no_grad():
            self.wte[V:] = 0.0                      # padding rows

    def attention(self, q, k, v):
        B, T, C = q.shape
        NH, hs = self.NH, C // self.NH
        q, k, v = (t.view(B, T, NH, hs).transpose(1, 2) for t in (q, k, v))
        scores = q @ k.transpose(-1, -2) / math.sqrt(hs)            # (B, NH, T, T)
        causal = torch.ones(T, T, dtype=torch.bool).tril()
        att = torch.softmax(scores.masked_fill(~causal, float("-inf")), dim=-1)
        return (att @ v).transpose(1, 2).reshape(B, T, C)

    def forward(self, inputs):
        C, T = self.C, inputs.shape[1]
        x = self.wte[inputs] + self.wpe[0:T]
        for l in range(self.L):
            h = layer_norm(x, self.ln1w[l], self.ln1b[l])
            qkv = h @ self.qkvw[l].T + self.qkvb[l]
            y = self.attention(qkv[..., :C], qkv[..., C:2 * C], qkv[..., 2 * C:])
            x = x + y @ self.attprojw[l].T + self.attprojb[l]
            h = layer_norm(x, self.ln2w[l], self.ln2b[l])
            x = x + gelu(h @ self.fcw[l].T + self.fcb[l]) @ self.fcprojw[l].T + self.fcprojb[l]
        x = layer_norm(x, self.lnfw, self.lnfb)
        return x @ self.wte.T                                      # (B, T, Vp)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--embd", type=int, default=128)
    ap.add_argument("--vocab", type=int, default=2048)
    ap.add_argument("--seq", type=int, default=256)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    model = GPT(a.vocab, a.seq, a.layers, a.heads, a.embd)
    decay = {"wte", "wpe", "qkvw", "attprojw", "fcw", "fcprojw"}   # ORACLE.md's table
    groups = [{"params": [p for n, p in model.named_parameters() if n in decay], "weight_decay": 0.1},
              {"params": [p for n, p in model.named_parameters() if n not in decay], "weight_decay": 0.0}]
    opt = torch.optim.AdamW(groups, lr=1e-4)
    inputs = torch.randint(0, a.vocab, (a.batch, a.seq))
    targets = torch.randint(0, a.vocab, (a.batch, a.seq))

    def train_step():
        logits = model(inputs)[..., :a.vocab]                      # padding columns dropped
        loss = nn.functional.cross_entropy(logits.reshape(-1, a.vocab), targets.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss.item()

    for _ in range(a.warmup):
        train_step()
    t0 = time.perf_counter()
    for _ in range(a.steps):
        train_step()
    seconds = time.perf_counter() - t0
    print("torch tokens_per_s %.1f" % (a.batch * a.seq * a.steps / seconds))


if __name__ == "__main__":
    main()
