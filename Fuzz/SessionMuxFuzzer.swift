// Fuzz target: SessionMux fed relay frames (structured, and decoded from raw bytes) mixed
// with local events and uplink batching.
//
// Input: [configuration] then operations until the input ends; each operation is an opcode
// byte followed by its own argument bytes (see `step`).
//   configuration bit 0: per-stream uplinks (lanes); bit 1: stream faults are isolated;
//   bits 2-3: live-stream limit 1/2/4/128; bits 4-7: window-update threshold 2^(n+2)
// Invariants: every batch is a valid client->relay batch within the byte and frame limits;
// lane batches carry only their lane's frames; OPEN precedes a stream's DATA; DATA carries
// exactly the enqueued bytes in order; PONGs echo the PINGs in order; deliveries are the
// received payloads; queue accounting matches; a session-scoped error finishes the mux.
import WebProxyCore

@_cdecl("LLVMFuzzerTestOneInput")
public func sessionMuxFuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    var input = FuzzInput(data, size)
    var model = MuxModel(configuration: input.byte())
    while !input.isAtEnd { model.step(&input) }
    return 0
}

/// The mux under test plus what it must produce, tracked independently.
private struct MuxModel {
    var mux: SessionMux
    /// Ids handed out by `open`, in order.
    var allocated: [StreamID] = []
    /// Enqueued bytes of live streams not yet seen in a batch.
    var unsent: [StreamID: [UInt8]] = [:]
    /// Streams whose OPEN went out in a batch.
    var opened: Set<StreamID> = []
    /// PING tokens not yet answered in a batch.
    var unansweredPings: [ArraySlice<UInt8>] = []
    var patternCounter: UInt8 = 0

    init(configuration byte: UInt8) {
        let configuration = SessionMux.Configuration(
            maxLiveStreams: [1, 2, 4, 128][Int(byte >> 2 & 3)],
            uplink: byte & 1 == 1 ? .perStream : .shared,
            isolatesStreamFaults: byte & 2 != 0,
            windowUpdateThreshold: 1 << (Int(byte >> 4) + 2))
        mux = SessionMux(configuration: configuration)
    }

    var isLanes: Bool { mux.configuration.uplink == .perStream }

    mutating func step(_ input: inout FuzzInput) {
        switch input.byte() % 8 {
        case 0: open()
        case 1: enqueue(on: pick(input.byte()), count: Int(input.byte()) * 97)
        case 2: delivered(on: pick(input.byte()), fraction: input.byte())
        case 3: close(pick(input.byte()))
        case 4:
            batch(
                lane: input.byte(), maxBytes: Int(input.byte()) * 16,
                maxFrames: Int(input.byte() % 9))
        case 5: receive(structuredFrame(&input))
        case 6: receiveRaw(input.take(Int(input.byte())))
        default: batch(lane: input.byte(), maxBytes: FrameLimits.defaultBatchBytes, maxFrames: 0)
        }
        forgetRetiredStreams()
    }

    /// An allocated id most of the time, otherwise a small raw id (0 and unallocated ids too).
    func pick(_ selector: UInt8) -> StreamID {
        if selector < 0xC0, !allocated.isEmpty { return allocated[Int(selector) % allocated.count] }
        return StreamID(rawValue: UInt32(selector & 0x3F)) ?? .session
    }

    mutating func open() {
        let wasFinished = mux.isFinished
        do throws(MuxError) {
            let id = try mux.open()
            invariant(!wasFinished, "open succeeded after the session finished")
            invariant(
                !allocated.contains(id) && id > (allocated.last ?? .session),
                "id reused or out of order")
            allocated.append(id)
            unsent[id] = []
        } catch {
            invariant(
                error.scope != .session || wasFinished || error == .streamIDsExhausted,
                "open: \(error)")
        }
    }

