# SPDX-License-Identifier: MIT
"""A Python program whose forks take long (test-sampling.sh): it touches MB megabytes, then forks
N times, each child leaving at once, and sleeps between.  While the kernel copies the memory map
of a process that large, every thread that writes memory waits: the sampler too.  Prints the
forks' own time (ns, summed), measured around os.fork() in the parent.
Usage: forkheld.py MB N"""
import os
import sys
import time

mb, n = int(sys.argv[1]), int(sys.argv[2])
block = bytearray(mb << 20)
for i in range(0, len(block), 4096):
    block[i] = 1
total = 0
for _ in range(n):
    t0 = time.perf_counter_ns()
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    total += time.perf_counter_ns() - t0
    os.waitpid(pid, 0)
    time.sleep(0.2)
print("fork_ns %d" % total)
