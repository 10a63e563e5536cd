#!/usr/bin/env python3
"""A TCP proxy between the library and the test server that plays a replica-set
primary stepping down right after it applied a write: a command it was told to
catch goes to the server, the server applies it and answers, and the proxy sends
the client, instead of that real reply, the error such a primary answers with
(NotWritablePrimary, 10107, unless told another code). Everything else (the
handshake, hello/isMaster, the monitors' traffic, OP_QUERY, OP_COMPRESSED) passes
through byte for byte. Issue 17's "tried from outside": tests/faults/test_stepdown.c
drives it, tests/faults/stepdown.sh starts it.

    python3 tests/faults/stepdown_proxy.py --upstream HOST:PORT

It listens on two free loopback ports and prints, as its first line,
    listen 127.0.0.1:PORT control 127.0.0.1:PORT
The control port takes one-line text commands, each answered with one line:
    arm COMMAND SUFFIX COUNT CODE CODENAME [LABEL ...]
        the next COUNT OP_MSG commands named COMMAND (the command document's first
        key: insert, update, delete, findAndModify...) whose collection (that key's
        value) ends with SUFFIX are forwarded; the server's real reply is read and
        dropped, and the client gets {ok: 0.0, errmsg, code: CODE (int32),
        codeName: CODENAME} (with errorLabels: [LABEL ...] if given), with the
        request's requestID as responseTo. Answers "armed". A new arm replaces the
        rule left.
    disarm      forget the rule; answers "disarmed"
    count       "replaced N left M": replies replaced since the start, and how many
                the rule still has to catch
Standard library only (Python 3.11): asyncio streams, and scripts/wire.py for the
OP_MSG framing and BSON."""

import argparse
import asyncio
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
import wire  # noqa: E402  (found through the path above: scripts/ is no package)

# The errmsg a primary gives with each code; any other code gets its codeName.
ERRMSG = {10107: "not primary", 11602: "operation was interrupted", 189: "primary stepped down"}


class Rule:
    """What the control port armed: one at a time is all the tests need."""

    def __init__(self):
        self.command, self.suffix, self.left = "", "", 0
        self.code, self.code_name, self.labels = 0, "", []
        self.replaced = 0

    def catches(self, name, collection):
        return self.left > 0 and name == self.command and isinstance(collection, str) and \
            collection.endswith(self.suffix)

    def reply(self):
        fields = {"ok": 0.0, "errmsg": ERRMSG.get(self.code, self.code_name), "code": wire.Int32(self.code),
                  "codeName": self.code_name}
        if self.labels:
            fields["errorLabels"] = list(self.labels)
        return fields


RULE = Rule()


def log(text):
    print("stepdown_proxy: " + text, file=sys.stderr, flush=True)


async def read_message(reader):
    """One wire message: (header fields, the bytes after the header), or None at EOF."""
    try:
        head = await reader.readexactly(wire.HEADER.size)
    except asyncio.IncompleteReadError:
        return None
    length, request_id, response_to, opcode = wire.HEADER.unpack(head)
    if length < wire.HEADER.size:
        raise ValueError("message length %d" % length)
    try:
        body = await reader.readexactly(length - wire.HEADER.size)
    except asyncio.IncompleteReadError:
        return None
    return (length, request_id, response_to, opcode), head + body


def caught(opcode, message):
    """The command the rule catches in this client message, or None. Only OP_MSG:
    libmongoc sends its first handshake as OP_QUERY and compresses only when the URI
    asks (the tests do not)."""
    if opcode != wire.OP_MSG:
        return None
    command, flags = wire.op_msg_command(message[wire.HEADER.size:])
    if flags & wire.MORE_TO_COME:  # an unacknowledged write: no reply to replace
        return None
    name, collection = next(wire.elements(command), (None, None))
    if not RULE.catches(name, collection):
        return None
    RULE.left -= 1
    return RULE.reply(), "%s %s" % (name, collection)