    mutating func enqueue(on id: StreamID, count: Int) {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(count)
        for _ in 0..<count {
            bytes.append(patternCounter)
            patternCounter &+= 1
        }
        let credit = mux.sendCredit(for: id)
        let acceptable = !mux.isFinished && mux.isLive(id) && count <= credit
        let queuedBefore = mux.queuedBytes
        do throws(MuxError) {
            try mux.enqueue(bytes[...], on: id)
            invariant(
                acceptable,
                "enqueue accepted \(count) bytes beyond credit \(credit) or on a dead stream")
            unsent[id, default: []] += bytes
            invariant(
                mux.queuedBytes == queuedBefore + count, "queuedBytes did not grow by \(count)")
        } catch {
            invariant(
                !acceptable, "enqueue refused \(count) bytes within credit \(credit): \(error)")
        }
    }

    mutating func delivered(on id: StreamID, fraction: UInt8) {
        let outstanding = mux.undeliveredBytes(on: id)
        let count = fraction == 0xFF ? outstanding + 1 : outstanding * Int(fraction) / 0xFE
        let applies = !mux.isFinished && mux.isLive(id)
        do throws(MuxError) {
            try mux.delivered(count, on: id)
            invariant(
                !applies || count <= outstanding, "delivered accepted \(count) > \(outstanding)")
            if applies {
                invariant(
                    mux.undeliveredBytes(on: id) == outstanding - count, "undelivered not reduced")
            }
        } catch {
            invariant(applies && count > outstanding, "delivered refused a valid count: \(error)")
        }
    }

    mutating func close(_ id: StreamID) {
        let wasLive = mux.isLive(id)
        invariant(mux.close(id) == wasLive, "close result differs from liveness")
        invariant(!mux.isLive(id), "stream live after close")
    }

    mutating func batch(lane selector: UInt8, maxBytes: Int, maxFrames: Int) {
        let frameLimit = maxFrames == 0 ? FrameLimits.maxFramesPerBatch : maxFrames
        let lane: StreamID? = isLanes ? (selector & 1 == 0 ? .session : pick(selector >> 1)) : nil
        let batch: [UInt8]?
        if let lane {
            batch = mux.nextLaneBatch(for: lane, maxBytes: maxBytes, maxFrames: frameLimit)
        } else {
            batch = mux.nextBatch(maxBytes: maxBytes, maxFrames: frameLimit)
        }
        guard let batch else { return }
        let byteLimit = min(
            max(maxBytes, SessionMux.minimumBatchBytes), FrameLimits.defaultBatchBytes)
        invariant(batch.count <= byteLimit, "batch of \(batch.count) bytes over \(byteLimit)")
        let frames: [Frame]
        do throws(FrameError) {
            frames = try FrameBatch.decode(
                batch[...], direction: .clientToRelay, maxFrames: frameLimit)
        } catch {
            invariant(false, "the mux produced an invalid batch: \(error)")
            return
        }
        for frame in frames {
            if let lane {
                invariant(
                    frame.stream == lane,
                    "lane \(lane) batch carries a frame of stream \(frame.stream)")
            }
            check(frame)
        }
    }

    /// Checks one uplink frame against what the mux was asked to send.
    mutating func check(_ frame: Frame) {
        switch frame {
        case .open(let id):
            invariant(allocated.contains(id), "OPEN for an id never allocated")
            invariant(opened.insert(id).inserted, "second OPEN for stream \(id)")
        case .data(let id, let payload):
            invariant(opened.contains(id), "DATA before OPEN on stream \(id)")
            let expected = unsent[id] ?? []
            invariant(
                expected.starts(with: payload),
                "DATA on stream \(id) is not the next enqueued bytes")
            unsent[id] = Array(expected.dropFirst(payload.count))
        case .close(let id):
            invariant(allocated.contains(id), "CLOSE for an id never allocated")
        case .window(let id, let delta):
            invariant(allocated.contains(id) && delta > 0, "bad WINDOW")
        case .pong(let token):
            invariant(unansweredPings.first == token, "PONG does not echo the oldest PING")
            unansweredPings.removeFirst()
        case .hello, .ping, .welcome, .bye:
            invariant(false, "the mux sent a \(frame.type) frame")
        }
    }

