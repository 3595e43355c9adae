"""Ops on a transposed operand in PyTorch, for the transposed rows of docs/benchmarks.md.

2048 x 2048 float32, one thread; each op timed 10 times, medians. GB/s counts bytes
read plus written, as bench/ops_bench does.

    OPENBLAS_CORETYPE=Haswell /usr/bin/python3 bench/torch_transposed.py
"""
import statistics
import time

import torch

torch.set_num_threads(1)
a = torch.rand(2048, 2048)
b = torch.rand(2048, 2048)
mib16 = 16 * 2**20


def median_seconds(fn, repeats=10):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


print(f"torch {torch.__version__} threads {torch.get_num_threads()}")
for name, fn, moved in [
    ("add", lambda: a + b, 3 * mib16),
    ("add, second operand transposed", lambda: a + b.t(), 3 * mib16),
    ("gelu of a transposed view", lambda: torch.nn.functional.gelu(b.t()), 2 * mib16),
    ("contiguous() of a transposed view", lambda: b.t().contiguous(), 2 * mib16),
]:
    print(f"{name:36s} {moved / median_seconds(fn) / 1e9:6.2f} GB/s")
