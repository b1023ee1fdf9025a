#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Functions (and data) of src/ that are external but used by no other file, read with nm.

Over every object file of a build (src/, tests/, bench/): a global symbol that a source file of
src/ defines and that no object of another source file needs is either dead (remove it) or private
to its file (make it static).  What the world calls from outside is not counted as unused: the
dynamic symbols of the shared libraries the build makes (libtally.so's entry points and interposed
functions) and main.

  scripts/unused-functions.py BUILD   list them; exit 1 if there is any, 0 if none
  scripts/unused-functions.py --self-test

Run by ctest (unused-functions, in the plain build), so CI (scripts/test.sh) fails on a new one.
"""
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from buildobjects import links, nm, source_of  # noqa: E402

DEFINED = set("TDRB")  # global text, data, read-only data, bss (weak and common are left alone)

# The source tree: a file of the build that is not in it was generated (protoc-c's perfetto code),
# and what it exports is its generator's business.
SOURCE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def scan(build, source=SOURCE):
    """The objects the build links now and the shared libraries it made."""
    targets = links(build)
    objects = sorted({o for t in targets for o in t["objects"] if os.path.exists(o)})
    exported = {"main"}
    for t in targets:
        if t["shared"] and os.path.exists(t["output"]):
            exported.update(f[0] for f in nm(t["output"], "-D", "--defined-only") if len(f) > 1)
    defined, used = {}, {}
    for obj in objects:
        src = source_of(build, obj)
        for f in nm(obj):
            if len(f) < 2:
                continue
            name, kind = f[0], f[1]
            if kind == "U":
                used.setdefault(name, set()).add(src)
            elif kind in DEFINED and src.startswith("src" + os.sep) and \
                    os.path.exists(os.path.join(source, src)):
                defined.setdefault(name, src)
    unused = []
    for name, src in sorted(defined.items(), key=lambda x: (x[1], x[0])):
        if name in exported or name.startswith(("__", ".")):  # the compiler's and sanitizers' own
            continue
        if not used.get(name, set()) - {src}:
            unused.append((src, name))
    return objects, unused


def self_test():
    """A made-up build: one file used by the other, one function no other file calls."""
    files = {
        "src/a/lib.c": "int used(void) { return 1; }\n"
                       "int lonely(void) { return used() + 1; }\n",
        "src/b/main.c": "int used(void);\nint main(void) { return used(); }\n",
        "src/b/old.c": "int left_behind(void) { return 2; }\n",  # built once, linked no more
    }
    with tempfile.TemporaryDirectory() as d:
        for path, text in files.items():
            full = os.path.join(d, path)
            folder, name = os.path.split(full)
            objdir = os.path.join(folder, "CMakeFiles", "t.dir")
            os.makedirs(objdir, exist_ok=True)
            with open(full, "w") as f:
                f.write(text)
            obj = os.path.join(objdir, name + ".o")
            subprocess.run([os.environ.get("CC", "cc"), "-c", "-o", obj, full], check=True)
            if name != "old.c":
                with open(os.path.join(objdir, "link.txt"), "a") as f:
                    f.write(f"cc CMakeFiles/t.dir/{name}.o -o t\n")
        _, unused = scan(d, d)
    want = [(os.path.join("src", "a", "lib.c"), "lonely")]
    print(f"{'ok' if unused == want else 'BAD'}: found {unused}, expected {want}")
    return 0 if unused == want else 1


def main(argv):
    if argv == ["--self-test"]:
        return self_test()
    if len(argv) != 1 or not os.path.isdir(argv[0]):
        print("usage: scripts/unused-functions.py BUILD | --self-test", file=sys.stderr)
        return 2
    objects, unused = scan(argv[0])
    if not objects:
        print(f"unused-functions: no object files under {argv[0]}: build first", file=sys.stderr)
        return 2
    for src, name in unused:
        print(f"{src}: {name} is external but no other file uses it: make it static, or remove it")
    print(f"unused-functions: {len(objects)} object files, {len(unused)} unused external symbol(s)")
    return 1 if unused else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
