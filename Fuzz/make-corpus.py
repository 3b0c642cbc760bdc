#!/usr/bin/env python3
"""Writes the seed corpora in Fuzz/Corpus/<Target>/ from the recorded relay transcripts and
the unit tests' valid inputs. Deterministic; rerun after changing a fuzz target's input layout.

Usage: Fuzz/make-corpus.py [fixture-dir]   (default Tests/Fixtures/relay-transcripts)

Each seed starts with the option bytes its target reads (see the header comment of
Fuzz/<Target>Fuzzer.swift). Seeds are deduplicated, at most 4 KiB each (64 KiB for the
bridge page), and old seeds are removed first, so the folder always matches this script.
"""
import base64
import glob
import hashlib
import json
import os
import shutil
import sys

ROOT = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(ROOT, "Corpus")
FIXTURES = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "Tests", "Fixtures", "relay-transcripts")
MAX_SEED = 4096
WS_MASK_KEY = bytes.fromhex("37fa213d")  # the recorder's fixed masking key (fixture README)

seeds = {}
shapes = set()


def add(target, data, limit=MAX_SEED, shape=None):
    """Adds a seed; with `shape`, only the first seed of that shape is kept (the transcripts
    repeat the same message with other tokens and dates)."""
    if isinstance(data, str):
        data = data.encode()
    if shape is not None:
        if (target, shape) in shapes:
            return
        shapes.add((target, shape))
    if len(data) <= limit:
        seeds.setdefault(target, set()).add(bytes(data))


def bucket(length):
    return min(length.bit_length(), 12)


def transcripts():
    for path in sorted(glob.glob(os.path.join(FIXTURES, "*.json"))):
        with open(path) as f:
            yield json.load(f)


