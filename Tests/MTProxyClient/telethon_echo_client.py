#!/usr/bin/env python3
"""Drives Telethon's real MTProxy connections against an echoing MTProxy server.

The secret picks the transport the way Telegram clients do: a plain 16-byte secret uses
ConnectionTcpMTProxyIntermediate, a dd secret ConnectionTcpMTProxyRandomizedIntermediate
(padded intermediate). Every connection pipelines packets of 16 B, 1 KiB, 64 KiB, 512 KiB and a
few seeded random sizes (all multiples of 4, as MTProto requires), then checks each echo byte for
byte. Prints per-connection lines, a per-mode line and `N passed, M failed` (counted in packets);
exits 0 only if every packet matched. Never prints the secret or payload bytes.

With --expect-rejection it checks the opposite: the server must close every connection without
echoing (used for wrong-secret and wrong-mode tests).

Telethon computes AES-CTR with pure-Python pyaes (about 0.7 MB/s). By default (--aes openssl) the
MTProxy connection gets the same AES-CTR from OpenSSL instead, after checking at start that both
produce the same keystream; init, keys, framing and padding stay Telethon's own. --aes pyaes runs
Telethon untouched.
"""

import argparse
import asyncio
import logging
import os
import random
import sys
import time

from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from telethon.crypto import AESModeCTR as PyaesModeCTR
from telethon.network.connection import (
    ConnectionTcpMTProxyIntermediate,
    ConnectionTcpMTProxyRandomizedIntermediate,
)
from telethon.network.connection import tcpmtproxy

FIXED_SIZES = (16, 1024, 64 * 1024, 512 * 1024)
RANDOM_SIZE_COUNT = 3
RANDOM_SIZE_MAX_WORDS = 4096  # random sizes are 4...16 KiB
CONNECT_TIMEOUT_SECONDS = 10
# TcpMTProxy dials the proxy; this Telegram address is only carried for Telethon's bookkeeping.
UNUSED_TELEGRAM_ADDRESS = ("149.154.167.51", 443)


class Mode:
    """The Telethon connection class and a readable name for one kind of secret."""

    def __init__(self, secret_text):
        text = secret_text.strip().lower()
        if len(text) == 34 and text.startswith("dd"):
            self.name = "padded intermediate"
            self.connection_class = ConnectionTcpMTProxyRandomizedIntermediate
        elif len(text) == 32:
            # Telethon strips a leading "dd"/"ee" from any secret string, so such a plain
            # secret would lose a byte inside Telethon.
            if text[:2] in ("dd", "ee"):
                raise ValueError("a plain secret must not start with dd or ee (Telethon misreads it)")
            self.name = "intermediate"
            self.connection_class = ConnectionTcpMTProxyIntermediate
        else:
            raise ValueError("secret must be 32 hex digits, or dd followed by 32 hex digits")
        try:
            bytes.fromhex(text[-32:])
        except ValueError:
            raise ValueError("secret is not hexadecimal") from None
        self.secret_text = text


class TelethonLoggers(dict):
    """Telethon looks its loggers up by module name."""

    def __missing__(self, key):
        logger = logging.getLogger(key)
        self[key] = logger
        return logger


class OpenSSLModeCTR:
    """Telethon's AESModeCTR interface (continuous keystream across calls) on OpenSSL."""

    def __init__(self, key, iv):
        self._stream = Cipher(algorithms.AES(key), modes.CTR(iv)).encryptor()

    def encrypt(self, data):
        return self._stream.update(data)

    decrypt = encrypt


def use_openssl_aes():
    """Swaps MTProxy's AES-CTR for OpenSSL once it matches pyaes on a split sample stream."""
    rng = random.Random("aes self-check")
    # The low 64 counter bits overflow after 16 blocks: both must carry across all 128 bits.
    key, iv = rng.randbytes(32), rng.randbytes(7) + b"\x00" + b"\xff" * 7 + b"\xf0"
    chunks = [rng.randbytes(n) for n in (64, 3, 1000, 17, 4096)]
    stock, fast = PyaesModeCTR(key, iv), OpenSSLModeCTR(key, iv)
    if any(stock.encrypt(c) != fast.encrypt(c) for c in chunks):
        raise RuntimeError("OpenSSL AES-CTR does not match Telethon's pyaes keystream")
    tcpmtproxy.AESModeCTR = OpenSSLModeCTR


class ConnectionResult:
    def __init__(self, index, planned):
        self.index = index
        self.planned = planned
        self.passed = 0
        self.failed = 0
        self.problem = None

    def give_up(self, problem):
        """Counts every packet not yet judged as failed."""
        self.problem = self.problem or problem
        self.failed = self.planned - self.passed


def packet_plan(seed, index):
    rng = random.Random(f"{seed}/{index}")
    sizes = list(FIXED_SIZES)
    sizes += [4 * rng.randint(1, RANDOM_SIZE_MAX_WORDS) for _ in range(RANDOM_SIZE_COUNT)]
    return [rng.randbytes(size) for size in sizes]


def first_difference(expected, actual):
    for offset, (a, b) in enumerate(zip(expected, actual)):
        if a != b:
            return offset
    return min(len(expected), len(actual))


