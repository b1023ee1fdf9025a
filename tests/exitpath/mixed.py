# SPDX-License-Identifier: MIT
"""Python calling a native function that burns CPU (test-proctree.sh, mixed stacks): outer()
calls c_burn (tests/exitpath/mixedburn.c, through ctypes) for MS ms of CPU.  A mixed sample taken
in c_burn must go from c_burn through ctypes and the interpreter to outer()'s line and the
module's.  Writes the lines (found in this very file) to the JSON file argv[2].
Usage: mixed.py LIBMIXEDBURN OUT.json MS"""
import ctypes
import json
import sys

lib = ctypes.CDLL(sys.argv[1])
lib.c_burn.restype = ctypes.c_double
lib.c_burn.argtypes = [ctypes.c_double]


def outer(ms):
    return lib.c_burn(ms)  # the call into C


def line_of(marker):
    with open(__file__) as f:
        return next(n for n, text in enumerate(f, 1) if marker in text and "line_of" not in text)


outer(float(sys.argv[3]))  # the module calls outer
json.dump({"file": __file__, "call_line": line_of("the call into C"),
           "module_line": line_of("the module calls outer")}, open(sys.argv[2], "w"))
