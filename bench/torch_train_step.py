#!/usr/bin/env python3
"""One GPT training step in PyTorch: the counterpart of bench/train_step_bench.cpp (issue 8, section 8).

The model is Parallax's zoo GPT (src/nn/models.cpp, src/nn/layers.cpp) written out in PyTorch, with the
same parameter names: learned token and position embeddings, pre-LayerNorm blocks (eps 1e-5, with
biases) of causal self-attention (separate q/k/v/o projections with biases, softmax(q k^T / sqrt(hd))
with future keys at -inf, then @ v) and a gelu(tanh) MLP of 4 * dim, a final LayerNorm and an LM head
tied to wte. The loss is the mean cross-entropy over the flattened [B*T, V] logits.

One step = zero_grad(set_to_none=True) + forward + loss + backward + torch.optim.AdamW.step()
(lr 1e-3, betas (0.9, 0.999), eps 1e-8, weight decay 1e-2: the defaults of both sides), float32.

  torch_train_step.py [--batch 8] [--seq 16] [--vocab 64] [--dim 32] [--layers 2] [--heads 4]
                      [--threads 1] [--steps 50] [--warmup 10] [--repeats 5]
  torch_train_step.py --check DIR   # DIR written by train_step_bench --check K --dump DIR

Prints `key: value` lines like the C++ side: median_ms (median over `repeats` of the mean step time
of `steps` steps), loss0, torch_version, torch_threads, openblas_core, blas_threads. --check loads
Parallax's initial parameters, tokens and targets, runs as many steps as Parallax did and compares
the losses and the final parameters.
"""

import argparse
import ctypes
import math
import os
import statistics
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class CausalSelfAttention(nn.Module):
    def __init__(self, dim, heads, max_seq):
        super().__init__()
        self.heads, self.head_dim = heads, dim // heads
        self.wq = nn.Linear(dim, dim)
        self.wk = nn.Linear(dim, dim)
        self.wv = nn.Linear(dim, dim)
        self.wo = nn.Linear(dim, dim)
        # keep[i, j]: query i sees key j (j <= i), as Parallax's causal mask
        self.register_buffer("keep", torch.ones(max_seq, max_seq, dtype=torch.bool).tril(), persistent=False)

    def split(self, x):
        b, t, _ = x.shape
        return x.view(b, t, self.heads, self.head_dim).transpose(1, 2)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.split(self.wq(x)), self.split(self.wk(x)), self.split(self.wv(x))
        scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(self.head_dim))
        scores = scores.masked_fill(~self.keep[:t, :t], float("-inf"))
        out = F.softmax(scores, dim=-1) @ v
        return self.wo(out.transpose(1, 2).reshape(b, t, c))


class MLP(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.c_fc = nn.Linear(dim, 4 * dim)
        self.c_proj = nn.Linear(4 * dim, dim)

    def forward(self, x):
        return self.c_proj(F.gelu(self.c_fc(x), approximate="tanh"))


class Block(nn.Module):
    def __init__(self, dim, heads, max_seq):
        super().__init__()
        self.ln_1 = nn.LayerNorm(dim, eps=1e-5)
        self.attn = CausalSelfAttention(dim, heads, max_seq)
        self.ln_2 = nn.LayerNorm(dim, eps=1e-5)
        self.mlp = MLP(dim)

    def forward(self, x):
        h = x + self.attn(self.ln_1(x))
        return h + self.mlp(self.ln_2(h))


class GPT(nn.Module):
    def __init__(self, vocab, max_seq, dim, layers, heads):
        super().__init__()
        self.wte = nn.Embedding(vocab, dim)
        self.wpe = nn.Embedding(max_seq, dim)
        self.h = nn.ModuleList(Block(dim, heads, max_seq) for _ in range(layers))
        self.ln_f = nn.LayerNorm(dim, eps=1e-5)
        self.lm_head = nn.Linear(dim, vocab, bias=False)
        self.lm_head.weight = self.wte.weight  # tied
        # Parallax's init: N(0, 0.02) for embeddings and projection weights, zero biases, LayerNorm 1/0.
        for name, p in self.named_parameters():
            if name.endswith("bias"):
                nn.init.zeros_(p)
            elif ".ln_" in name or name.startswith("ln_"):
                nn.init.ones_(p)
            else:
                nn.init.normal_(p, 0.0, 0.02)

    def forward(self, tokens, targets):
        t = tokens.shape[1]
        x = self.wte(tokens) + self.wpe(torch.arange(t))
        for block in self.h:
            x = block(x)
        logits = self.lm_head(self.ln_f(x))
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))


def openblas():
    """The OpenBLAS that torch's BLAS (Debian's libblas.so.3 wrapper) calls into, or None."""
    try:
        return ctypes.CDLL("libopenblas.so.0")
    except OSError:
        return None


def set_threads(threads):
    torch.set_num_threads(threads)
    lib = openblas()
    if lib is not None:
        lib.openblas_set_num_threads(ctypes.c_int(threads))


