# SPDX-License-Identifier: MIT
"""What a CMake build links, read from its link.txt files, and nm over the objects: shared by
the house's checks that read the build (scripts/unused-functions.py, scripts/include-graph.py
--objects)."""
import os
import re
import shlex
import subprocess

OBJECT = re.compile(r"(.*)/CMakeFiles/[^/]+\.dir/(.+)\.o$")


def nm(path, *flags):
    """nm -P's lines, split: [name, kind, ...]."""
    out = subprocess.run(["nm", "-P", *flags, path], capture_output=True, text=True, check=True)
    return [line.split() for line in out.stdout.splitlines() if line.strip()]


def source_of(build, obj):
    """build/src/read/CMakeFiles/tally_read.dir/inputs.c.o -> src/read/inputs.c: the collector's
    sources are built twice (libtally.so and the test pipeline) and stay one file here."""
    m = OBJECT.match(os.path.relpath(obj, build))
    return os.path.join(m.group(1), m.group(2)) if m else os.path.relpath(obj, build)


def links(build, tops=("src", "tests", "bench")):
    """Every target the build makes now (an object left behind by an older layout is not read):
    [{"output": path, "shared": bool, "objects": [paths], "archives": [paths]}], paths absolute."""
    targets = []
    for top in tops:
        for root, _, names in os.walk(os.path.join(build, top)):
            if "link.txt" not in names or os.path.basename(os.path.dirname(root)) != "CMakeFiles":
                continue
            where = os.path.dirname(os.path.dirname(root))  # the target's build folder
            with open(os.path.join(root, "link.txt")) as f:
                words = shlex.split(f.read())
            at = lambda w: os.path.normpath(os.path.join(where, w))
            out = next((words[i + 1] for i, w in enumerate(words[:-1]) if w in ("-o", "qc")), "")
            targets.append({"output": at(out) if out else "",
                            "shared": "-shared" in words,
                            "objects": [at(w) for w in words if w.endswith(".o")],
                            "archives": [at(w) for w in words if w.endswith(".a") and w != out]})
    return targets


def linked_objects(target, targets):
    """A target's objects with those of the static libraries it links, however deep."""
    by_output = {t["output"]: t for t in targets}
    seen, objects, todo = set(), list(target["objects"]), list(target["archives"])
    while todo:
        a = todo.pop()
        if a in seen or a not in by_output:
            continue
        seen.add(a)
        objects += by_output[a]["objects"]
        todo += by_output[a]["archives"]
    return [o for o in objects if os.path.exists(o)]
