// Fuzz target: HTTPConnectHandshake.receive on arbitrary proxy responses split at random
// points.
//
// Input: [options] [split seed] [proxy bytes...]
//   options bit 0: send Basic credentials
// Invariants: the handshake never asks to send after the request, it succeeds only on a
// 2xx status line, and decides within its 16 KiB head limit; once established or failed
// every further input fails; leftover bytes are the tail of the input; neither error
// messages nor a dump of the credentials show them.
import WebProxyNet

@_cdecl("LLVMFuzzerTestOneInput")
public func httpConnectHandshakeFuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    var input = FuzzInput(data, size)
    let options = input.byte()
    let seed = input.byte()
    let bytes = input.rest()
    let credentials = options & 1 == 1 ? fuzzCredentials : nil
    guard let target = DialTarget(host: "relay.example.com", port: 443),
        var handshake = try? HTTPConnectHandshake(target: target, credentials: credentials)
    else {
        invariant(false, "valid handshake set-up refused")
        return 0
    }
    invariant(!handshake.start().isEmpty, "no CONNECT request")
    var driver = HandshakeDriver(
        maxRequests: 0, maxPendingBytes: HTTPConnectHandshake.maxResponseHeadLength)
    driver.run(&handshake, bytes.chunked(seed: seed), input: bytes)
    if case .established = driver.outcome {
        invariant(
            bytes.count >= 12 && bytes.starts(with: Array("HTTP/1.".utf8)),
            "established without a status line")
        let status = bytes[bytes.startIndex + 9]
        invariant(status == UInt8(ascii: "2"), "established on a non-2xx status")
    }
    return 0
}
