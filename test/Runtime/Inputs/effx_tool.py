#!/usr/bin/env python3
"""Damages, edits or converts .effx files for effrun's tests (docs/Effx.md).

  effx_tool.py IN OUT truncate N        keep the first N bytes (N < 0: drop -N)
  effx_tool.py IN OUT flip SECTION I    flip a bit of byte I of a section
                                        (header, table, manifest, code,
                                        state); CRCs are left as they are
  effx_tool.py IN OUT manifest JSON     merge JSON into the manifest (null
                                        deletes a key) and repack with
                                        correct offsets and CRCs
  effx_tool.py IN OUT code FILE         replace the code section, repacked
  effx_tool.py IN OUT v1                rewrite as a version-1 file (the
                                        whole state image, no "init")
  effx_tool.py IN OUT add KIND FLAGS TARGET NAME FILE
                                        add a section (TARGET "-" for none)
  effx_tool.py IN info                  print the manifest's regions and size
  effx_tool.py IN manifest              print the manifest (JSON, sorted keys)
  effx_tool.py IN sections              print the section table, one line
                                        each: KIND TARGET NAME SIZE FLAGS

Reads versions 1 and 2; writes the version it read (v1 excepted).
"""
import json
import struct
import sys
import zlib

MAGIC = b"EFFX\r\n\x1a\n"
ALIGN = 64
HEADER_V1 = struct.Struct("<8sII" + "QQII" * 3 + "II")
HEADER = struct.Struct("<8sIIQIIII24x")
ENTRY = struct.Struct("<II24s40sQQII")
assert HEADER_V1.size == 96 and HEADER.size == 64 and ENTRY.size == 96
MANIFEST, HOST_CODE, DEVICE_CODE, INITIAL_STATE = 1, 2, 3, 4
REQUIRED = 1
DTYPE_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2, "float64": 8,
               "int64": 8, "int32": 4, "int16": 2, "int8": 1, "uint8": 1,
               "uint16": 2, "uint32": 4, "uint64": 8, "bool": 1}


def align(n):
    return (n + ALIGN - 1) // ALIGN * ALIGN


def entry_bytes(e):
    n = DTYPE_BYTES[e["dtype"]]
    for d in e["shape"]:
        n *= d
    return n


