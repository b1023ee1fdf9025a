# SPDX-License-Identifier: MIT
"""A DataLoader whose worker is slowed (tests/gpu/sampling.sh): each item takes SLOW seconds in
the worker process, the main loop launches 50 in-place adds per batch and waits for the next.
The GPU idles while the main thread waits on the loader's queue, in torch's
_MultiProcessingDataLoaderIter._get_data.  Usage: sampling_loader.py ITEMS SLOW"""
import sys
import time

import torch
from torch.utils.data import DataLoader, Dataset

items, slow = int(sys.argv[1]), float(sys.argv[2])


class Slow(Dataset):
    def __len__(self):
        return items

    def __getitem__(self, i):
        time.sleep(slow)  # in the worker process
        return torch.ones(4)


x = torch.zeros(4, device="cuda")
n = 0
for batch in DataLoader(Slow(), batch_size=1, num_workers=1):
    b = batch[0].to("cuda")
    for _ in range(50):
        x.add_(b)
    n += 1
torch.cuda.synchronize()
print("batches %d slow_s %.3f" % (n, slow))
