// Fuzz target: Socks5Handshake.receive on arbitrary proxy replies split at random points.
//
// Input: [options] [split seed] [proxy bytes...]
//   options bit 0: offer username/password; bits 1-2: target is a name / IPv4 / IPv6
// Invariants: every step is legal for the phase (the greeting is answered by at most one
// request per proxy message); it decides within the longest possible replies; once
// established or failed every further input fails; leftover bytes are the tail of the
// input; neither error messages nor a dump of the credentials show them.
import WebProxyNet

@_cdecl("LLVMFuzzerTestOneInput")
public func socks5HandshakeFuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    var input = FuzzInput(data, size)
    let options = input.byte()
    let seed = input.byte()
    let bytes = input.rest()
    let credentials = options & 1 == 1 ? fuzzCredentials : nil
    let host = ["relay.example.com", "192.0.2.7", "2001:db8::7"][Int(options >> 1 & 3) % 3]
    guard let target = DialTarget(host: host, port: 443),
        var handshake = try? Socks5Handshake(target: target, credentials: credentials)
    else {
        invariant(false, "valid handshake set-up refused")
        return 0
    }
    invariant(!handshake.start().isEmpty, "no greeting")
    var driver = HandshakeDriver(
        maxRequests: credentials == nil ? 1 : 2, maxPendingBytes: 2 + 2 + 4 + 256 + 2)
    driver.run(&handshake, bytes.chunked(seed: seed), input: bytes)
    return 0
}