class Effx:
    """version, sections [(kind, flags, target, name, offset, bytes)]."""

    def __init__(self, data):
        (self.version,) = struct.unpack_from("<I", data, 8)
        self.sections = []
        if self.version == 1:
            f = HEADER_V1.unpack_from(data, 0)
            for i, (kind, name) in enumerate(((MANIFEST, "manifest"),
                                              (HOST_CODE, "step"),
                                              (INITIAL_STATE, "state"))):
                off, size = f[3 + 4 * i], f[4 + 4 * i]
                self.sections.append([kind, REQUIRED, "", name, off,
                                      data[off:off + size]])
            self.table_offset = None
        else:
            _, _, _, table, count, _, _, _ = HEADER.unpack_from(data, 0)
            self.table_offset = table
            for i in range(count):
                kind, flags, target, name, off, size, _, _ = \
                    ENTRY.unpack_from(data, table + i * ENTRY.size)
                self.sections.append([kind, flags,
                                      target.rstrip(b"\0").decode(),
                                      name.rstrip(b"\0").decode(), off,
                                      data[off:off + size]])
        self.manifest = json.loads(self.find(MANIFEST)[5])
        if self.version == 1:
            self.find(HOST_CODE)[2] = self.manifest["target"]

    def find(self, kind):
        return next(s for s in self.sections if s[0] == kind)

    def state_image(self):
        """The whole state region's initial bytes."""
        stored = self.find(INITIAL_STATE)[5]
        if self.version == 1:
            return stored
        image = bytearray(self.manifest["regions"]["state"])
        at = 0
        for e in self.manifest["state"]:
            n = entry_bytes(e)
            if e.get("init") != "zeros":
                image[e["offset"]:e["offset"] + n] = stored[at:at + n]
                at += n
        return bytes(image)

    def pack(self):
        self.find(MANIFEST)[5] = json.dumps(self.manifest).encode()
        if self.version == 1:
            return self.pack_v1()
        table_bytes = len(self.sections) * ENTRY.size
        out = bytearray(align(HEADER.size + table_bytes))
        table = b""
        for kind, flags, target, name, _, blob in self.sections:
            off = len(out)
            out += blob
            out += b"\0" * (-len(out) % ALIGN)
            table += ENTRY.pack(kind, flags, target.encode(), name.encode(),
                                off, len(blob), zlib.crc32(blob), 0)
        out[HEADER.size:HEADER.size + table_bytes] = table
        fields = [MAGIC, 2, HEADER.size, HEADER.size, len(self.sections),
                  ENTRY.size, zlib.crc32(table)]
        crc = zlib.crc32(HEADER.pack(*fields, 0))
        out[:HEADER.size] = HEADER.pack(*fields, crc)
        end = max([HEADER.size + table_bytes] +
                  [struct.unpack_from("<Q", table, i * ENTRY.size + 72)[0] +
                   len(s[5]) for i, s in enumerate(self.sections)])
        return bytes(out[:end])

    def pack_v1(self):
        blobs = [self.find(k)[5] for k in (MANIFEST, HOST_CODE, INITIAL_STATE)]
        out = bytearray(align(HEADER_V1.size))
        fields = []
        for blob in blobs:
            off = len(out)
            out += blob
            out += b"\0" * (-len(out) % ALIGN)
            fields += [off, len(blob), zlib.crc32(blob), 0]
        header = HEADER_V1.pack(MAGIC, 1, HEADER_V1.size, *fields, 0, 0)
        header = HEADER_V1.pack(MAGIC, 1, HEADER_V1.size, *fields,
                                zlib.crc32(header), 0)
        out[:HEADER_V1.size] = header
        return bytes(out[:fields[-4] + fields[-3]])


def main(argv):
    data = open(argv[1], "rb").read()
    effx = Effx(data)
    if argv[2] == "info":
        print(json.dumps(effx.manifest["regions"], sort_keys=True))
        print(sum(effx.manifest["regions"].values()))
        return
    if argv[2] == "manifest":
        print(json.dumps(effx.manifest, sort_keys=True))
        return
    if argv[2] == "sections":
        for kind, flags, target, name, _, blob in effx.sections:
            print(kind, target or "-", name, len(blob), flags)
        return
    out, op = argv[2], argv[3]
    if op == "truncate":
        n = int(argv[4])
        result = data[:n] if n >= 0 else data[:len(data) + n]
    elif op == "flip":
        kinds = {"manifest": MANIFEST, "code": HOST_CODE,
                 "state": INITIAL_STATE}
        if argv[4] == "header":
            base = 0
        elif argv[4] == "table":
            base = effx.table_offset
        else:
            base = effx.find(kinds[argv[4]])[4]
        i = base + int(argv[5])
        result = data[:i] + bytes([data[i] ^ 0x10]) + data[i + 1:]
    elif op == "manifest":
        for key, value in json.loads(argv[4]).items():
            if value is None:
                effx.manifest.pop(key, None)
            else:
                effx.manifest[key] = value
        result = effx.pack()
    elif op == "code":
        effx.find(HOST_CODE)[5] = open(argv[4], "rb").read()
        result = effx.pack()
    elif op == "v1":
        image = effx.state_image()
        effx.version = 1
        effx.manifest["version"] = 1
        effx.manifest["minor_version"] = 1
        for e in effx.manifest["state"]:
            e.pop("init", None)
        effx.find(INITIAL_STATE)[5] = image
        result = effx.pack()
    elif op == "add":
        kind, flags, target, name, path = argv[4:9]
        effx.sections.append([int(kind), int(flags),
                              "" if target == "-" else target, name, 0,
                              open(path, "rb").read()])
        result = effx.pack()
    else:
        sys.exit("unknown operation " + op)
    open(out, "wb").write(result)


if __name__ == "__main__":
    main(sys.argv)
