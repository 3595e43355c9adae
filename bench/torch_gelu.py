"""GELU against copy in PyTorch, for the gelu row of docs/benchmarks.md (issue 3, section 7).

16 MiB of float32, one thread; each op timed 40 times after 5 warm-ups, three rounds, medians.
GB/s counts bytes read plus written, as bench/ops_bench does.

    OPENBLAS_CORETYPE=Haswell /usr/bin/python3 bench/torch_gelu.py
"""
import statistics
import time

import torch

torch.set_num_threads(1)
n = 4 * 1024 * 1024
x = torch.randn(n)
out = torch.empty_like(x)


def rate(fn, reps=40):
    for _ in range(5):
        fn()
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return 2 * n * 4 / statistics.median(times) / 1e9


cases = [("copy", lambda: out.copy_(x)),
         ("gelu exact (out=)", lambda: torch._C._nn.gelu(x, out=out)),
         ("gelu tanh (out=)", lambda: torch._C._nn.gelu(x, approximate="tanh", out=out)),
         ("gelu exact (new output)", lambda: torch.nn.functional.gelu(x))]
rates = {}
for _ in range(3):
    for name, fn in cases:
        rates.setdefault(name, []).append(rate(fn))
capability = torch.__config__.show().split("CPU capability usage: ")[-1].split()[0]
print("torch", torch.__version__, "threads", torch.get_num_threads(), "capability", capability)
copy = statistics.median(rates["copy"])
for name, values in rates.items():
    median = statistics.median(values)
    print(f"{name:26s} {median:6.1f} GB/s  {median / copy * 100:5.0f}% of copy  rounds {['%.1f' % v for v in values]}")
