// Fuzz target: WebSocketFrameParser in both roles on arbitrary bytes split at random points.
//
// Input: [options] [split seed] [frame bytes...]
//   options bit 0: role (0 client: unmasked frames; 1 server: masked frames)
//   bits 1-2: data payload limit 0 / 125 / 70000 / 2 MiB
// Invariants: parsed frames re-encode (with the mask key read from the input) to exactly the
// consumed bytes, so lengths are minimal and masking round-trips; control frames are final
// and at most 125 bytes; data payloads stay within the limit; errors are final.
import WebProxyNet

@_cdecl("LLVMFuzzerTestOneInput")
public func webSocketFrameParserFuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    var input = FuzzInput(data, size)
    let options = input.byte()
    let seed = input.byte()
    let bytes = input.rest()
    let role: WebSocketRole = options & 1 == 0 ? .client : .server
    let maxDataPayload = [0, 125, 70000, 2 << 20][Int(options >> 1 & 3)]

    var parser = WebSocketFrameParser(role: role, maxDataPayload: maxDataPayload)
    var offset = bytes.startIndex
    var failure: WebSocketError?
    feeding: for chunk in bytes.chunked(seed: seed) {
        parser.receive(chunk)
        while true {
            do throws(WebSocketError) {
                guard let frame = try parser.next() else { break }
                offset = check(
                    frame, at: offset, in: bytes, role: role, maxDataPayload: maxDataPayload)
            } catch {
                failure = error
                break feeding
            }
        }
    }
    if let failure {
        do throws(WebSocketError) {
            _ = try parser.next()
            invariant(false, "parser recovered after \(failure)")
        } catch {
            invariant(error == failure, "second error \(error) differs from \(failure)")
        }
    } else {
        invariant(
            parser.hasPartialFrame == (offset < bytes.endIndex), "partial-frame flag is wrong")
    }
    return 0
}

/// Checks one frame and returns the offset just past its bytes in `bytes`.
private func check(
    _ frame: WebSocketFrame, at offset: Int, in bytes: ArraySlice<UInt8>, role: WebSocketRole,
    maxDataPayload: Int
) -> Int {
    if frame.opcode.isControl {
        invariant(
            frame.fin && frame.payload.count <= WebSocketFrame.maxControlPayload,
            "bad control frame")
    } else {
        invariant(
            frame.payload.count <= maxDataPayload,
            "data payload of \(frame.payload.count) over the limit")
    }
    var key: UInt32?
    if role == .server {
        let count = frame.payload.count
        let keyOffset = offset + 2 + (count < 126 ? 0 : count <= 0xFFFF ? 2 : 8)
        key = bytes[keyOffset..<keyOffset + 4].reduce(0) { $0 << 8 | UInt32($1) }
    }
    var encoded: [UInt8] = []
    WebSocketFrameEncoder.encode(
        frame.opcode, payload: frame.payload[...], fin: frame.fin, maskingKey: key, into: &encoded)
    invariant(
        bytes[offset...].starts(with: encoded), "frame does not re-encode to the consumed bytes")
    return offset + encoded.count
}