async def client_to_server(reader, writer, pending):
    while (got := await read_message(reader)) is not None:
        (_, request_id, _, opcode), message = got
        hit = caught(opcode, message)
        if hit is not None:
            # Before forwarding: the server's reply cannot come back before it is known.
            pending[request_id] = hit
        writer.write(message)
        await writer.drain()


async def server_to_client(reader, writer, pending):
    while (got := await read_message(reader)) is not None:
        (_, request_id, response_to, opcode), message = got
        hit = pending.pop(response_to, None)
        if hit is not None:
            fields, what = hit
            real = "?"
            if opcode == wire.OP_MSG:
                doc = wire.top_level(wire.op_msg_command(message[wire.HEADER.size:])[0])
                real = "ok=%s n=%s" % (doc.get("ok"), doc.get("n"))
            # The server's own requestID, and responseTo the request's: what the server
            # itself would have sent, had it failed.
            message = wire.op_msg(request_id, response_to, fields)
            RULE.replaced += 1
            log("%s: the server answered %s; sent code %d %s%s" % (
                what, real, fields["code"], fields["codeName"],
                " with errorLabels " + ",".join(fields["errorLabels"]) if "errorLabels" in fields else ""))
        writer.write(message)
        await writer.drain()


async def relay(client_reader, client_writer, upstream):
    try:
        server_reader, server_writer = await asyncio.open_connection(*upstream)
    except OSError as e:
        log("cannot reach the server %s:%d: %s" % (upstream[0], upstream[1], e))
        client_writer.close()
        return
    pending = {}  # requestID of a caught command -> the reply to send instead
    tasks = [asyncio.create_task(client_to_server(client_reader, server_writer, pending)),
             asyncio.create_task(server_to_client(server_reader, client_writer, pending))]
    # Either side closing ends both (a client that hangs up, a server that restarts).
    done, rest = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    for t in rest:
        t.cancel()
    for t in done:
        if not t.cancelled() and t.exception() is not None and not isinstance(t.exception(), ConnectionError):
            log("connection ended: %r" % t.exception())
    for w in (server_writer, client_writer):
        w.close()


def control_command(line):
    words = line.split()
    if not words:
        return "error: empty command"
    if words[0] == "arm" and len(words) >= 6:
        try:
            count, code = int(words[3]), int(words[4])
        except ValueError:
            return "error: COUNT and CODE are integers"
        RULE.command, RULE.suffix, RULE.left = words[1], words[2], count
        RULE.code, RULE.code_name, RULE.labels = code, words[5], words[6:]
        return "armed"
    if words == ["disarm"]:
        RULE.left = 0
        return "disarmed"
    if words == ["count"]:
        return "replaced %d left %d" % (RULE.replaced, RULE.left)
    return "error: arm COMMAND SUFFIX COUNT CODE CODENAME [LABEL ...] | disarm | count"


async def control(reader, writer):
    try:
        while line := await reader.readline():
            writer.write((control_command(line.decode("utf-8", "replace")) + "\n").encode())
            await writer.drain()
    finally:
        writer.close()


async def main():
    ap = argparse.ArgumentParser(description="a wire proxy that answers chosen writes with a step-down error")
    ap.add_argument("--upstream", required=True, help="the server's HOST:PORT")
    ap.add_argument("--port", type=int, default=0, help="the port to listen on (default: a free one)")
    ap.add_argument("--control-port", type=int, default=0, help="the control port (default: a free one)")
    args = ap.parse_args()
    host, _, port = args.upstream.rpartition(":")
    upstream = (host, int(port))
    proxy = await asyncio.start_server(lambda r, w: relay(r, w, upstream), "127.0.0.1", args.port)
    ctl = await asyncio.start_server(control, "127.0.0.1", args.control_port)
    print("listen 127.0.0.1:%d control 127.0.0.1:%d" % (proxy.sockets[0].getsockname()[1],
                                                       ctl.sockets[0].getsockname()[1]), flush=True)
    async with proxy, ctl:
        await asyncio.gather(proxy.serve_forever(), ctl.serve_forever())


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        pass
