#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The include graph of src/, from its #include "..." lines, checked against the floors.

Each folder of src/ is a room on a floor (docs/architecture.md), and a room may hold rooms of its
own on floors of their own (collector/entry over collector/session ... over collector/base): a
file's room is its folder under src/.  A file may include headers of its own room and of rooms on
lower floors only, compared in the folder where the two rooms part: an include that runs sideways
(another room of the same floor) or upward fails, and so does a cycle between files (headers that
include each other, however far round; include guards hide such a cycle from the compiler, not
from a reader).  A folder missing from FLOORS fails too: a new room takes its floor here, in the
same commit.  The upward includes in KNOWN are the one exception, each named with its reason,
until the change that removes it takes it out.

With --objects BUILD, the files' graph also has an arrow from a file to each file that defines
a name it uses, read with nm from the objects the build links (scripts/buildobjects.py), and
any circle of files fails: two files that call each other, however far round, are one job in
two places, or a lower one that calls up.  So does a call of realloc outside common/grow.c (the
one growable array: ONLY_IN).  A tie through a name a shared library of the build
exports (libtally.so's interposers: read, pthread_mutex_lock, ...) is no arrow but an error
of its own: a file linked into that library must not use it (tally's own calls go to libc's,
collector/base/libc.h).

  scripts/include-graph.py [SRC]        check; print the graph between rooms (arrows, counts)
  scripts/include-graph.py --dot [SRC]  the same graph for Graphviz
  scripts/include-graph.py --objects BUILD [SRC]
                                        also the circles of files through the objects' symbols
  scripts/include-graph.py --self-test  the check catches what it must, on made-up trees

Exit 0 when the house keeps the rule, 1 when it does not (each violation named), 2 on misuse.
"""
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from buildobjects import linked_objects, links, nm, source_of  # noqa: E402

# The floors of each folder that holds rooms ("" is src/ itself): a room uses only rooms on lower
# floors of the same folder (and, through its folder, whatever the folder may use).  A folder with
# floors of its own (collector/) holds files only inside its rooms.
FLOORS = {
    "": {
        0: ["common"],
        1: ["format"],
        2: ["read", "collector", "doctor"],
        3: ["stats", "merge"],
        4: ["export", "compare", "page"],
        5: ["cli"],
    },
    # tally stats: the model (the report table, the pass, the views) over the diagnosis, over the
    # analyses it reads (the host's and the metrics' over the GPU timeline's), over their base
    "stats": {
        1: ["base"],
        2: ["gpu"],
        3: ["host", "metrics"],
        4: ["diagnosis"],
        5: ["model"],
    },
    # libtally.so: the ways in and out over the session, over what the session drives; the hot
    # path (activity/) under the threads that feed it, over the stack tables and the ground floor
    "collector": {
        1: ["base"],
        2: ["stacks"],
        3: ["activity"],
        4: ["osrt", "metrics"],
        5: ["host"],
        6: ["session"],
        7: ["entry"],
    },
}
FLOOR_OF = {(folder, room): floor for folder, floors in FLOORS.items()
            for floor, rooms in floors.items() for room in rooms}
# Upward includes the code has today, each behind a circle of files that a later change removes
# (issue 33, item 2); the check tolerates these and no other, and fails once one is gone, so the
# list only shrinks.  (including file, included name): why it is there.
KNOWN = {
}
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
    """A file's room: its folder under src/ ("collector/host" for collector/host/sampler.c)."""
    return os.path.dirname(path).replace(os.sep, "/")


def place_error(room):
    """Why a room has no place on the floors, or None: every folder on its way from src/ is a
    room of its parent's floors, and a folder with floors of its own holds no files."""
    if room in FLOORS:
        return f"{room}/ holds rooms: its files go in one of them"
    parts = room.split("/")
    for i, name in enumerate(parts):
        folder = "/".join(parts[:i])
        if (folder, name) not in FLOOR_OF:
            where = f"FLOORS[{folder!r}]" if folder in FLOORS else f"FLOORS (no {folder}/ entry)"
            return f"room {'/'.join(parts[:i + 1])}/ has no floor in {where} (scripts/include-graph.py)"
    return None


def floors_between(room, to):
    """Where two different rooms part: (their folder, room's floor, to's floor) in that folder."""
    a, b = room.split("/"), to.split("/")
    i = 0
    while i < min(len(a), len(b)) and a[i] == b[i]:
        i += 1
    folder = "/".join(a[:i])
    return folder, FLOOR_OF[(folder, a[i])], FLOOR_OF[(folder, b[i])]


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


def check(src, known=None):
    """(arrows between rooms with their counts, errors, the known upward includes met)."""
    known = KNOWN if known is None else known
    files = read_tree(src)
    by_name, errors = resolve(files)
    arrows, graph, met = {}, {}, []
    for path in sorted(files):
        room = room_of(path)
        why = place_error(room)
        if why:
            errors.append(f"{path}: {why}")
            continue
        graph.setdefault(path, set())
        for name in files[path]:
            target = by_name.get(name)
            if target is None:
                continue
            to = room_of(target)
            graph[path].add(target)
            if to == room or place_error(to):
                continue
            arrows[(room, to)] = arrows.get((room, to), 0) + 1
            folder, floor, to_floor = floors_between(room, to)
            if to_floor < floor:
                continue
            if (path, name) in known:
                met.append((path, target))
                continue
            where = f" of {folder}/" if folder else ""
            way = "sideways" if to_floor == floor else "upward"
            errors.append(f"{path}: includes {target} ({way}: {room}/ is on floor {floor}{where}, "
                          f"{to}/ on floor {to_floor})")
    for path, name in sorted(set(known) - {(p, os.path.basename(t)) for p, t in met}):
        errors.append(f"{path}: no longer includes {name} upward: take it out of KNOWN")
    cycle = find_cycle(graph)
    if cycle:
        errors.append("a cycle between files: " + " -> ".join(cycle))
    return arrows, errors, met


DEFINED = set("TDRB")  # global text, data, read-only data, bss
# Functions of the C library that one file of src/ calls for all the others: the one copy of what
# they do (issue 33: every growing array doubles and checks its size for overflow there).
ONLY_IN = {
    "realloc": "common/grow.c",
    "reallocarray": "common/grow.c",
}


def symbol_graph(build, src):
    """From the objects the build links: {file: {file defining a name it uses: {names}}} over the
    files of src (paths relative to it), and the errors: a file linked into a shared library of
    the build that uses a name the library exports.  Names defined twice count once (the
    collector's files are built into libtally.so and into the tests' static pipeline)."""
    targets = [t for t in links(build, ("src",))]
    defined, used = {}, {}

    def rel(obj):
        path = os.path.relpath(os.path.join(build, source_of(build, obj)), os.path.join(build, "src"))
        return path if os.path.exists(os.path.join(src, path)) else None

    for obj in sorted({o for t in targets for o in t["objects"] if os.path.exists(o)}):
        path = rel(obj)
        if not path:
            continue  # generated (protoc-c's perfetto code)
        for f in nm(obj):
            if len(f) >= 2 and f[1] == "U":
                used.setdefault(path, set()).add(f[0])
            elif len(f) >= 2 and f[1] in DEFINED:
                defined.setdefault(f[0], path)
    errors, exported_anywhere = [], set()
    for t in targets:
        if not t["shared"] or not os.path.exists(t["output"]):
            continue
        exported = {f[0] for f in nm(t["output"], "-D", "--defined-only") if len(f) > 1}
        exported_anywhere |= exported
        for obj in linked_objects(t, targets):
            path = rel(obj)
            names = sorted(n for n in used.get(path, set()) & exported if defined.get(n) != path)
            if path and names:
                errors.append(f"{path}: uses {', '.join(names)}, which {os.path.basename(t['output'])} "
                              "exports (an interposer): call libc's (collector/base/libc.h)")
    for path, names in sorted(used.items()):
        for name in sorted(names & set(ONLY_IN)):
            if path != ONLY_IN[name]:
                errors.append(f"{path}: calls {name}, which only {ONLY_IN[name]} calls: use it")
    graph = {}
    for path, names in used.items():
        for name in names - exported_anywhere:
            to = defined.get(name)
            if to and to != path:
                graph.setdefault(path, {}).setdefault(to, set()).add(name)
    return graph, sorted(set(errors))


def circles(graph):
    """The strongly connected components of more than one file (Tarjan's, iterative), each as
    its sorted files."""
    index, low, on, stack, found, counter = {}, {}, set(), [], [], [0]
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on.add(root)
        while work:
            node, it = work[-1]
            nxt = next(it, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter[0]
                    counter[0] += 1
                    stack.append(nxt)
                    on.add(nxt)
                    work.append((nxt, iter(sorted(graph.get(nxt, ())))))
                elif nxt in on:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    x = stack.pop()
                    on.discard(x)
                    comp.append(x)
                    if x == node:
                        break
                if len(comp) > 1:
                    found.append(sorted(comp))
    return sorted(found)


def circle_text(comp, graph):
    """One way round a circle, each arrow with a name it stands for."""
    inside = set(comp)
    path, seen = [comp[0]], {comp[0]}
    while True:
        nexts = sorted(t for t in graph.get(path[-1], {}) if t in inside)
        back = comp[0] in nexts
        step = comp[0] if back or all(t in seen for t in nexts) else \
            next(t for t in nexts if t not in seen)
        names = sorted(graph[path[-1]].get(step, {"?"}))
        path[-1] += f" ({names[0]}{', ...' if len(names) > 1 else ''})"
        if step == comp[0] or step in seen:
            path.append(step)
            return " -> ".join(path) + (f"; the circle holds {len(comp)} files" if len(comp) > 2 else "")
        path.append(step)
        seen.add(step)


def check_objects(build, src):
    """The circles of files through the build's symbols (and the includes), and the errors."""
    graph, errors = symbol_graph(build, src)
    files = read_tree(src)
    by_name, _ = resolve(files)
    for path, names in files.items():
        for name in names:
            if by_name.get(name) and by_name[name] != path:
                graph.setdefault(path, {}).setdefault(by_name[name], set()).add(f"#include {name}")
    found = circles(graph)
    errors += ["a circle of files: " + circle_text(comp, graph) for comp in found]
    return found, errors


def self_test_objects():
    """A made-up build: two files that call each other, and a shared library whose own file calls
    a name the library exports, are found; the clean build passes."""
    cc = os.environ.get("CC", "cc")
    clean = {
        "src/a/low.c": "int low(void) { return 1; }\n",
        "src/a/high.c": "int low(void);\nint high(void) { return low(); }\n",
        "src/lib/read.c": "#include <unistd.h>\n__attribute__((visibility(\"default\")))\n"
                          "ssize_t read(int f, void *b, size_t n) { (void)f; (void)b; return (ssize_t)n; }\n",
        "src/lib/user.c": "int user(void) { return 0; }\n",
    }
    cases = [
        ({}, None),
        ({"src/a/low.c": "int high(void);\nint low(void) { return high(); }\n"},
         "a circle of files: a/high.c (low) -> a/low.c (high) -> a/high.c"),
        ({"src/lib/user.c": "#include <unistd.h>\nint user(void) { char c; return (int)read(0, &c, 1); }\n"},
         "lib/user.c: uses read, which libx.so exports"),
        ({"src/a/low.c": "#include <stdlib.h>\nvoid *low(void *p) { return realloc(p, 1); }\n"},
         "a/low.c: calls realloc, which only common/grow.c calls"),
    ]
    failed = 0
    for extra, want in cases:
        with tempfile.TemporaryDirectory() as d:
            for path, text in {**clean, **extra}.items():
                full = os.path.join(d, path)
                folder, name = os.path.split(full)
                objdir = os.path.join(folder, "CMakeFiles", "t.dir")
                os.makedirs(objdir, exist_ok=True)
                with open(full, "w") as f:
                    f.write(text)
                subprocess.run([cc, "-fPIC", "-fvisibility=hidden", "-c", "-o",
                                os.path.join(objdir, name + ".o"), full], check=True)
            lib = os.path.join(d, "src", "lib")
            with open(os.path.join(lib, "CMakeFiles", "t.dir", "link.txt"), "w") as f:
                f.write("cc -shared -o libx.so CMakeFiles/t.dir/read.c.o CMakeFiles/t.dir/user.c.o\n")
            subprocess.run([cc, "-shared", "-o", os.path.join(lib, "libx.so"),
                            os.path.join(lib, "CMakeFiles", "t.dir", "read.c.o"),
                            os.path.join(lib, "CMakeFiles", "t.dir", "user.c.o")], check=True)
            with open(os.path.join(d, "src", "a", "CMakeFiles", "t.dir", "link.txt"), "w") as f:
                f.write("ar qc liba.a CMakeFiles/t.dir/low.c.o CMakeFiles/t.dir/high.c.o\n")
            _, errors = check_objects(d, os.path.join(d, "src"))
        ok = (not errors) if want is None else any(want in e for e in errors)
        print(f"{'ok ' if ok else 'BAD'} --objects: {want or 'clean build passes'}: {errors}")
        failed += not ok
    return failed


def self_test():
    """Each kind of violation on a made-up tree is found, and the clean tree passes."""
    clean = {
        "format/buf.h": "",
        "read/trace-set.h": '#include "buf.h"\n',
        "read/inputs.c": '#include "trace-set.h"\n',
        "stats/model/stats.h": '#include "trace-set.h"\n',
        "cli/cmd.c": '#include "stats.h"\n#include "version.h"\n',
        "collector/entry/inject.c": '#include "collector.h"\n#include "pipeline.h"\n',
        "collector/session/collector.h": '#include "pipeline.h"\n#include "log.h"\n',
        "collector/activity/pipeline.h": '#include "buf.h"\n#include "log.h"\n',
        "collector/base/log.h": "",
        "collector/base/log.c": '#include "collector.h"\n',  # known, below
    }
    known = {("collector/base/log.c", "collector.h"): "made up"}
    cases = [
        ({}, None),
        ({"collector/base/log.c": ""}, "collector/base/log.c: no longer includes collector.h upward"),
        ({"read/names.c": '#include "stats.h"\n'}, "upward"),
        ({"merge/merge.c": '#include "stats.h"\n'}, "sideways"),
        ({"read/a.h": '#include "b.h"\n', "read/b.h": '#include "c.h"\n',
          "read/c.h": '#include "a.h"\n'}, "a cycle between files: read/a.h -> read/b.h"),
        ({"newroom/x.c": ""}, "has no floor"),
        ({"stats/base/buf.h": ""}, "an include cannot say which"),
        # rooms inside a room: their own floors, the house's floors beyond their folder
        ({"collector/activity/pool.c": '#include "collector.h"\n'},
         "upward: collector/activity/ is on floor 3 of collector/"),
        ({"collector/osrt/osrt.c": '#include "pmsampler.h"\n',
          "collector/metrics/pmsampler.h": ""}, "sideways: collector/osrt/ is on floor 4 of"),
        ({"collector/base/ring.h": '#include "stats.h"\n'},
         "upward: collector/base/ is on floor 2, stats/model/ on floor 3"),
        ({"format/codec.h": '#include "log.h"\n'}, "upward: format/ is on floor 1"),
        ({"collector/attic/old.c": ""}, "room collector/attic/ has no floor in FLOORS['collector']"),
        ({"read/sub/x.c": ""}, "room read/sub/ has no floor in FLOORS (no read/ entry)"),
        ({"collector/loose.h": ""}, "collector/ holds rooms"),
    ]
    failed = 0
    for extra, want in cases:
        with tempfile.TemporaryDirectory() as d:
            for path, text in {**clean, **extra}.items():
                os.makedirs(os.path.join(d, os.path.dirname(path)), exist_ok=True)
                with open(os.path.join(d, path), "w") as f:
                    f.write(text)
            _, errors, _ = check(d, known)
        ok = (not errors) if want is None else any(want in e for e in errors)
        print(f"{'ok ' if ok else 'BAD'} {want or 'clean tree passes'}: {errors}")
        failed += not ok
    failed += self_test_objects()
    return 1 if failed else 0


def print_rooms(arrows, folder):
    """The graph between the rooms of one folder: each room's arrows to the rooms it uses, an
    arrow that leaves the folder named by the room it reaches beside the folder."""
    inside = folder + "/" if folder else ""
    for floor in sorted(FLOORS[folder], reverse=True):
        for room in FLOORS[folder][floor]:
            outs = {}
            for (a, b), n in arrows.items():
                if a == inside + room or a.startswith(inside + room + "/"):
                    if b.startswith(inside) and folder:
                        to = b[len(inside):].split("/")[0]
                    else:
                        to = b.split("/")[0]
                    if to != room:
                        outs[to] = outs.get(to, 0) + n
            line = ", ".join(f"{b} ({n})" for b, n in sorted(outs.items())) or "-"
            print(f"{'  ' * inside.count('/')}floor {floor}  {room + '/':11} -> {line}")
            if inside + room in FLOORS:
                print_rooms(arrows, inside + room)


def main(argv):
    if argv == ["--self-test"]:
        return self_test()
    dot = "--dot" in argv
    args = [a for a in argv if a != "--dot"]
    build = None
    if args[:1] == ["--objects"] and len(args) >= 2:
        build, args = args[1], args[2:]
    if len(args) > 1 or any(a.startswith("-") for a in args):
        print(__doc__.strip().split("\n\n")[-2], file=sys.stderr)
        return 2
    src = args[0] if args else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src")
    arrows, errors, met = check(src)
    if build is not None:
        if not any(t["objects"] for t in links(build, ("src",))):
            print(f"include-graph: no object files under {build}: build first", file=sys.stderr)
            return 2
        found, more = check_objects(build, src)
        errors += more
        print(f"circles of files (includes and the objects' symbols): {len(found)}")
    if dot:
        print("digraph rooms {")
        for (a, b), n in sorted(arrows.items()):
            print(f'  "{a}" -> "{b}" [label={n}];')
        print("}")
    else:
        print_rooms(arrows, "")
        for path, target in met:
            print(f"known upward: {path} -> {target} "
                  f"({KNOWN[(path, os.path.basename(target))]})")
    for e in errors:
        print("layers: " + e, file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