async def echo_round(mode, args, result, plan):
    conn = mode.connection_class(
        *UNUSED_TELEGRAM_ADDRESS, args.dc_id, loggers=TelethonLoggers(),
        proxy=(args.host, args.port, mode.secret_text))
    try:
        await conn.connect(timeout=CONNECT_TIMEOUT_SECONDS)
    except (ConnectionError, OSError, asyncio.TimeoutError) as error:
        result.give_up(f"connect failed: {type(error).__name__}: {error}")
        return
    try:
        async def send_all():
            for payload in plan:
                await conn.send(payload)

        # Sending and receiving run side by side so large echoes cannot stall the sender.
        sender = asyncio.create_task(send_all())
        try:
            echoes = [await conn.recv() for _ in plan]
        finally:
            sender.cancel()
        for number, (sent, echoed) in enumerate(zip(plan, echoes), start=1):
            if echoed == sent:
                result.passed += 1
            else:
                result.failed += 1
                result.problem = result.problem or (
                    f"packet {number} ({len(sent)} bytes) came back as {len(echoed)} bytes, "
                    f"first difference at offset {first_difference(sent, echoed)}")
    except (ConnectionError, OSError, asyncio.IncompleteReadError) as error:
        result.give_up(f"connection lost: {type(error).__name__}")
    finally:
        await conn.disconnect()


async def rejection_round(mode, args, result):
    """Passes if the server closes the connection instead of echoing one small packet."""
    conn = mode.connection_class(
        *UNUSED_TELEGRAM_ADDRESS, args.dc_id, loggers=TelethonLoggers(),
        proxy=(args.host, args.port, mode.secret_text))
    try:
        await conn.connect(timeout=CONNECT_TIMEOUT_SECONDS)
    except ConnectionRefusedError:
        result.give_up("connect failed: nothing listens there")
        return
    except ConnectionError:
        result.passed = 1  # Telethon saw the close during its post-init wait
        return
    except (OSError, asyncio.TimeoutError) as error:
        result.give_up(f"connect failed: {type(error).__name__}")
        return
    try:
        await conn.send(bytes(16))
        await conn.recv()
        result.give_up("server echoed although it should have rejected the connection")
    except (ConnectionError, OSError, asyncio.IncompleteReadError):
        result.passed = 1
    finally:
        await conn.disconnect()


async def run(mode, args):
    if args.expect_rejection:
        results = [ConnectionResult(i, 1) for i in range(1, args.connections + 1)]
        rounds = [rejection_round(mode, args, r) for r in results]
    else:
        plans = [packet_plan(args.seed, i) for i in range(1, args.connections + 1)]
        results = [ConnectionResult(i, len(plan)) for i, plan in enumerate(plans, start=1)]
        rounds = [echo_round(mode, args, r, p) for r, p in zip(results, plans)]
    tasks = [asyncio.create_task(r) for r in rounds]
    _, pending = await asyncio.wait(tasks, timeout=args.timeout)
    for task in pending:
        task.cancel()
    if pending:
        await asyncio.wait(pending)
    for task, result in zip(tasks, results):
        if task in pending:
            result.give_up(f"timed out after {args.timeout:g} s")
        elif task.exception() is not None:
            error = task.exception()
            result.give_up(f"unexpected {type(error).__name__}: {error}")
    return results


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1", help="MTProxy (or webproxyd) address")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--secret", help="hex secret; defaults to $MTPROXY_SECRET")
    parser.add_argument("--connections", type=int, default=3, help="parallel connections")
    parser.add_argument("--seed", type=int, default=1, help="seeds packet sizes and contents")
    parser.add_argument("--dc-id", type=int, default=2, help="DC id written into the init")
    parser.add_argument("--timeout", type=float, default=60, help="seconds for everything")
    parser.add_argument("--aes", choices=("openssl", "pyaes"), default="openssl",
                        help="AES-CTR under Telethon's MTProxy connection (pyaes = stock)")
    parser.add_argument("--expect-rejection", action="store_true",
                        help="pass only if the server closes every connection")
    args = parser.parse_args()
    text = args.secret if args.secret is not None else os.environ.get("MTPROXY_SECRET")
    if not text:
        parser.error("give --secret or set MTPROXY_SECRET")
    if args.connections < 1:
        parser.error("--connections must be at least 1")
    try:
        mode = Mode(text)
    except ValueError as error:
        parser.error(str(error))
    if args.aes == "openssl":
        use_openssl_aes()
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr,
                        format="telethon %(levelname)s: %(message)s")

    started = time.monotonic()
    results = asyncio.run(run(mode, args))
    elapsed = time.monotonic() - started

    what = "rejected as expected" if args.expect_rejection else "echoed byte for byte"
    for r in results:
        line = f"{mode.name} conn {r.index}: {r.passed}/{r.planned} {what}"
        print(line + (f"; {r.problem}" if r.problem else ""))
    passed = sum(r.passed for r in results)
    failed = sum(r.failed for r in results)
    print(f"{mode.name} ({args.aes} AES): {len(results)} connections, {passed} passed, "
          f"{failed} failed in {elapsed:.1f} s")
    print(f"{passed} passed, {failed} failed")
    sys.exit(0 if failed == 0 and passed > 0 else 1)


if __name__ == "__main__":
    main()
