#!/usr/bin/env python3
"""Every chunk type and record kind of the format is in the fuzz corpus, so that the fuzzers'
structure-aware mutator (chunk-mutator.c) and ctest's corpus replays reach every decoder.  A
branch that adds a chunk type or a record kind to src/format/tally-format.h fails here until it
adds a crafted case for it (tests/support/tally-craft.c) to tests/fuzz/corpus/.

Usage: corpus-coverage.py TALLY_FORMAT_H CORPUS_DIR
       corpus-coverage.py --self-test
"""
import os
import re
import struct
import sys
import tempfile

PREAMBLE = 16
HEADER = 32
SYNC = 0x4B4E4843  # "CHNK"
RECORDS = 3


def enum_values(header, enum, stop):
    """Name -> value of an enum of header, up to (not with) its member stop."""
    text = open(header).read()
    body = re.search(r"enum %s \{(.*?)\};" % enum, text, re.S).group(1)
    values, nxt = {}, 0
    for m in re.finditer(r"^\s*(TALLY_\w+)\s*(?:=\s*(\d+))?\s*,", body, re.M):
        name, val = m.group(1), m.group(2)
        nxt = int(val) if val else nxt
        if name == stop:
            break
        values[name] = nxt
        nxt += 1
    return values


def varint(b, at):
    v = shift = 0
    while at < len(b):
        c = b[at]
        at += 1
        v |= (c & 0x7F) << shift
        shift += 7
        if not c & 0x80:
            return v, at
    return None, at


def chunks(data):
    """(type, payload) of every chunk whose header is where the one before it ends."""
    at = PREAMBLE
    while at + HEADER <= len(data):
        sync, ctype, _flags, length = struct.unpack_from("<IHHI", data, at)
        if sync != SYNC or at + HEADER + length > len(data):
            break
        yield ctype, data[at + HEADER : at + HEADER + length]
        at += HEADER + length


def seen(corpus):
    types, kinds = set(), set()
    for name in sorted(os.listdir(corpus)):
        data = open(os.path.join(corpus, name), "rb").read()
        for ctype, payload in chunks(data):
            types.add(ctype)
            if ctype == RECORDS:
                kind, _ = varint(payload, 0)
                kinds.add(kind)
    return types, kinds


def check(header, corpus):
    want_types = enum_values(header, "tally_chunk_type", "TALLY_CHUNK_TYPE_MAX")
    want_kinds = enum_values(header, "tally_kind", "TALLY_KIND_MAX")
    want_kinds.pop("TALLY_KIND_NONE", None)
    types, kinds = seen(corpus)
    missing = [n for n, v in want_types.items() if v not in types]
    missing += [n for n, v in want_kinds.items() if v not in kinds]
    for n in missing:
        print("FAIL no corpus file holds %s: add a tally-craft case for it to %s" % (n, corpus))
    if not missing:
        print("ok   the corpus holds all %d chunk types and %d record kinds"
              % (len(want_types), len(want_kinds)))
    return 0 if not missing else 1


def self_test():
    with tempfile.TemporaryDirectory() as d:
        h = os.path.join(d, "f.h")
        open(h, "w").write("enum tally_chunk_type {\n\tTALLY_CHUNK_A = 1,\n\tTALLY_CHUNK_RECORDS = 3,"
                           "\n\tTALLY_CHUNK_TYPE_MAX,\n};\nenum tally_kind {\n\tTALLY_KIND_NONE = 0,"
                           "\n\tTALLY_KIND_X = 1,\n\tTALLY_KIND_MAX,\n};\n")
        c = os.path.join(d, "corpus")
        os.mkdir(c)

        def chunk(t, p):
            return struct.pack("<IHHIII", SYNC, t, 0, len(p), 0, 0) + b"\0" * 12 + p

        open(os.path.join(c, "one"), "wb").write(b"\0" * 16 + chunk(1, b"x"))
        assert check(h, c) == 1, "a missing chunk type and kind must fail"
        open(os.path.join(c, "two"), "wb").write(b"\0" * 16 + chunk(3, b"\x01\x00"))
        assert check(h, c) == 0, "all present must pass"
    print("ok   self-test: a corpus without a chunk type or a kind fails, a full one passes")
    return 0


if __name__ == "__main__":
    if sys.argv[1:] == ["--self-test"]:
        sys.exit(self_test())
    sys.exit(check(sys.argv[1], sys.argv[2]))
