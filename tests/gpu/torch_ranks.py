"""Two (or more) ranks under torchrun with a known slow one, for tally report's ranks table:
each step every rank runs K matrix products on its own GPU (cuda:LOCAL_RANK), then all ranks
all-reduce one tensor over NCCL.  The rank given by --slow-rank runs --slow-factor times as many
products, so it computes longest and the others wait in NCCL: the report must name it slowest.
Usage: torchrun --nproc_per_node 2 torch_ranks.py [--steps N] [--matmuls K] [--slow-rank R]
       [--slow-factor F]; each rank prints what it did."""
import argparse
import os
import time

import torch
import torch.distributed as dist

ap = argparse.ArgumentParser()
ap.add_argument("--steps", type=int, default=100)
ap.add_argument("--matmuls", type=int, default=4)
ap.add_argument("--slow-rank", type=int, default=1)
ap.add_argument("--slow-factor", type=int, default=3)
o = ap.parse_args()

rank, local = int(os.environ["RANK"]), int(os.environ["LOCAL_RANK"])
torch.cuda.set_device(local)
dist.init_process_group("nccl")
a = torch.randn(2048, 2048, device="cuda")
b = torch.randn(2048, 2048, device="cuda")
g = torch.ones(1 << 20, device="cuda")
k = o.matmuls * (o.slow_factor if rank == o.slow_rank else 1)
torch.cuda.synchronize()
t0 = time.perf_counter()
for step in range(o.steps):
    torch.cuda.nvtx.range_push("step")
    for _ in range(k):
        c = a @ b
    dist.all_reduce(g)
    torch.cuda.nvtx.range_pop()
torch.cuda.synchronize()
t1 = time.perf_counter()
dist.destroy_process_group()
print(f"rank {rank} pid {os.getpid()} steps {o.steps} matmuls {o.steps * k} "
      f"allreduces {o.steps} loop_ns {(t1 - t0) * 1e9:.0f}", flush=True)
