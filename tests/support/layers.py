#!/usr/bin/env python3
"""Holds a static library's files to layers, from what its objects define and use (nm).

    layers.py ARCHIVE 'TOP FILES' 'NEXT FILES' ... 'BOTTOM FILES'

Each argument after the archive is one layer, top first, as source file names separated by
spaces.  A file may call a function or use data of a file in a layer below its own, never one
of its own layer (beside it) nor above it; so no two files call each other, through any number
of others.  Every object of the archive must be named in a layer, so that a new file is placed
on purpose.  Exits 1 on any breach, and when no call between two files was seen at all (then the
check proved nothing: nm's output was not what this script reads).
"""
import collections
import subprocess
import sys


def symbols(archive):
    """{object: set of symbols it uses}, {symbol: object defining it}, every object."""
    out = subprocess.run(["nm", "-A", archive], capture_output=True, text=True, check=True).stdout
    uses, defines, objects = collections.defaultdict(set), {}, set()
    for line in out.splitlines():
        # "ARCHIVE:member.o:0000000000000000 T name", or "ARCHIVE:member.o:         U name"
        head, tail = line.rsplit(":", 1)
        member = head.rsplit(":", 1)[1]
        fields = tail.split()
        if len(fields) < 2:
            continue
        kind, name = fields[-2], fields[-1]
        objects.add(member)
        if kind == "U":
            uses[member].add(name)
        elif kind.isupper():  # defined and global (lowercase: static, the file's own)
            defines[name] = member
    return uses, defines, objects


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    archive, layers = sys.argv[1], [layer.split() for layer in sys.argv[2:]]
    depth = {}  # object -> layer index, 0 the top
    for i, files in enumerate(layers):
        for f in files:
            depth[f + ".o"] = i
    uses, defines, objects = symbols(archive)
    fail = False
    for obj in sorted(objects - depth.keys()):
        print("FAIL %s is in no layer: name it in the layer it belongs to" % obj[:-2])
        fail = True
    for obj in sorted(depth.keys() - objects):
        print("FAIL %s is named in a layer but is not in %s" % (obj[:-2], archive))
        fail = True
    calls = 0
    for obj in sorted(uses):
        for name in sorted(uses[obj]):
            target = defines.get(name)
            if target is None or target == obj or obj not in depth or target not in depth:
                continue
            calls += 1
            if depth[target] <= depth[obj]:
                where = "beside it" if depth[target] == depth[obj] else "above it"
                print("FAIL %s uses %s of %s, %s" % (obj[:-2], name, target[:-2], where))
                fail = True
    if calls == 0:
        print("FAIL no file of %s uses another: nothing was checked" % archive)
        sys.exit(1)
    if not fail:
        print("ok   %d uses between %d files, each downward only (%d layers)"
              % (calls, len(objects), len(layers)))
    sys.exit(1 if fail else 0)


main()
