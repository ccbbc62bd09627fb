"""PyTorch side of test/bench_gpu.sh: the same GPT as cuset (pre-LayerNorm blocks, GELU
(tanh), tied embedding, causal attention) trained with AdamW and plain cross-entropy on the
GPU, and the kernel baselines: torch.matmul TFLOP/s (tf32, like cuset's matmuls) and
scaled_dot_product_attention forward/backward times.

    python3 test/bench_gpu_torch.py --layers L --heads H --embd C --seq T --batch B --vocab V --steps N

One line per number, "name value unit", like test/bench_gpu. Exits non-zero with a
one-line reason when PyTorch or its CUDA is not available (test/bench_gpu.sh checks first)."""
import argparse
import statistics
import sys
import time

try:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
except ImportError as e:
    sys.exit(f"bench_gpu_torch: cannot import PyTorch ({e}): the comparison needs PyTorch with CUDA")


class Block(nn.Module):
    def __init__(self, C, H):
        super().__init__()
        self.H = H
        self.ln1, self.ln2 = nn.LayerNorm(C), nn.LayerNorm(C)
        self.qkv, self.proj = nn.Linear(C, 3 * C), nn.Linear(C, C)
        self.fc, self.fcproj = nn.Linear(C, 4 * C), nn.Linear(4 * C, C)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
        q, k, v = (t.view(B, T, self.H, C // self.H).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(B, T, C))
        return x + self.fcproj(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self, V, T, L, H, C):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(V, C), nn.Embedding(T, C)
        self.blocks = nn.ModuleList(Block(C, H) for _ in range(L))
        self.lnf = nn.LayerNorm(C)

    def forward(self, idx):
        x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1], device=idx.device))
        for b in self.blocks:
            x = b(x)
        return self.lnf(x) @ self.wte.weight.t()  # tied head


def sync_time(fn, reps=20, warmup=3):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def main():
    ap = argparse.ArgumentParser()
    for k, d in [("layers", 6), ("heads", 12), ("embd", 768), ("seq", 1024), ("batch", 8), ("vocab", 8192), ("steps", 30)]:
        ap.add_argument("--" + k, type=int, default=d)
    a = ap.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("bench_gpu_torch: torch.cuda is not available")
    torch.backends.cuda.matmul.allow_tf32 = True  # cuset's matmuls are tf32 too
    torch.backends.cudnn.allow_tf32 = True
    dev = "cuda"
    print(f"torch {torch.__version__} on {torch.cuda.get_device_name()}")
    B, T, C, H, V = a.batch, a.seq, a.embd, a.heads, a.vocab

    # training tokens/s: forward, cross-entropy, backward, AdamW; median step after 5 warm-ups
    torch.manual_seed(0)
    model = GPT(V, T, a.layers, H, C).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, betas=(0.9, 0.95), weight_decay=0.1, fused=True)
    times = []
    for step in range(a.steps):
        x = torch.randint(0, V, (B, T), device=dev)
        y = torch.randint(0, V, (B, T), device=dev)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        loss = F.cross_entropy(model(x).view(-1, V), y.view(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        torch.cuda.synchronize()
        if step >= 5:
            times.append(time.perf_counter() - t0)
    print(f"torch_train_tokps {B * T / statistics.median(times):.0f} tok/s")
    del model, opt
    torch.cuda.empty_cache()

    # matmul (BT, C) x (C, 4C), the MLP's first product, as in bench_gpu
    N, K, M = B * T, C, 4 * C
    A = torch.randn(N, K, device=dev)
    W = torch.randn(M, K, device=dev)
    t = sync_time(lambda: torch.matmul(A, W.t()))
    print(f"torch_matmul_TFLOPs {2 * N * K * M / t / 1e12:.2f} TFLOP/s")

    # scaled_dot_product_attention, fp32 (what cuset computes), forward and backward
    q, k, v = (torch.randn(B, H, T, C // H, device=dev, requires_grad=True) for _ in range(3))
    t_f = sync_time(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True))
    out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    g = torch.randn_like(out)
    t_b = sync_time(lambda: torch.autograd.grad(out, (q, k, v), g, retain_graph=True))
    print(f"torch_attention_forward_ms {1e3 * t_f:.4f} ms")
    print(f"torch_attention_backward_ms {1e3 * t_b:.4f} ms")

    # a device-to-device copy of a (BT, V) tensor, the loss's bandwidth yardstick
    z = torch.randn(B * T, V, device=dev)
    t = sync_time(lambda: z.clone())
    print(f"torch_copy_GBps {2 * z.numel() * 4 / t / 1e9:.1f} GB/s")


if __name__ == "__main__":
    main()
