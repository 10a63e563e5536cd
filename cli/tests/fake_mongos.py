#!/usr/bin/env python3
"""A fake mongos for cli/tests/test_shard.sh (`mongomq shard-plan --apply`): the test
server (mongo-java-server) implements no sharding commands, and the test needs to see
exactly what the command sends, with each value's BSON type.

    python3 cli/tests/fake_mongos.py --record FILE [--shards A,B,...]
                                     [--fail COMMAND:CODE[:VALUE]] [--sharded NS=KEY]

It listens on a free loopback port and prints, as its first line,
    listen 127.0.0.1:PORT
then answers OP_MSG commands (and the OP_QUERY handshake) until it is killed:
  hello, isMaster   as a mongos (msg "isdbgrid", wire version 17); not recorded
  ping, buildInfo   ok
  listShards        the shards of --shards (default shard0,shard1)
  find              an empty cursor, or for config.collections the entry of --sharded
                    (NS=KEY, KEY a JSON object: `{_id: NS, key: KEY, dropped: false}`)
  anything else     ok: 1
Each command but hello/isMaster is appended to FILE as one JSON line
{"db": $db, "command": {...}} without the driver's own fields ($db, lsid,
$clusterTime, $readPreference), in extended JSON where plain JSON would lose the type:
MinKey is {"$minKey": 1}, int64 {"$numberLong": "N"} (int32 is a plain number, double
a number with a point).
--fail COMMAND:CODE[:VALUE] answers every command named COMMAND (whose first field's
value is VALUE, when given) with {ok: 0, errmsg, code: CODE, codeName} instead.
Standard library only (Python 3.11): asyncio streams, and scripts/wire.py's OP_MSG
framing and BSON encoder; the decoder is this file's, because wire.py's reads top-level
fields only and the plan's commands nest (a zone range's {partition: K, _id: MinKey})."""

import argparse
import asyncio
import json
import os
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
import wire  # noqa: E402  (found through the path above: scripts/ is no package)

OP_REPLY, OP_QUERY = 1, 2004
DRIVER_FIELDS = {"$db", "lsid", "$clusterTime", "$readPreference"}
CODE_NAMES = {20: "IllegalOperation", 23: "AlreadyInitialized", 70: "ShardNotFound", 85: "IndexOptionsConflict",
              86: "IndexKeySpecsConflict", 13: "Unauthorized"}


def decode(doc, i=0):
    """A BSON document at doc[i:] as a dict (an array's too: the caller lists it)."""
    size = struct.unpack_from("<i", doc, i)[0]
    end, i, out = i + size - 1, i + 4, {}
    while i < end:
        t = doc[i]
        j = doc.index(b"\x00", i + 1)
        name, i = doc[i + 1:j].decode("utf-8"), j + 1
        if t == 0x01:
            v = struct.unpack_from("<d", doc, i)[0]; i += 8
        elif t == 0x02:
            n = struct.unpack_from("<i", doc, i)[0]; v = doc[i + 4:i + 3 + n].decode("utf-8"); i += 4 + n
        elif t in (0x03, 0x04):
            n = struct.unpack_from("<i", doc, i)[0]; v = decode(doc, i); i += n
            if t == 0x04:
                v = list(v.values())
        elif t == 0x05:
            n = struct.unpack_from("<i", doc, i)[0]; v = {"$binary": doc[i + 5:i + 5 + n].hex()}; i += 5 + n
        elif t == 0x07:
            v = {"$oid": doc[i:i + 12].hex()}; i += 12
        elif t == 0x08:
            v = doc[i] != 0; i += 1
        elif t == 0x09:
            v = {"$date": struct.unpack_from("<q", doc, i)[0]}; i += 8
        elif t == 0x0A:
            v = None
        elif t == 0x10:
            v = struct.unpack_from("<i", doc, i)[0]; i += 4
        elif t == 0x11:
            inc, ts = struct.unpack_from("<II", doc, i); v = {"$timestamp": {"t": ts, "i": inc}}; i += 8
        elif t == 0x12:
            v = {"$numberLong": str(struct.unpack_from("<q", doc, i)[0])}; i += 8
        elif t == 0xFF:
            v = {"$minKey": 1}
        elif t == 0x7F:
            v = {"$maxKey": 1}
        else:
            raise ValueError("fake_mongos: no decoder for BSON type 0x%02x" % t)
        out[name] = v
    return out