    func structuredFrame(_ input: inout FuzzInput) -> Frame {
        let kind = input.byte()
        let id = pick(input.byte())
        switch kind % 9 {
        case 0, 1:
            let length = Int(input.byte())
            if length < 0x80 { return .data(stream: id, payload: input.take(length)) }
            return .data(
                stream: id, payload: ArraySlice(repeating: 0x5A, count: (length & 0x7F) << 14))
        case 2:
            let bytes = input.take(4)
            return .window(stream: id, delta: bytes.reduce(0) { $0 << 8 | UInt32($1) })
        case 3: return .close(stream: id)
        case 4: return .ping(token: input.take(Int(input.byte() % 72)))
        case 5: return .bye(reason: input.take(Int(input.byte() % 16)))
        case 6: return .open(stream: id)
        case 7: return .pong(token: input.take(Int(input.byte() % 8)))
        default: return input.byte() & 1 == 0 ? .welcome : .hello(version: 1)
        }
    }

    mutating func receiveRaw(_ bytes: ArraySlice<UInt8>) {
        var decoder = FrameDecoder(direction: .relayToClient)
        decoder.append(bytes)
        while let frame = try? decoder.nextFrame() { receive(frame) }
    }

    mutating func receive(_ frame: Frame) {
        let wasFinished = mux.isFinished
        let undeliveredBefore = mux.undeliveredBytes(on: frame.stream)
        do throws(MuxError) {
            let action = try mux.receive(frame)
            invariant(!wasFinished, "a finished mux accepted a frame")
            switch (frame, action) {
            case (.data(let id, let payload), .deliver(let target, let delivered)?):
                invariant(
                    id == target && payload == delivered, "delivered something else than received")
                invariant(
                    mux.undeliveredBytes(on: id) == undeliveredBefore + payload.count,
                    "undelivered count")
            case (.data(let id, _), nil), (.window(let id, _), nil), (.close(let id), nil):
                invariant(
                    !mux.isLive(id) || frame.type == .window, "frame for live stream \(id) ignored")
            case (.window(let id, _), .sendCreditAvailable(let target)?):
                invariant(
                    id == target && mux.sendCredit(for: id) > 0, "credit announced without credit")
            case (.close(let id), .closeLocal(let target)?):
                invariant(id == target && !mux.isLive(id), "closeLocal for a stream still live")
            case (.ping(let token), nil):
                unansweredPings.append(token)
            case (.bye, .sessionEnded?):
                invariant(mux.isFinished, "BYE did not finish the mux")
            default:
                invariant(false, "frame \(frame.type) produced an unexpected action")
            }
        } catch {
            switch error.scope {
            case .session:
                invariant(mux.isFinished, "session-scoped error left the mux running: \(error)")
            case .stream(let id):
                invariant(
                    mux.configuration.isolatesStreamFaults, "stream-scoped error without isolation")
                invariant(
                    id == frame.stream && !mux.isLive(id), "stream fault did not end stream \(id)")
            case .refused:
                invariant(false, "receive refused a frame: \(error)")
            }
        }
    }

    /// Drops the model's queues of streams the mux retired, checks the rest.
    mutating func forgetRetiredStreams() {
        var total = 0
        for (id, bytes) in unsent {
            if mux.isLive(id) {
                invariant(
                    mux.queuedBytes(on: id) == bytes.count,
                    "queued bytes of \(id) differ from the model")
                total += bytes.count
            } else {
                unsent[id] = nil
            }
        }
        invariant(
            mux.isFinished || mux.queuedBytes == total, "queuedBytes \(mux.queuedBytes) != \(total)"
        )
    }
}
