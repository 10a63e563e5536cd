#!/usr/bin/env python3
"""Sends one command to a MongoDB server over the wire (OP_MSG) and prints the reply's
"ok" and "n" fields, for the command-line tests that must break a queue in a way the
mongomq command itself never would (a lock deleted behind the library's back).

    python3 wire.py URI DB 'JSON COMMAND'

Only what those tests need: mongodb://HOST:PORT[/...] without credentials or TLS, and
JSON made of objects, arrays, strings, integers and booleans. Exit 1 when the reply is
not ok."""

import json
import socket
import struct
import sys


def cstring(text):
    return text.encode("utf-8") + b"\x00"


def element(name, value):
    if isinstance(value, bool):
        return b"\x08" + cstring(name) + (b"\x01" if value else b"\x00")
    if isinstance(value, int):
        return b"\x12" + cstring(name) + struct.pack("<q", value)
    if isinstance(value, str):
        data = value.encode("utf-8") + b"\x00"
        return b"\x02" + cstring(name) + struct.pack("<i", len(data)) + data
    if isinstance(value, dict):
        return b"\x03" + cstring(name) + document(value)
    if isinstance(value, list):
        return b"\x04" + cstring(name) + document({str(i): v for i, v in enumerate(value)})
    raise TypeError("wire.py: no BSON for %r" % (value,))


def document(fields):
    body = b"".join(element(k, v) for k, v in fields.items())
    return struct.pack("<i", len(body) + 5) + body + b"\x00"


def read_document(data, at):
    """The fields of the document at data[at:] (only the scalar types a reply's ok and
    n use; other values are skipped by their length where it is known)."""
    (size,) = struct.unpack_from("<i", data, at)
    end, at, fields = at + size - 1, at + 4, {}
    while at < end:
        kind = data[at]
        name_end = data.index(b"\x00", at + 1)
        name, at = data[at + 1:name_end].decode(), name_end + 1
        if kind == 0x01:
            fields[name] = struct.unpack_from("<d", data, at)[0]
            at += 8
        elif kind == 0x10:
            fields[name] = struct.unpack_from("<i", data, at)[0]
            at += 4
        elif kind == 0x12:
            fields[name] = struct.unpack_from("<q", data, at)[0]
            at += 8
        elif kind == 0x08:
            fields[name] = data[at] == 1
            at += 1
        elif kind in (0x02, 0x03, 0x04):
            (length,) = struct.unpack_from("<i", data, at)
            if kind == 0x02:
                fields[name] = data[at + 4:at + 3 + length].decode("utf-8", "replace")
                at += 4 + length
            else:
                at += length
        else:
            break  # a type this helper does not read: the fields so far
    return fields


def main():
    uri, db, command = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    hostport = uri.split("://", 1)[1].split("/", 1)[0].split("?", 1)[0]
    host, port = hostport.rsplit(":", 1)
    command["$db"] = db
    body = struct.pack("<I", 0) + b"\x00" + document(command)
    header = struct.pack("<iiii", 16 + len(body), 1, 0, 2013)
    with socket.create_connection((host, int(port)), timeout=10) as conn:
        conn.sendall(header + body)
        data = b""
        while len(data) < 4 or len(data) < struct.unpack_from("<i", data, 0)[0]:
            chunk = conn.recv(65536)
            if not chunk:
                raise SystemExit("wire.py: the server closed the connection")
            data += chunk
    reply = read_document(data, 16 + 4 + 1)
    print("ok=%s n=%s" % (reply.get("ok"), reply.get("n")))
    if reply.get("ok") != 1.0 and reply.get("ok") != 1:
        print("wire.py: %s" % reply.get("errmsg", reply), file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