def head_bytes(start_line, headers):
    lines = [start_line] + [f"{name}: {value}" for name, value in headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def with_length(headers, length):
    kept = [(n, v) for n, v in headers if n.lower() != "content-length"]
    return kept + [("Content-Length", str(length))]


def mask(payload, key=WS_MASK_KEY):
    return bytes(b ^ key[i % 4] for i, b in enumerate(payload))


def ws_frame(opcode, payload, masked, fin=True):
    first = (0x80 if fin else 0) | opcode
    mask_bit = 0x80 if masked else 0
    n = len(payload)
    if n < 126:
        header = bytes([first, mask_bit | n])
    elif n <= 0xFFFF:
        header = bytes([first, mask_bit | 126]) + n.to_bytes(2, "big")
    else:
        header = bytes([first, mask_bit | 127]) + n.to_bytes(8, "big")
    return header + (WS_MASK_KEY + mask(payload) if masked else payload)


def frame(type_code, stream, payload=b""):
    return bytes([type_code]) + stream.to_bytes(3, "big") + len(payload).to_bytes(4, "big") + payload


# --- relay transcripts ------------------------------------------------------------------

responses, bridge_statements, ws_streams = [], [], {}
for t in transcripts():
    for ex in t["exchanges"]:
        req, resp = ex["request"], ex["response"]
        # Frame batches: uplink bodies (client->relay) and downlink bodies (relay->client).
        if req.get("body_hex") and req.get("frames"):
            body = bytes.fromhex(req["body_hex"])
            add("FrameDecoder", b"\x01\x03" + body, shape=(1, body[:64]))
        if resp.get("body_hex") and resp.get("frames"):
            body = bytes.fromhex(resp["body_hex"])
            add("FrameDecoder", b"\x00\x05" + body, shape=(0, body[:64]))
            if len(body) < 256:
                # open two streams, feed the batch to the mux, then send a batch
                add("SessionMux", b"\x00" + b"\x00\x00" + b"\x06" + bytes([len(body)]) + body + b"\x07\x00")
        # Requests as the test relay receives them.
        if "status" not in resp or "body_length" in req:
            pass
        else:
            body = bytes.fromhex(req.get("body_hex", ""))
            target = req["path"]
            wire = head_bytes(f"{req['method']} {target} HTTP/1.1", req["headers"]) + body
            shape = (req["method"], target.split("?")[0], tuple(n for n, _ in req["headers"]), bucket(len(body)))
            add("HTTPRequestParser", b"\xaf\x07" + wire, shape=shape)
        # Responses as the client receives them. Large or unstored bodies are replaced by a
        # short stand-in with a matching Content-Length.
        if "body_hex" in resp:
            body = bytes.fromhex(resp["body_hex"])
            headers = resp["headers"]
        else:
            extracted = resp.get("extracted", {})
            body = (extracted.get("const_statement", "") + extracted.get("batch_statement", "")).encode() or b"<html></html>"
            headers = with_length(resp["headers"], len(body))
        wire = head_bytes(f"HTTP/1.1 {resp['status']} {resp['reason']}", headers) + body
        shape = (resp["status"], tuple(n for n, _ in headers), bucket(len(body)))
        if (("HTTPResponseParser", shape)) not in shapes:
            responses.append(wire)
        add("HTTPResponseParser", b"\x00\xaf\x02" + wire, shape=shape)
        if "extracted" in resp:
            bridge_statements.append(resp["extracted"])
    for m in t["websocket_messages"]:
        if m.get("opcode") is None or "payload_hex" not in m:
            continue
        client = m["dir"] == "client->relay"
        payload = bytes.fromhex(m["payload_hex"])
        wire = ws_frame(m["opcode"], payload, masked=client, fin=m["fin"])
        # A server-role parser reads client frames; a client-role parser reads relay frames.
        role = b"\x07" if client else b"\x06"
        add("WebSocketFrameParser", role + b"\x00" + wire, shape=(client, m["opcode"], bucket(len(payload))))
        ws_streams.setdefault((t["scenario"], m["socket"], client), b"")
        ws_streams[(t["scenario"], m["socket"], client)] += wire

for (scenario, socket, client), wire in sorted(ws_streams.items()):
    role = b"\x07" if client else b"\x06"
    add("WebSocketConnection", role + b"\x00" + wire[:MAX_SEED - 2])
    add("WebSocketConnection", role[:1] + b"\x03" + wire[:MAX_SEED - 2])
    add("WebSocketFrameParser", role + b"\x02" + wire[:MAX_SEED - 2])

# Two pipelined responses, and responses cut at the end of the stream.
for first, second in zip(responses, responses[1:]):
    if len(first) + len(second) < 1024:
        add("HTTPResponseParser", b"\x01\x2f\x00" + first + second)
add("HTTPResponseParser", b"\x00\xaf\x00" + b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
    b"4;ext=1\r\nWiki\r\n0\r\nTrailer: x\r\n\r\n")
add("HTTPResponseParser", b"\x00\xaf\x00" + b"HTTP/1.0 200 OK\r\n\r\nuntil the end")
add("HTTPResponseParser", b"\x08\x2f\x00" + b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc")

# --- bridge pages ------------------------------------------------------------------------

for extracted in bridge_statements:
    page = ("<!doctype html><html><head><script nonce=\"n\">\n" + extracted["const_statement"] + "\n"
            + extracted["batch_statement"] + "\n</script></head></html>\n")
    add("BridgePage", page, limit=64 << 10, shape=extracted["carrierMode"])
add("BridgePage", "const relayOrigin=\"https://a.example\",bootstrap=\"\\u0041AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\","
    "carrierMode=\"https-lanes\";batchLimit=1;")
add("BridgePage", "<html><body>public site</body></html>")

# --- identities: links, secrets, hosts, base paths (tests' valid and invalid inputs) ----

secrets = ["000102030405060708090a0b0c0d0e0f", "dd000102030405060708090a0b0c0d0e0f",
           "101112131415161718191a1b1c1d1e1f", "202122232425262728292a2b2c2d2e2f"]
for hexsecret in secrets:
    raw = bytes.fromhex(hexsecret)
    marked = base64.urlsafe_b64encode(b"\x70" + raw).rstrip(b"=").decode()
    add("ProxyLink", f"tg://webproxy?server=proxy.example.com&secret={hexsecret}")
    add("ProxyLink", f"https://t.me/webproxy?server=proxy.example.com%2Ftwo%2Fsegments&secret={marked}")
    add("ProxySecret", b"\x00" + hexsecret.encode())
    add("ProxySecret", b"\x00" + base64.b64encode(raw))
    add("ProxySecret", b"\x00" + base64.urlsafe_b64encode(raw).rstrip(b"="))
    add("ProxySecret", b"\x01" + marked.encode())
for text in ["TG://WebProxy?host=Proxy.Example.COM&secret=000102030405060708090A0B0C0D0E0F",
             " tg://webproxy?server=proxy.example.com:443&secret=000102030405060708090a0b0c0d0e0f&unknown=1&flag&&x= \n",
             "tg://webproxy?server=b%C3%BCcher.example&port=443&secret=000102030405060708090a0b0c0d0e0f",
             "https://t.me/webproxy?server=a.example%2F%2Fx&secret=cAABAgMEBQYHCAkKCwwNDg8",
             "tg://proxy?server=a.example&port=443&secret=000102030405060708090a0b0c0d0e0f",
             # a host or base path that spells the secret (the description shows them)
             "tg://webproxy?server=000102030405060708090a0b0c0d0e0f&secret=000102030405060708090a0b0c0d0e0f",
             "tg://webproxy?server=a.example%2FcAABAgMEBQYHCAkKCwwNDg8&secret=cAABAgMEBQYHCAkKCwwNDg8"]:
    add("ProxyLink", text)
add("ProxySecret", b"\x00ee000102030405060708090a0b0c0d0e0f7777772e6578616d706c652e636f6d")
add("ProxySecret", b"\x00  AAECAwQFBgcICQoLDA0ODw==  ")
for text in ["proxy.example.com", " Proxy.Example.COM ", "https://proxy.example.com", "bücher.example",
             "XN--BCHER-KVA.EXAMPLE", "bücher。example", "a-b.c-d.example", "r3--a.example",
             "127.0.0.1", "0x7f.1", "example.0x7f", "a_b.example", "localhost", "http://proxy.example.com"]:
    add("RelayHost", text)
for text in ["p", "/two/segments/", "A-b_c/9", " /x ", "a//b", "dot.ted", "-x", "/"]:
    add("BasePath", text)

# --- session mux: hand-made sequences ------------------------------------------------------

add("SessionMux", bytes([0x00, 0, 0, 1, 0, 5, 7, 0, 5, 0, 0, 3, 2, 4, 0, 0x20, 0, 0]))           # open, enqueue, batch, WINDOW
add("SessionMux", bytes([0x01, 0, 5, 4, 0, 3, 1, 2, 3, 7, 0, 7, 1, 7, 0]))                        # lanes: PING then lane batches
add("SessionMux", bytes([0x02, 0, 0, 5, 0, 0, 0x40, 2, 0, 0xFE, 5, 3, 0, 7, 1, 5, 5, 0, 0]))     # isolated faults, data, close
add("SessionMux", b"\x00\x00\x06\x10" + frame(0x05, 0, b"tok!") + frame(0x02, 1, b"hi") + b"\x07\x00")

# --- proxy handshakes ----------------------------------------------------------------------

add("Socks5Handshake", bytes([0, 0, 5, 0, 5, 0, 0, 1, 192, 0, 2, 7, 1, 187]) + b"leftover")
add("Socks5Handshake", bytes([1, 1, 5, 2, 1, 0, 5, 0, 0, 3, 17]) + b"relay.example.com" + bytes([1, 187]))
add("Socks5Handshake", bytes([4, 2, 5, 0, 5, 0, 0, 4]) + bytes(16) + bytes([1, 187]))
add("Socks5Handshake", bytes([0, 0, 5, 0, 5, 5, 0, 1]))
add("Socks5Handshake", bytes([1, 0, 5, 2, 1, 1]))
add("HTTPConnectHandshake", b"\x00\x00HTTP/1.1 200 Connection established\r\n\r\n\x16\x03\x01")
add("HTTPConnectHandshake", b"\x01\x05HTTP/1.0 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic\r\n\r\n")
add("HTTPConnectHandshake", b"\x00\x01HTTP/1.1 204\r\nVia: 1.1 proxy\r\n\r\n")

# --- configuration files ([flags] [text]) -------------------------------------------------

with open(os.path.join(ROOT, "..", "systemd", "webproxyd.conf.example")) as f:
    add("ConfigFile", b"\x00" + f.read().encode(), limit=16384)
config_relay = ("[relay home]\nhost = Relay.Example.COM\nbase-path = /tp/\n"
                "secret = dd000102030405060708090a0b0c0d0e0f\nlisten = [::1]:8443\r\n"
                "carrier = websocket-lanes\nca-file = /etc/ssl/certs/ca-certificates.crt\n"
                "pin-sha256 = ypeBEsobvcr6wjGzmiPcTaeG7/gUfE5yuYB3ha/uSLs=, PiPoFgA5WUoziU9lZOGxNIu9egCI1CxKy3PurtWcAJ0=\n"
                "pin-sha256 = Ln0sA6lQeuJl7PW1NWiFpTOTogKdJBOUmXJloaJa78Y=\n"
                "connect-to = [2001:db8::1]:8443\nproxy = socks5://alice:p%40ssw0rdp%40ssw0rd@127.0.0.1:1080\n"
                "max-streams = 16\n")
config_work = ("[relay work]\nlink = tg://webproxy?server=relay.example.com&secret=000102030405060708090a0b0c0d0e0f\n"
               "listen = 127.0.0.1:8444\nproxy = http://bob:hunter2hunter2hunter2@proxy.example.net:3128\n")
for flags, text in [
        (0, "# comment\n; another\n[daemon]\nmetrics = 127.0.0.1:9464\nlog-level = debug\n\n" + config_relay + "\n" + config_work),
        (1, config_work),
        (0, config_work.replace("8444", "8443") + "\n" + config_relay.replace("[::1]", "127.0.0.1")),
        (0, "[relay a]\nhost = a.example\nsecret-file = /nonexistent/secret\nlisten = 127.0.0.1:1\n"),
        (0, "[relay a]\nhost = a.example\nsecret-credential = a.secret\nlisten = 127.0.0.1:1\nmax-streams = 129\n"),
        (0, "[relay]\n[daemon\nhsot = x\nsecret = 000102030405060708090a0b0c0d0e0f0\n[relay a]\n[relay a]\n")]:
    add("ConfigFile", bytes([flags]) + text.encode(), limit=16384)

# --- status documents (the whole input is the control socket's answer) ----------------------
status_relay = ('{"name": "home", "listen": "127.0.0.1:8443", "state": "up", "carrier": "websocket", "streams": 2, '
                '"refused_connections": 0, "bytes_up": 1536, "bytes_down": 3145728, "sessions_established": 1, '
                '"reconnects": 0, "last_error": {"class": "unreachable", "message": "a \\"b\\" \\u00e9", '
                '"seconds_ago": 5, "at": "2025-05-01T11:59:55Z"}, '
                '"side_sessions": [{"role": "media", "state": "starting", "streams": 1}]}')
add("StatusDocument", '{"version": "1.2.3", "pid": 4321, "generated_at": "2025-05-01T12:00:00Z", "relays": ['
    + status_relay + "]}\n")
add("StatusDocument", '{"version": "1", "pid": 1, "generated_at": "", "relays": []}')
add("StatusDocument", '[null, true, false, -0, 12, "\\ud83d\\ude00", {}, [[]]]')

# --- write -------------------------------------------------------------------------------

if os.path.isdir(CORPUS):
    shutil.rmtree(CORPUS)
total = 0
for target, items in sorted(seeds.items()):
    folder = os.path.join(CORPUS, target)
    os.makedirs(folder)
    for data in sorted(items):
        name = "seed-" + hashlib.sha1(data).hexdigest()[:16]
        with open(os.path.join(folder, name), "wb") as f:
            f.write(data)
        total += len(data)
    print(f"{target}: {len(items)} seeds")
print(f"total {total} bytes")
