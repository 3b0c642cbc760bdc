// Fuzz target: FrameDecoder (incremental, split at random points) against FrameBatch.decode.
//
// Input: [options] [split seed] [frame bytes...]
//   options bit 0: direction (0 relay->client, 1 client->relay)
//   bits 1-3: batch frame limit for FrameBatch.decode (0 = the default 4096)
//   bit 4: use a small payload limit, (options >> 5) * 4 bytes, instead of 1 MiB
// Invariants: decoded frames re-encode to exactly the consumed bytes; no payload exceeds
// the limit; the first error is final; the whole-body batch decode agrees with the
// incremental decode (same frames, or the error the incremental decode predicts).
import WebProxyCore

@_cdecl("LLVMFuzzerTestOneInput")
public func frameDecoderFuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    var input = FuzzInput(data, size)
    let options = input.byte()
    let seed = input.byte()
    let body = input.rest()
    let direction: FrameDirection = options & 1 == 0 ? .relayToClient : .clientToRelay
    let frameLimit = Int(options >> 1 & 7)
    let usesSmallPayloadLimit = options & 0x10 != 0
    let maxPayload = usesSmallPayloadLimit ? Int(options >> 5) * 4 : FrameLimits.maxPayload

    var decoder = FrameDecoder(direction: direction, maxPayload: maxPayload)
    var frames: [Frame] = []
    var consumed: [UInt8] = []
    var failure: FrameError?
    feeding: for chunk in body.chunked(seed: seed) {
        decoder.append(chunk)
        while true {
            do throws(FrameError) {
                guard let frame = try decoder.nextFrame() else { break }
                invariant(
                    frame.payloadLength <= maxPayload, "payload over the limit: \(frame.type)")
                let before = consumed.count
                frame.encode(into: &consumed)
                invariant(consumed.count - before == frame.encodedLength, "encodedLength mismatch")
                frames.append(frame)
            } catch {
                failure = error
                break feeding
            }
        }
    }
    invariant(body.starts(with: consumed), "re-encoded frames differ from the consumed bytes")

    if let failure {
        // The first error is final.
        invariant((try? decoder.nextFrame()) == nil, "decoder recovered after \(failure)")
        do throws(FrameError) { _ = try decoder.nextFrame() } catch {
            invariant(error == failure, "second error \(error) differs from first \(failure)")
        }
        invariant(decoder.bufferedByteCount == 0, "failed decoder kept bytes")
    } else {
        let left = body.count - consumed.count
        invariant(
            decoder.bufferedByteCount == left,
            "buffered \(decoder.bufferedByteCount), expected \(left)")
        do throws(FrameError) {
            try decoder.finish()
            invariant(left == 0, "finish accepted \(left) leftover bytes")
        } catch {
            invariant(
                error == .truncated(bufferedBytes: left),
                "finish threw \(error), expected truncation")
        }
    }

    // The batch decoder uses the default payload limit.
    guard !usesSmallPayloadLimit else { return 0 }
    let limit = frameLimit == 0 ? FrameLimits.maxFramesPerBatch : frameLimit
    let expected: Result<[Frame], FrameError>
    if body.isEmpty {
        expected = .failure(.emptyBatch)
    } else if frames.count > limit || (frames.count == limit && consumed.count < body.count) {
        expected = .failure(.tooManyFrames)
    } else if let failure {
        expected = .failure(failure)
    } else if consumed.count < body.count {
        expected = .failure(.truncated(bufferedBytes: body.count - consumed.count))
    } else {
        expected = .success(frames)
    }
    let batch = Result { () throws(FrameError) in
        try FrameBatch.decode(body, direction: direction, maxFrames: limit)
    }
    invariant(batch == expected, "FrameBatch.decode disagrees with the incremental decode")
    return 0
}
