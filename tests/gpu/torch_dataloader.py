"""A PyTorch training loop fed by a DataLoader with fork workers (Linux's default start method),
which fork after CUDA is up in the parent, as every such job does.  An NVTX range "step" around
each step.  Usage: torch_dataloader.py STEPS [WORKERS]; prints what it did."""
import os
import sys

import torch
from torch.utils.data import DataLoader, Dataset


class Numbers(Dataset):
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return torch.full((64,), float(i))


steps = int(sys.argv[1]) if len(sys.argv) > 1 else 200
workers = int(sys.argv[2]) if len(sys.argv) > 2 else 4
model = torch.nn.Linear(64, 1).cuda()  # CUDA is up before the workers fork
opt = torch.optim.SGD(model.parameters(), lr=1e-3)
loader = DataLoader(Numbers(steps * 8), batch_size=8, num_workers=workers)
assert torch.multiprocessing.get_start_method() == "fork"
n = 0
for batch in loader:
    torch.cuda.nvtx.range_push("step")
    loss = model(batch.cuda()).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    torch.cuda.nvtx.range_pop()
    n += 1
torch.cuda.synchronize()
print(f"pid {os.getpid()} steps {n} workers {workers}", flush=True)