def make_step(model, optimizer, tokens, targets):
    def step():
        optimizer.zero_grad(set_to_none=True)
        loss = model(tokens, targets)
        loss.backward()
        optimizer.step()
        return loss

    return step


def make_optimizer(model):
    return torch.optim.AdamW(model.parameters(), lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2)


def bench(args):
    torch.manual_seed(args.seed)
    model = GPT(args.vocab, args.seq, args.dim, args.layers, args.heads)
    optimizer = make_optimizer(model)
    tokens = torch.randint(0, args.vocab, (args.batch, args.seq))
    targets = torch.randint(0, args.vocab, (args.batch, args.seq))
    step = make_step(model, optimizer, tokens, targets)
    loss0 = step().item()
    for _ in range(args.warmup):
        step()
    per_step = []
    for _ in range(args.repeats):
        start = time.perf_counter()
        for _ in range(args.steps):
            step()
        per_step.append((time.perf_counter() - start) * 1e3 / args.steps)
    lib = openblas()
    print(f"median_ms: {statistics.median(per_step):.6f}")
    print(f"min_ms: {min(per_step):.6f}")
    print(f"loss0: {loss0:.6f}")
    print(f"params: {sum(p.numel() for p in model.parameters())}")
    print(f"torch_version: {torch.__version__}")
    print(f"torch_threads: {torch.get_num_threads()}")
    if lib is not None:
        lib.openblas_get_corename.restype = ctypes.c_char_p
        print(f"openblas_core: {lib.openblas_get_corename().decode()}")
        print(f"blas_threads: {lib.openblas_get_num_threads()}")


def read_raw(path, dtype, shape):
    with open(path, "rb") as f:
        data = bytearray(f.read())
    return torch.frombuffer(data, dtype=dtype).reshape(shape).clone()


def check(args):
    """Parallax's initial parameters and data in, the same steps, losses and final parameters compared."""
    config, shapes = None, {}
    with open(os.path.join(args.check, "manifest.txt")) as f:
        for line in f:
            fields = line.split()
            if fields[0] == "config":
                config = [int(v) for v in fields[1:]]
            elif fields[0] == "param":
                shapes[fields[1]] = [int(v) for v in fields[2].split(",")] if len(fields) > 2 else []
    batch, seq, vocab, dim, layers, heads = config
    model = GPT(vocab, seq, dim, layers, heads)
    params = dict(model.named_parameters())  # tied lm_head.weight is wte.weight, listed once
    if sorted(params) != sorted(shapes):
        sys.exit(f"parameter names differ: torch {sorted(params)} vs parallax {sorted(shapes)}")
    with torch.no_grad():
        for name, p in params.items():
            p.copy_(read_raw(os.path.join(args.check, f"init.{name}.bin"), torch.float32, shapes[name]))
    tokens = read_raw(os.path.join(args.check, "tokens.bin"), torch.int64, (batch, seq))
    targets = read_raw(os.path.join(args.check, "targets.bin"), torch.int64, (batch, seq))
    with open(os.path.join(args.check, "parallax_losses.txt")) as f:
        px_losses = [float(v) for v in f.read().split()]
    step = make_step(model, make_optimizer(model), tokens, targets)
    worst = 0.0
    for k, px_loss in enumerate(px_losses):
        loss = step().item()
        rel = abs(loss - px_loss) / abs(loss)
        worst = max(worst, rel)
        print(f"check_loss: step {k} (after {k} updates) parallax {px_loss:.7f} torch {loss:.7f} rel {rel:.2e}")
    max_diff, max_scale, moved = 0.0, 0.0, 0.0
    for name, p in params.items():
        final = read_raw(os.path.join(args.check, f"final.{name}.bin"), torch.float32, shapes[name])
        init = read_raw(os.path.join(args.check, f"init.{name}.bin"), torch.float32, shapes[name])
        max_diff = max(max_diff, (final - p.detach()).abs().max().item())
        max_scale = max(max_scale, p.detach().abs().max().item())
        moved = max(moved, (p.detach() - init).abs().max().item())
    print(f"check_loss_max_rel: {worst:.3e}")
    print(f"check_param_max_abs_diff: {max_diff:.3e} (largest update {moved:.3e}, largest |param| {max_scale:.3e})")
    print(f"check_agree: {'yes' if worst <= 1e-4 else 'no'} (losses within relative 1e-4)")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    for name, default in [("batch", 8), ("seq", 16), ("vocab", 64), ("dim", 32), ("layers", 2), ("heads", 4),
                          ("threads", 1), ("steps", 50), ("warmup", 10), ("repeats", 5), ("seed", 0)]:
        parser.add_argument(f"--{name}", type=int, default=default)
    parser.add_argument("--check", metavar="DIR", help="compare against train_step_bench --check K --dump DIR")
    args = parser.parse_args()
    set_threads(args.threads)
    if args.check:
        check(args)
    else:
        bench(args)


if __name__ == "__main__":
    main()
