#!/usr/bin/env python3
"""Plays the MTProxy server side for one secret and echoes every transport packet.

A client opens with the 64-byte obfuscated2 init. Both directions use AES-256-CTR:
  client->server: key = SHA-256(init[8:40] + secret), iv = init[40:56]
  server->client: the same over init[8:56] reversed (key from its first 32 bytes, iv the last 16)
The client encrypted the whole init with its cipher, so the server decrypts all 64 bytes too
(keeping the counters in step) and reads the protocol tag at 56..60 and the DC id at 60..62.
A plain secret must announce intermediate (0xeeeeeeee), a dd secret padded intermediate
(0xdddddddd). Each packet (4-byte little-endian length + body) is sent back unchanged, re-encrypted
for the server->client direction; padding is part of the body, so it is echoed too.

Prints `PORT <n>` as the first stdout line once listening. Logs counts and sizes only, to stderr.
"""

import argparse
import asyncio
import hashlib
import itertools
import os
import signal
import sys

from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

INIT_LENGTH = 64
TAG_RANGE = slice(56, 60)
DC_RANGE = slice(60, 62)
MAX_PACKET_LENGTH = 1024 * 1024 + 64
INIT_TIMEOUT_SECONDS = 30

TAG_NAMES = {
    b"\xee\xee\xee\xee": "intermediate",
    b"\xdd\xdd\xdd\xdd": "padded intermediate",
    b"\xef\xef\xef\xef": "abridged",
}


class Secret:
    """The 16 key bytes of an MTProxy secret and the protocol tag it requires."""

    def __init__(self, text):
        text = text.strip().lower()
        if len(text) == 34 and text.startswith("dd"):
            self.tag = b"\xdd\xdd\xdd\xdd"
            hex_key = text[2:]
        elif len(text) == 32:
            self.tag = b"\xee\xee\xee\xee"
            hex_key = text
        else:
            raise ValueError("secret must be 32 hex digits, or dd followed by 32 hex digits")
        try:
            self.key = bytes.fromhex(hex_key)
        except ValueError:
            raise ValueError("secret is not hexadecimal") from None

    @property
    def mode(self):
        return TAG_NAMES[self.tag]


def aes_ctr(key, iv):
    return Cipher(algorithms.AES(key), modes.CTR(iv)).encryptor()


def derive_ciphers(init, secret_key):
    """Returns (client->server decryptor, server->client encryptor) for a 64-byte init."""
    forward = init[8:56]
    backward = forward[::-1]
    decryptor = aes_ctr(hashlib.sha256(forward[:32] + secret_key).digest(), forward[32:48])
    encryptor = aes_ctr(hashlib.sha256(backward[:32] + secret_key).digest(), backward[32:48])
    return decryptor, encryptor


class Stats:
    def __init__(self):
        self.connections = 0
        self.accepted = 0
        self.rejected = 0
        self.packets = 0
        self.bytes = 0


def log(message):
    print(f"mtproxy_backend: {message}", file=sys.stderr, flush=True)


async def echo_packets(reader, writer, decryptor, encryptor, stats):
    """Echoes packets until clean EOF; returns a short reason for the log."""
    packets = 0
    total = 0
    while True:
        try:
            header = await reader.readexactly(4)
        except asyncio.IncompleteReadError as error:
            if error.partial:
                return f"truncated length field after {packets} packets"
            return f"clean EOF after {packets} packets, {total} bytes"
        plain_header = decryptor.update(header)
        length = int.from_bytes(plain_header, "little")
        if length == 0 or length > MAX_PACKET_LENGTH:
            return f"rejected packet length {length} (allowed 1...{MAX_PACKET_LENGTH})"
        try:
            body = await reader.readexactly(length)
        except asyncio.IncompleteReadError as error:
            return f"truncated packet: {len(error.partial)} of {length} bytes"
        writer.write(encryptor.update(plain_header + decryptor.update(body)))
        await writer.drain()
        packets += 1
        total += length
        stats.packets += 1
        stats.bytes += length


async def serve_connection(reader, writer, secret, stats, ids):
    conn_id = next(ids)
    stats.connections += 1
    try:
        try:
            init = await asyncio.wait_for(reader.readexactly(INIT_LENGTH), INIT_TIMEOUT_SECONDS)
        except asyncio.IncompleteReadError as error:
            log(f"conn {conn_id}: closed during init after {len(error.partial)} bytes")
            return
        except asyncio.TimeoutError:
            log(f"conn {conn_id}: no init within {INIT_TIMEOUT_SECONDS} s")
            return
        decryptor, encryptor = derive_ciphers(init, secret.key)
        plain_init = decryptor.update(init)
        tag = plain_init[TAG_RANGE]
        if tag != secret.tag:
            stats.rejected += 1
            found = TAG_NAMES.get(tag, "unknown (wrong secret or corrupted init)")
            log(f"conn {conn_id}: rejected protocol tag {found}, expected {secret.mode}")
            return
        stats.accepted += 1
        dc_id = int.from_bytes(plain_init[DC_RANGE], "little", signed=True)
        log(f"conn {conn_id}: accepted {secret.mode}, dc {dc_id}")
        reason = await echo_packets(reader, writer, decryptor, encryptor, stats)
        log(f"conn {conn_id}: {reason}")
    except (ConnectionError, OSError) as error:
        log(f"conn {conn_id}: socket error {type(error).__name__}")
    finally:
        writer.close()
        try:
            await writer.wait_closed()
        except (ConnectionError, OSError):
            pass


async def run(host, port, secret):
    stats = Stats()
    ids = itertools.count(1)
    server = await asyncio.start_server(
        lambda r, w: serve_connection(r, w, secret, stats, ids), host, port, backlog=256)
    bound_port = server.sockets[0].getsockname()[1]
    print(f"PORT {bound_port}", flush=True)
    log(f"listening for {secret.mode} on {host}:{bound_port}")

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    async with server:
        await stop.wait()
    log(f"stopped: {stats.connections} connections, {stats.accepted} accepted, "
        f"{stats.rejected} rejected, {stats.packets} packets, {stats.bytes} bytes echoed")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--secret", help="hex secret; defaults to $MTPROXY_SECRET")
    args = parser.parse_args()
    text = args.secret if args.secret is not None else os.environ.get("MTPROXY_SECRET")
    if not text:
        parser.error("give --secret or set MTPROXY_SECRET")
    try:
        secret = Secret(text)
    except ValueError as error:
        parser.error(str(error))
    asyncio.run(run(args.host, args.port, secret))


if __name__ == "__main__":
    main()
