#!/usr/bin/env python3
"""Sends one command to a MongoDB server over the wire (OP_MSG) with plain sockets and
hand-written BSON (no driver needed), prints the reply's "ok" and "n", and exits 1
unless ok is 1.

    python3 scripts/wire.py URI DB 'JSON COMMAND'

Used by scripts/test-server.sh (its `ping`) and by the command-line tests, which must
break a queue in a way the mongomq command never would (a lock deleted behind the
library's back). Only what those need: mongodb://[user@]HOST[:PORT][,...][/...] (the
first host; no authentication, no TLS), and JSON made of objects, arrays, strings,
integers (sent as int64), floats and booleans.

Also a module: tests/faults/stepdown_proxy.py imports its OP_MSG framing (HEADER,
op_msg, op_msg_command) and BSON (document, elements, top_level, Int32), so that the
project keeps one hand-written encoder and decoder."""

import json
import socket
import struct
import sys

OP_MSG = 2013
HEADER = struct.Struct("<iiii")  # messageLength, requestID, responseTo, opCode
MORE_TO_COME = 1 << 1            # OP_MSG flagBits: no reply follows this message
TIMEOUT_S = 3


class Int32(int):
    """An int sent as BSON int32 (plain ints go out as int64): what a server uses for
    `code` in its error replies."""


def parse_uri(uri):
    if not uri.startswith("mongodb://"):
        raise ValueError("not a mongodb:// URI: %r" % uri)
    hosts = uri[len("mongodb://"):].split("/", 1)[0].split("?", 1)[0]
    host = hosts.rsplit("@", 1)[-1].split(",", 1)[0]
    if host.startswith("["):  # [v6]:port
        h, _, p = host[1:].partition("]")
        return h, int(p.lstrip(":") or 27017)
    h, _, p = host.partition(":")
    return h, int(p or 27017)


def cstring(text):
    return text.encode("utf-8") + b"\x00"


def element(name, value):
    if isinstance(value, bool):
        return b"\x08" + cstring(name) + (b"\x01" if value else b"\x00")
    if isinstance(value, Int32):
        return b"\x10" + cstring(name) + struct.pack("<i", value)
    if isinstance(value, float):
        return b"\x01" + cstring(name) + struct.pack("<d", value)
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


def top_level(doc):
    """The top-level fields of a BSON document: {name: value}, None for the values
    this tool does not decode (documents, arrays, binaries...)."""
    return dict(elements(doc))


def elements(doc):
    """The top-level fields of a BSON document one by one, in order, as (name, value)
    pairs (values as top_level gives them); lazy, so next(elements(doc)) reads only a
    command's name and its collection."""
    i, end = 4, len(doc) - 1
    while i < end:
        t = doc[i]
        j = doc.index(b"\x00", i + 1)
        name, i = doc[i + 1:j].decode("utf-8", "replace"), j + 1
        v = None
        if t == 0x01:
            v = struct.unpack_from("<d", doc, i)[0]; i += 8
        elif t in (0x02, 0x0D, 0x0E):
            n = struct.unpack_from("<i", doc, i)[0]; v = doc[i + 4:i + 3 + n].decode("utf-8", "replace"); i += 4 + n
        elif t in (0x03, 0x04, 0x0F):
            i += struct.unpack_from("<i", doc, i)[0]
        elif t == 0x05:
            i += 5 + struct.unpack_from("<i", doc, i)[0]
        elif t == 0x07:
            i += 12
        elif t == 0x08:
            v = doc[i] != 0; i += 1
        elif t in (0x09, 0x11, 0x12):
            v = struct.unpack_from("<q", doc, i)[0]; i += 8
        elif t in (0x06, 0x0A, 0x7F, 0xFF):
            pass
        elif t == 0x0B:
            i = doc.index(b"\x00", doc.index(b"\x00", i) + 1) + 1
        elif t == 0x0C:
            i += 4 + struct.unpack_from("<i", doc, i)[0] + 12
        elif t == 0x10:
            v = struct.unpack_from("<i", doc, i)[0]; i += 4
        elif t == 0x13:
            i += 16
        else:
            raise ValueError("unsupported BSON type 0x%02x" % t)
        yield name, v


def op_msg(request_id, response_to, fields):
    """One whole OP_MSG message (header, flagBits 0, one kind-0 section)."""
    body = struct.pack("<I", 0) + b"\x00" + document(fields)
    return HEADER.pack(HEADER.size + len(body), request_id, response_to, OP_MSG) + body


def op_msg_command(body):
    """The command document (its kind-0 section's BSON bytes) of an OP_MSG, given the
    message after its 16-byte header, and its flagBits. Kind-1 sections (an insert's
    documents, an update's updates...) are skipped, and so is a checksum."""
    flags = struct.unpack_from("<I", body, 0)[0]
    end = len(body) - (4 if flags & 1 else 0)  # checksumPresent: a CRC-32C closes it
    i, command = 4, None
    while i < end:
        kind = body[i]
        size = struct.unpack_from("<i", body, i + 1)[0]  # both kinds: int32 size first
        if kind == 0:
            command = body[i + 1:i + 1 + size]
        elif kind != 1:
            raise ValueError("unexpected OP_MSG section kind %d" % kind)
        i += 1 + size
    if command is None:
        raise ValueError("OP_MSG without a kind-0 section")
    return command, flags


def recv_exact(sock, n):
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise EOFError("connection closed")
        buf += chunk
    return buf


def command(uri, db, fields):
    """Sends {fields..., $db: db}; returns the reply's top-level fields."""
    fields = dict(fields)
    fields["$db"] = db
    with socket.create_connection(parse_uri(uri), timeout=TIMEOUT_S) as sock:
        sock.settimeout(TIMEOUT_S)
        sock.sendall(op_msg(1, 0, fields))
        length, _request, response_to, opcode = HEADER.unpack(recv_exact(sock, HEADER.size))
        payload = recv_exact(sock, length - HEADER.size)
    if opcode != OP_MSG or response_to != 1:
        raise ValueError("unexpected reply opcode=%d responseTo=%d" % (opcode, response_to))
    return top_level(op_msg_command(payload)[0])


def main():
    if len(sys.argv) != 4:
        print(__doc__.strip(), file=sys.stderr)
        sys.exit(2)
    try:
        reply = command(sys.argv[1], sys.argv[2], json.loads(sys.argv[3]))
    except Exception as e:  # noqa: BLE001 - any failure is "not ok", with its reason
        print("wire.py: %s" % e, file=sys.stderr)
        sys.exit(1)
    print("ok=%s n=%s" % (reply.get("ok"), reply.get("n")))
    if reply.get("ok") != 1:  # 1, 1.0 and true all compare equal to 1
        print("wire.py: not ok: %s" % reply.get("errmsg", reply), file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
