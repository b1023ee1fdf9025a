"""torchrun workload with known counts: each rank (one GPU each) does N in-place adds and N
all_reduce calls over NCCL.  Usage: torchrun --nproc-per-node=2 ddp_allreduce.py N
Prints "rank R pid P adds N allreduce N" so a test knows what each process did."""
import os, sys
import torch
import torch.distributed as dist

n = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
rank, local = int(os.environ["RANK"]), int(os.environ["LOCAL_RANK"])
torch.cuda.set_device(local)
dist.init_process_group("nccl")
x = torch.ones(1024, device="cuda")
for _ in range(n):
    x.add_(1)
    dist.all_reduce(x)
torch.cuda.synchronize()
dist.destroy_process_group()
print(f"rank {rank} pid {os.getpid()} adds {n} allreduce {n}", flush=True)
