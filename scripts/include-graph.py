#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The include graph of src/, from its #include "..." lines, checked against the floors.

Each folder of src/ is a room on a floor (docs/architecture.md).  A file may include headers of
its own room and of rooms on lower floors only: an include that runs sideways (another room of
the same floor) or upward fails, and so does a cycle between files (headers that include each
other, however far round; include guards hide such a cycle from the compiler, not from a reader).
A folder missing from FLOORS fails too: a new room takes its floor here, in the same commit.

  scripts/include-graph.py [SRC]        check; print the graph between rooms (arrows, counts)
  scripts/include-graph.py --dot [SRC]  the same graph for Graphviz
  scripts/include-graph.py --self-test  the check catches what it must, on made-up trees

Exit 0 when the house keeps the rule, 1 when it does not (each violation named), 2 on misuse.
"""
import os
import re
import sys
import tempfile

# floor: rooms; a room uses only rooms on lower floors
FLOORS = {
    1: ["format", "common"],
    2: ["read", "collector", "doctor"],
    3: ["stats", "merge"],
    4: ["export", "compare", "page"],
    5: ["cli"],
}
FLOOR_OF = {room: floor for floor, rooms in FLOORS.items() for room in rooms}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def read_tree(src):
    """Every C file under src: {relative path: [included names]}."""
    files = {}
    for root, _, names in os.walk(src):
        for name in names:
            if name.endswith((".c", ".h")):
                path = os.path.relpath(os.path.join(root, name), src)
                with open(os.path.join(root, name), encoding="utf-8", errors="replace") as f:
                    files[path] = INCLUDE.findall(f.read())
    return files


def room_of(path):
    return path.split(os.sep)[0]


def resolve(files):
    """Included name -> path, by base name (the build's include paths are flat); names given
    twice are errors, names not under src (generated headers such as version.h) are skipped."""
    by_name, errors = {}, []
    for path in files:
        if path.endswith(".h"):
            name = os.path.basename(path)
            if name in by_name:
                errors.append(f"{name}: in {by_name[name]} and {path}; an include cannot say which")
            by_name[name] = path
    return by_name, errors


def find_cycle(graph):
    """One cycle of the file graph as a list of files, or None (iterative depth-first search)."""
    state = {}
    for start in sorted(graph):
        if start in state:
            continue
        stack = [(start, iter(sorted(graph[start])))]
        state[start] = 1
        path = [start]
        while stack:
            node, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                state[node] = 2
                stack.pop()
                path.pop()
            elif state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            elif nxt not in state:
                state[nxt] = 1
                stack.append((nxt, iter(sorted(graph.get(nxt, ())))))
                path.append(nxt)
    return None


def check(src):
    files = read_tree(src)
    by_name, errors = resolve(files)
    arrows, graph = {}, {}
    for path in sorted(files):
        room = room_of(path)
        if room not in FLOOR_OF:
            errors.append(f"{path}: room {room}/ has no floor in FLOORS (scripts/include-graph.py)")
            continue
        graph.setdefault(path, set())
        for name in files[path]:
            target = by_name.get(name)
            if target is None:
                continue
            to = room_of(target)
            graph[path].add(target)
            if to == room:
                continue
            arrows[(room, to)] = arrows.get((room, to), 0) + 1
            if to not in FLOOR_OF:
                continue
            if FLOOR_OF[to] >= FLOOR_OF[room]:
                way = "sideways" if FLOOR_OF[to] == FLOOR_OF[room] else "upward"
                errors.append(f"{path}: includes {target} ({way}: {room}/ is on floor "
                              f"{FLOOR_OF[room]}, {to}/ on floor {FLOOR_OF[to]})")
    cycle = find_cycle(graph)
    if cycle:
        errors.append("a cycle between files: " + " -> ".join(cycle))
    return arrows, errors


def self_test():
    """Each kind of violation on a made-up tree is found, and the clean tree passes."""
    clean = {
        "format/buf.h": "",
        "read/trace-set.h": '#include "buf.h"\n',
        "read/inputs.c": '#include "trace-set.h"\n',
        "stats/stats.h": '#include "trace-set.h"\n',
        "cli/cmd.c": '#include "stats.h"\n#include "version.h"\n',
    }
    cases = [
        ({}, None),
        ({"read/names.c": '#include "stats.h"\n'}, "upward"),
        ({"merge/merge.c": '#include "stats.h"\n'}, "sideways"),
        ({"read/a.h": '#include "b.h"\n', "read/b.h": '#include "c.h"\n',
          "read/c.h": '#include "a.h"\n'}, "a cycle between files: read/a.h -> read/b.h"),
        ({"newroom/x.c": ""}, "has no floor"),
        ({"stats/buf.h": ""}, "an include cannot say which"),
    ]
    failed = 0
    for extra, want in cases:
        with tempfile.TemporaryDirectory() as d:
            for path, text in {**clean, **extra}.items():
                os.makedirs(os.path.join(d, os.path.dirname(path)), exist_ok=True)
                with open(os.path.join(d, path), "w") as f:
                    f.write(text)
            _, errors = check(d)
        ok = (not errors) if want is None else any(want in e for e in errors)
        print(f"{'ok ' if ok else 'BAD'} {want or 'clean tree passes'}: {errors}")
        failed += not ok
    return 1 if failed else 0


def main(argv):
    if argv == ["--self-test"]:
        return self_test()
    dot = "--dot" in argv
    args = [a for a in argv if a != "--dot"]
    if len(args) > 1 or any(a.startswith("-") for a in args):
        print(__doc__.strip().split("\n\n")[-2], file=sys.stderr)
        return 2
    src = args[0] if args else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src")
    arrows, errors = check(src)
    if dot:
        print("digraph rooms {")
        for (a, b), n in sorted(arrows.items()):
            print(f'  "{a}" -> "{b}" [label={n}];')
        print("}")
    else:
        for floor in sorted(FLOORS, reverse=True):
            for room in FLOORS[floor]:
                outs = sorted((b, n) for (a, b), n in arrows.items() if a == room)
                line = ", ".join(f"{b} ({n})" for b, n in outs) or "-"
                print(f"floor {floor}  {room + '/':11} -> {line}")
    for e in errors:
        print("layers: " + e, file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
