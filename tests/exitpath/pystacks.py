# SPDX-License-Identifier: MIT
"""Launches through the stand-in CUPTI from known Python functions at known lines.

Run under `tally record --python-stacks` (see test-pystacks.sh).  It loads the collector as the
CUDA driver does (InitializeInjection), then calls the stand-in CUPTI's fakecupti_launch, which
fires CUPTI's launch API callback on this thread, from four functions.  Through ctypes.PyDLL the
call keeps the GIL; through ctypes.CDLL it releases it first, as PyTorch's ops do before they
launch.  The collector never takes the GIL: it reads the thread's frames in place, so both get
their stack; with TALLY_PYTHON_STACKS=gil (argv[2] "gil") it uses only the public API, and the
launches made without the GIL get none.  Each function writes down its own file, qualified name
and the line of its launching call (from inspect, not from tally) into the JSON file argv[1].
"""
import ctypes
import inspect
import json
import os
import sys

tally = ctypes.CDLL(os.environ["CUDA_INJECTION64_PATH"], mode=ctypes.RTLD_GLOBAL)
if tally.InitializeInjection() != 1:
    sys.exit(3)
with_gil = ctypes.PyDLL(os.environ["TALLY_CUPTI_PATH"])
without_gil = ctypes.CDLL(os.environ["TALLY_CUPTI_PATH"])
expected = {"with_stack": [], "without_stack": 0}
gil_only = len(sys.argv) > 2 and sys.argv[2] == "gil"


def note(n, name):
    caller = inspect.currentframe().f_back
    expected["with_stack"].append(
        {"file": caller.f_code.co_filename, "func": name, "line": caller.f_lineno + 1, "n": n})


def alpha(n):
    note(n, "alpha")
    with_gil.fakecupti_launch(n)


class Model:
    def beta(self, n):
        note(n, "Model.beta")
        with_gil.fakecupti_launch(n)


def gamma(n):
    for _ in range(n):  # a loop's launches: one stack
        note(1, "gamma")
        with_gil.fakecupti_launch(1)


def delta(n):
    if gil_only:
        expected["without_stack"] += n  # the GIL is released: the public API cannot be used
    else:
        note(n, "delta")
    without_gil.fakecupti_launch(n)


alpha(100)
Model().beta(200)
gamma(50)
delta(40)
with open(sys.argv[1], "w") as f:
    json.dump(expected, f)
