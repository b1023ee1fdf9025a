"""multiprocessing children that start CUDA themselves: `fork` (the child leaves by os._exit,
as multiprocessing's fork children do) or `spawn`.  Usage: mp_child.py fork|spawn N"""
import multiprocessing as mp
import os, sys

def work(n):
    import torch
    x = torch.zeros(1, device="cuda")
    for _ in range(n):
        x.add_(1)
    torch.cuda.synchronize()
    assert int(x.item()) == n
    print(f"child pid {os.getpid()} adds {n}", flush=True)

if __name__ == "__main__":
    method, n = sys.argv[1], int(sys.argv[2])
    p = mp.get_context(method).Process(target=work, args=(n,))
    p.start()
    p.join()
    print(f"parent pid {os.getpid()} child exit {p.exitcode}", flush=True)
    sys.exit(p.exitcode)
