"""PyTorch kernels from three known functions at known lines (tests/gpu/stacks.sh).

Each function writes down its file, name, the line of its launching call (from inspect, not from
tally) and how many kernels it launched there (x.add_(1) launches exactly one elementwise kernel,
as torch.profiler counts them).  Then a loop whose caching-allocator reservations are known:
torch.cuda.max_memory_reserved() and memory_reserved() at the end.  Prints JSON on stdout."""
import inspect
import json
import torch

x = torch.zeros(1024, device="cuda")
torch.cuda.synchronize()
want = []


def here(n):
    f = inspect.currentframe().f_back
    want.append({"file": f.f_code.co_filename, "func": f.f_code.co_qualname
                 if hasattr(f.f_code, "co_qualname") else f.f_code.co_name,
                 "line": f.f_lineno + 1, "n": n})


def f_add(n):
    for _ in range(n):
        here(1)
        x.add_(1)


class Block:
    def forward(self, n):
        for _ in range(n):
            here(1)
            x.mul_(1)


def f_sub(n):
    for _ in range(n):
        here(1)
        x.sub_(1)


f_add(100)
Block().forward(200)
f_sub(300)
torch.cuda.synchronize()
# memory: tensors of growing sizes, kept and dropped, through the caching allocator
keep = []
for i in range(40):
    keep.append(torch.empty((i + 1) * (1 << 18), device="cuda"))
    if i % 3 == 2:
        keep.pop(0)
del keep
torch.cuda.synchronize()
print(json.dumps({"frames": want, "max_reserved": torch.cuda.max_memory_reserved(),
                  "reserved": torch.cuda.memory_reserved()}), flush=True)