class Mongos:
    def __init__(self, args):
        self.record = open(args.record, "a", encoding="utf-8")
        self.shards = args.shards.split(",")
        self.fails = []
        for rule in args.fail:
            parts = rule.split(":", 2)
            self.fails.append((parts[0], int(parts[1]), parts[2] if len(parts) > 2 else None))
        self.sharded = {}
        for entry in args.sharded:
            ns, _, key = entry.partition("=")
            self.sharded[ns] = json.loads(key)
        self.connections = 0

    def hello(self, conn_id):
        return {"helloOk": True, "ismaster": True, "isWritablePrimary": True, "msg": "isdbgrid",
                "maxBsonObjectSize": wire.Int32(16 * 1024 * 1024), "maxMessageSizeBytes": wire.Int32(48000000),
                "maxWriteBatchSize": wire.Int32(100000), "logicalSessionTimeoutMinutes": wire.Int32(30),
                "connectionId": wire.Int32(conn_id), "minWireVersion": wire.Int32(0),
                "maxWireVersion": wire.Int32(17), "readOnly": False, "ok": 1.0}

    def answer(self, command, conn_id):
        name = next(iter(command), "")
        if name.lower() in ("hello", "ismaster"):
            return self.hello(conn_id)
        db = command.get("$db", "")
        kept = {k: v for k, v in command.items() if k not in DRIVER_FIELDS}
        self.record.write(json.dumps({"db": db, "command": kept}) + "\n")
        self.record.flush()
        for fail_name, code, value in self.fails:
            if name == fail_name and (value is None or command.get(name) == value):
                return {"ok": 0.0, "errmsg": "fake_mongos: %s refused" % name,
                        "code": wire.Int32(code), "codeName": CODE_NAMES.get(code, "Error%d" % code)}
        if name == "buildInfo" or name == "buildinfo":
            return {"version": "7.0.0", "versionArray": [wire.Int32(7), wire.Int32(0), wire.Int32(0), wire.Int32(0)],
                    "ok": 1.0}
        if name == "listShards":
            return {"shards": [{"_id": s, "host": "%s/127.0.0.1:%d" % (s, 27018 + i), "state": wire.Int32(1)}
                               for i, s in enumerate(self.shards)], "ok": 1.0}
        if name == "find":
            batch = []
            ns = "%s.%s" % (db, command.get("find"))
            wanted = (command.get("filter") or {}).get("_id")
            if ns == "config.collections" and wanted in self.sharded:
                batch = [{"_id": wanted, "key": self.sharded[wanted], "dropped": False}]
            return {"cursor": {"firstBatch": batch, "id": 0, "ns": ns}, "ok": 1.0}
        return {"ok": 1.0}

    async def serve(self, reader, writer):
        self.connections += 1
        conn_id = self.connections
        try:
            while True:
                header = await reader.readexactly(wire.HEADER.size)
                length, request_id, _to, opcode = wire.HEADER.unpack(header)
                body = await reader.readexactly(length - wire.HEADER.size)
                if opcode == wire.OP_MSG:
                    raw, _flags = wire.op_msg_command(body)
                    writer.write(wire.op_msg(request_id, request_id, self.answer(decode(raw), conn_id)))
                elif opcode == OP_QUERY:  # the legacy handshake: flags, collection, skip, limit, query
                    j = body.index(b"\x00", 4)
                    query = decode(body, j + 1 + 8)
                    query.setdefault("$db", body[4:j].decode("utf-8").split(".", 1)[0])
                    doc = wire.document(self.answer(query, conn_id))
                    reply = struct.pack("<iqii", 0, 0, 0, 1) + doc
                    writer.write(wire.HEADER.pack(wire.HEADER.size + len(reply), request_id, request_id, OP_REPLY)
                                 + reply)
                else:
                    raise ValueError("fake_mongos: opcode %d" % opcode)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


async def main():
    parser = argparse.ArgumentParser(description="a fake mongos that records the commands it gets")
    parser.add_argument("--record", required=True)
    parser.add_argument("--shards", default="shard0,shard1")
    parser.add_argument("--fail", action="append", default=[])
    parser.add_argument("--sharded", action="append", default=[])
    mongos = Mongos(parser.parse_args())
    server = await asyncio.start_server(mongos.serve, "127.0.0.1", 0)
    print("listen 127.0.0.1:%d" % server.sockets[0].getsockname()[1], flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        pass
