#!/usr/bin/env python3
"""Print the run header of a Gatling simulation.log (provenance check for bench/peer-fixtures-jvm.sh).

Binary log (Gatling 3.13.x, LogFileDataWriter.RunMessageSerializer), big-endian:
  byte   0x00 (RecordHeader.Run)
  string gatlingVersion, string simulationClassName, int64 start (epoch ms), string runDescription
  int32  scenario count, then that many strings
  int32  assertion count, then per assertion: int32 length + that many bytes (boopickle)
  string = int32 n (length of the JDK-internal byte[] value); if n > 0: n bytes + 1 coder byte
           (0 = LATIN1, 1 = UTF16 in the JVM's native byte order); n == 0: empty, no coder byte.
Text log (Gatling <= 3.12): ASSERTION<TAB>base64(boopickle) lines, then
  RUN<TAB>class<TAB>simulationId<TAB>start<TAB>description<TAB>version.
Usage: gatling_header.py simulation.log
"""
import base64
import struct
import sys


def read_string(f):
    (n,) = struct.unpack(">i", f.read(4))
    if n == 0:
        return ""
    value = f.read(n)
    coder = f.read(1)[0]
    if coder == 0:
        return value.decode("latin-1")
    return value.decode("utf-16-le" if sys.byteorder == "little" else "utf-16-be")


def binary(path):
    with open(path, "rb") as f:
        header = f.read(1)
        if header != b"\x00":
            raise SystemExit(f"{path}: first byte {header!r}, expected 0x00 (Run record)")
        version = read_string(f)
        cls = read_string(f)
        (start,) = struct.unpack(">q", f.read(8))
        desc = read_string(f)
        (nscen,) = struct.unpack(">i", f.read(4))
        scenarios = [read_string(f) for _ in range(nscen)]
        (nass,) = struct.unpack(">i", f.read(4))
        assertions = []
        for _ in range(nass):
            (n,) = struct.unpack(">i", f.read(4))
            assertions.append(f.read(n).hex())
    print("format:      binary (Gatling 3.13+)")
    print(f"version:     {version}")
    print(f"simulation:  {cls}")
    print(f"start:       {start}")
    print(f"description: {desc!r}")
    print(f"scenarios:   {scenarios}")
    print(f"assertions:  {nass}")
    for i, h in enumerate(assertions):
        print(f"  [{i}] {len(h) // 2} bytes: {h}")


def text(path):
    with open(path, "rb") as f:
        for raw in f:
            fields = raw.rstrip(b"\r\n").split(b"\t")
            if fields[0] == b"ASSERTION":
                print(f"ASSERTION   {base64.b64decode(fields[1]).hex()}")
            elif fields[0] == b"RUN":
                print("format:      text (Gatling <= 3.12)")
                print("RUN         " + " | ".join(x.decode("utf-8", "replace") for x in fields[1:]))
                return
            else:
                raise SystemExit(f"{path}: unexpected record {fields[0]!r} before RUN")


if __name__ == "__main__":
    p = sys.argv[1]
    with open(p, "rb") as f:
        first = f.read(1)
    (binary if first == b"\x00" else text)(p)
