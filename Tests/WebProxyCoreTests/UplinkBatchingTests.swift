import Testing
import WebProxyTestSupport
@testable import WebProxyCore

extension SessionMux {
    /// Every frame the shared uplink holds now, batch after batch (each batch must walk).
    mutating func drainUplink(
        maxBytes: Int = FrameLimits.defaultBatchBytes, maxFrames: Int = FrameLimits.maxFramesPerBatch
    ) -> [Frame] {
        var frames: [Frame] = []
        while let batch = nextBatch(maxBytes: maxBytes, maxFrames: maxFrames) {
            guard let walked = uplinkFrames(batch) else {
                Issue.record("a batch did not walk")
                return frames
            }
            frames += walked
        }
        #expect(!hasPendingUplink)
        return frames
    }

    /// The frames of one lane batch, or nil when there is none.
    mutating func laneFrames(
        _ lane: StreamID, maxBytes: Int = FrameLimits.defaultBatchBytes, maxFrames: Int = FrameLimits.maxFramesPerBatch
    ) -> [Frame]? {
        nextLaneBatch(for: lane, maxBytes: maxBytes, maxFrames: maxFrames).flatMap(uplinkFrames)
    }
}

/// The frames of an uplink batch as the relay decodes them; nil for anything it rejects.
private func uplinkFrames(_ batch: [UInt8]) -> [Frame]? {
    try? FrameBatch.decode(batch[...], direction: .clientToRelay)
}

private func s(_ raw: UInt32) -> StreamID { StreamID(rawValue: raw) ?? .max }
private func bytes(_ text: String) -> ArraySlice<UInt8> { Array(text.utf8)[...] }
/// Byte k is k mod 251: any slice identifies where in the pattern it came from.
private let pattern = (0..<(9 << 20)).map { UInt8($0 % 251) }
private let dataFrameLength = Frame.headerLength + FrameLimits.clientDataChunk
private let lanes = SessionMux.Configuration(uplink: .perStream)

@Suite struct UplinkBatchingTests {
    /// A queued read is let go once its bytes are taken, not at the queue's next compaction:
    /// consumed slots used to keep their slices, and so whole read buffers, alive.
    @Test func aTakenElementIsNotRetained() {
        final class Token {}
        var fifo = SessionMux.FIFO<Token>()
        weak var taken: Token?
        do {
            let token = Token()
            taken = token
            fifo.append(token)
            fifo.append(Token())
            #expect(fifo.popFirst() === token)
        }
        #expect(taken == nil)
        #expect(fifo.count == 1)
    }

    @Test func controlFramesComeBeforeData() throws {
        var mux = SessionMux()
        for _ in 1...3 { _ = try mux.open() }
        _ = mux.drainUplink()
        try mux.enqueue(bytes("0123456789"), on: s(1))
        mux.close(s(2))
        _ = try mux.receive(.data(stream: s(3), payload: pattern.prefix(300 << 10)))
        try mux.delivered(300 << 10, on: s(3))
        let four = try mux.open()
        try mux.enqueue(bytes("hello"), on: four)
        _ = try mux.receive(.ping(token: bytes("tok")))
        let encoded = mux.nextBatch()
        let batch = try #require(encoded)
        #expect(uplinkFrames(batch) == [
            .pong(token: bytes("tok")), .close(stream: s(2)), .window(stream: s(3), delta: 300 << 10),
            .open(stream: four), .data(stream: s(1), payload: bytes("0123456789")),
            .data(stream: four, payload: bytes("hello")),
        ])
        #expect(mux.nextBatch() == nil)
    }

    @Test func aSmallStreamIsNotStarvedByABulkOne() throws {
        var mux = SessionMux()
        let bulk = try mux.open()
        let chat = try mux.open()
        _ = mux.drainUplink()
        _ = try mux.receive(.window(stream: bulk, delta: 4 << 20))
        try mux.enqueue(pattern.prefix(8 << 20), on: bulk)
        try mux.enqueue(bytes(String(repeating: "c", count: 100)), on: chat)
        #expect(mux.queuedBytes(on: bulk) == 8 << 20)

        let encoded = mux.nextBatch()
        let first = try #require(encoded)
        #expect(first.count == FrameLimits.defaultBatchBytes)
        let frames = try #require(uplinkFrames(first))
        #expect(frames.count == 33)
        #expect(frames[0] == .data(stream: bulk, payload: pattern.prefix(64 << 10)))
        #expect(frames[1] == .data(stream: chat, payload: bytes(String(repeating: "c", count: 100))))
        // 2 MiB minus the two first frames: 30 full chunks and one trimmed to fit exactly.
        #expect(frames.dropFirst(2).allSatisfy { $0.stream == bulk })
        #expect(frames.last?.payloadLength == 65_172)

        var sent = frames.dropFirst().filter { $0.stream == bulk }
        sent.insert(frames[0], at: 0)
        sent += mux.drainUplink()
        var reassembled: [UInt8] = []
        for case .data(_, let payload) in sent { reassembled += payload }
        #expect(reassembled[...] == pattern.prefix(8 << 20))
    }

    @Test func theTurnOrderCarriesOverBetweenBatches() throws {
        var mux = SessionMux()
        for _ in 1...3 { _ = try mux.open() }
        _ = mux.drainUplink()
        for raw: UInt32 in 1...3 { try mux.enqueue(pattern.prefix(192 << 10), on: s(raw)) }
        var order: [[UInt32]] = []
        while let batch = mux.nextBatch(maxBytes: 2 * dataFrameLength) {
            let frames = try #require(uplinkFrames(batch))
            order.append(frames.map(\.stream.rawValue))
        }
        #expect(order == [[1, 2], [3, 1], [2, 3], [1, 2], [3]])
    }

    @Test func batchesRespectTheByteLimitAndSplitDataIntoWholeFrames() throws {
        var mux = SessionMux()
        let id = try mux.open()
        try mux.enqueue(pattern.prefix(100_000), on: id)
        var frames: [Frame] = []
        while let batch = mux.nextBatch(maxBytes: 1000) {
            #expect(batch.count <= 1000)
            frames += try #require(uplinkFrames(batch))
        }
        #expect(frames.first == .open(stream: id))
        #expect(frames.dropFirst().allSatisfy { $0.payloadLength <= 992 })
        var reassembled: [UInt8] = []
        for case .data(_, let payload) in frames { reassembled += payload }
        #expect(reassembled[...] == pattern.prefix(100_000))
    }

    @Test func dataFramesCarryAtMost64KiB() throws {
        var mux = try SessionMux.withOpenStream()
        try mux.enqueue(pattern.prefix(1 << 20), on: s(1))
        let frames = mux.drainUplink()
        #expect(frames.count == 16)
        #expect(frames.allSatisfy { $0.payloadLength == 64 << 10 })
    }

    @Test func smallWritesAreMergedIntoOneFrame() throws {
        var mux = try SessionMux.withOpenStream()
        for index in 0..<100 { try mux.enqueue(pattern[(index * 10)..<(index * 10 + 10)], on: s(1)) }
        #expect(mux.drainUplink() == [.data(stream: s(1), payload: pattern.prefix(1000))])
    }

    @Test func batchesHoldAtMost4096Frames() throws {
        var mux = SessionMux(configuration: .init(maxLiveStreams: 5000))
        for _ in 0..<5000 { _ = try mux.open() }
        let first = try #require(mux.nextBatch().flatMap(uplinkFrames))
        #expect(first.count == 4096)
        #expect(first.last == .open(stream: s(4096)))
        let second = try #require(mux.nextBatch().flatMap(uplinkFrames))
        #expect(second.count == 904)
        #expect(mux.nextBatch(maxFrames: 100_000) == nil)
    }

    @Test func framesLimitsAreHonouredAndClamped() throws {
        var mux = SessionMux(configuration: .init(maxLiveStreams: 5000))
        for _ in 0..<5000 { _ = try mux.open() }
        #expect(mux.nextBatch(maxFrames: 3).flatMap(uplinkFrames)
            == [.open(stream: s(1)), .open(stream: s(2)), .open(stream: s(3))])
        #expect(mux.nextBatch(maxFrames: 0).flatMap(uplinkFrames) == [.open(stream: s(4))])
        #expect(mux.nextBatch(maxFrames: 100_000).flatMap(uplinkFrames)?.count == 4096)
    }

    @Test func byteLimitsAreClampedToTheContract() throws {
        var mux = try SessionMux.withOpenStream()
        _ = try mux.receive(.window(stream: s(1), delta: 4 << 20))
        try mux.enqueue(pattern.prefix(8 << 20), on: s(1))
        #expect(mux.nextBatch(maxBytes: 10 << 20)?.count == FrameLimits.defaultBatchBytes)
        // A tiny limit is raised so the largest PONG still fits.
        var pinged = SessionMux()
        let token = pattern.prefix(64)
        _ = try pinged.receive(.ping(token: token))
        #expect(pinged.nextBatch(maxBytes: 10).flatMap(uplinkFrames) == [.pong(token: token)])
    }

    @Test func hasPendingUplinkTracksWork() throws {
        var mux = SessionMux()
        #expect(!mux.hasPendingUplink)
        let id = try mux.open()
        #expect(mux.hasPendingUplink)
        _ = mux.drainUplink()
        #expect(!mux.hasPendingUplink)
        try mux.enqueue(bytes("x"), on: id)
        #expect(mux.hasPendingUplink)
        _ = mux.drainUplink()
        mux.close(id)
        #expect(mux.hasPendingUplink)
        _ = mux.drainUplink()
        #expect(!mux.hasPendingUplink)
        #expect(mux.nextBatch() == nil)
    }

    // MARK: Lanes

    @Test func aLanesFirstBatchStartsWithItsOpen() throws {
        var mux = SessionMux(configuration: lanes)
        let one = try mux.open()
        let two = try mux.open()
        try mux.enqueue(bytes("first"), on: one)
        #expect(!mux.hasPendingUplink)
        #expect(mux.nextBatch() == nil)
        #expect(mux.hasPendingUplink(for: one))
        #expect(mux.laneFrames(one) == [.open(stream: one), .data(stream: one, payload: bytes("first"))])
        #expect(mux.laneFrames(one) == nil)
        #expect(mux.laneFrames(two) == [.open(stream: two)])
        try mux.enqueue(bytes("more"), on: one)
        #expect(!mux.hasPendingUplink(for: two))
        #expect(mux.laneFrames(two) == nil)
        #expect(mux.laneFrames(one) == [.data(stream: one, payload: bytes("more"))])
    }

    @Test func aOneFrameLaneBatchIsTheOpenAlone() throws {
        var mux = SessionMux(configuration: lanes)
        let id = try mux.open()
        try mux.enqueue(bytes("abc"), on: id)
        #expect(mux.laneFrames(id, maxFrames: 1) == [.open(stream: id)])
        #expect(mux.laneFrames(id, maxFrames: 1) == [.data(stream: id, payload: bytes("abc"))])
    }

    @Test func laneZeroCarriesOnlyPongs() throws {
        var mux = SessionMux(configuration: lanes)
        let id = try mux.open()
        _ = mux.laneFrames(id)
        _ = try mux.receive(.ping(token: bytes("t1")))
        _ = try mux.receive(.ping(token: bytes("t2")))
        try mux.enqueue(bytes("data"), on: id)
        #expect(mux.hasPendingUplink(for: .session))
        #expect(mux.laneFrames(.session) == [.pong(token: bytes("t1")), .pong(token: bytes("t2"))])
        #expect(mux.laneFrames(.session) == nil)
        #expect(mux.laneFrames(id) == [.data(stream: id, payload: bytes("data"))])
    }

    @Test func laneWindowAndCloseStayOnTheirLane() throws {
        var mux = SessionMux(configuration: lanes)
        let one = try mux.open()
        let two = try mux.open()
        _ = mux.laneFrames(one)
        _ = mux.laneFrames(two)
        _ = try mux.receive(.data(stream: one, payload: pattern.prefix(256 << 10)))
        try mux.delivered(256 << 10, on: one)
        #expect(!mux.hasPendingUplink(for: two))
        #expect(mux.laneFrames(one) == [.window(stream: one, delta: 256 << 10)])
        try mux.enqueue(bytes("dropped"), on: two)
        mux.close(two)
        #expect(mux.laneFrames(two) == [.close(stream: two)])
        #expect(!mux.hasPendingUplink(for: two))
        #expect(mux.laneFrames(two) == nil)
    }

    @Test func aLaneClosedByBothSidesNeedsNoClose() throws {
        var mux = SessionMux(configuration: lanes)
        let id = try mux.open()
        _ = mux.laneFrames(id)
        mux.close(id)
        #expect(mux.hasPendingUplink(for: id))
        // The lane socket ended (or the relay's CLOSE crossed ours).
        #expect(try mux.receive(.close(stream: id)) == nil)
        #expect(!mux.hasPendingUplink(for: id))
        #expect(mux.laneFrames(id) == nil)
    }

    @Test func aLaneClosedBeforeItsOpenNeverHasUplink() throws {
        var mux = SessionMux(configuration: lanes)
        let id = try mux.open()
        try mux.enqueue(bytes("abc"), on: id)
        mux.close(id)
        #expect(!mux.hasPendingUplink(for: id))
        #expect(mux.laneFrames(id) == nil)
    }

    @Test func anIsolatedFaultClosesOnlyItsLane() throws {
        var mux = SessionMux(configuration: .init(uplink: .perStream, isolatesStreamFaults: true))
        let one = try mux.open()
        _ = mux.laneFrames(one)
        #expect(throws: MuxError(.stream(one), .emptyData(one))) { try mux.receive(.data(stream: one, payload: [])) }
        #expect(mux.laneFrames(one) == [.close(stream: one)])
    }

    @Test func theSharedLayoutHasNoLanes() throws {
        var mux = SessionMux()
        let id = try mux.open()
        #expect(!mux.hasPendingUplink(for: id))
        #expect(mux.nextLaneBatch(for: id) == nil)
        #expect(mux.hasPendingUplink)
    }

    // MARK: Randomised

    @Test(arguments: [1, 2, 3, 4] as [UInt64])
    func randomEventsKeepTheInvariants(seed: UInt64) throws {
        var driver = MuxRandomDriver(seed: seed)
        for _ in 0..<4000 { try driver.step() }
        // The run reached the interesting states, not just the easy ones.
        #expect(driver.batches > 500)
        #expect(driver.sessions > 5)
        #expect(driver.dataBytesSent > 4 << 20)
        #expect(driver.windowsSent > 5)
        #expect(driver.creditResumptions > 0)
        #expect(driver.lateFramesIgnored > 10)
    }
}

extension SessionMux {
    /// A mux with stream 1 open and its OPEN already sent.
    static func withOpenStream() throws -> SessionMux {
        var mux = SessionMux()
        _ = try mux.open()
        _ = mux.drainUplink()
        return mux
    }
}

/// Draws for the randomized mux run (a failing seed replays exactly).
private extension SplitMix64 {
    mutating func below(_ bound: Int) -> Int { bound <= 1 ? 0 : Int(next() % UInt64(bound)) }
    mutating func inRange(_ range: ClosedRange<Int>) -> Int { range.lowerBound + below(range.count) }
    mutating func chance(_ percent: Int) -> Bool { below(100) < percent }
}

/// Drives one mux (and, after a fatal event, its successors) with random local events and
/// relay frames, some hostile, and checks every batch against an independent model.
private struct MuxRandomDriver {
    struct StreamModel {
        var sendCredit = FlowWindow.initialCredit     // relay grants minus DATA emitted
        var relayCredit = FlowWindow.initialCredit    // what the relay may still send us
        var enqueued = 0                               // pattern offset of the next enqueue
        var emitted = 0                                // pattern offset of the next DATA byte
        var undelivered = 0
        var openSent = false
        var relayClosed = false
        var locallyClosed = false
        var closeSent = false
    }

    var random: SplitMix64
    var mux = SessionMux(configuration: .init(maxLiveStreams: 8))
    var model: [StreamID: StreamModel] = [:]
    var expectedPongs: [ArraySlice<UInt8>] = []
    var batches = 0
    var sessions = 1
    var dataBytesSent = 0
    var windowsSent = 0
    var creditResumptions = 0
    var lateFramesIgnored = 0

    init(seed: UInt64) { random = SplitMix64(seed: seed) }

    var liveIDs: [StreamID] { model.keys.filter { mux.isLive($0) }.sorted() }
    var relayKnownIDs: [StreamID] { model.filter { $0.value.openSent && !$0.value.relayClosed }.keys.sorted() }

    mutating func newSession() {
        mux = SessionMux(configuration: .init(maxLiveStreams: random.inRange(1...8)))
        model = [:]
        expectedPongs = []
        sessions += 1
    }

    mutating func step() throws {
        switch random.below(1000) {
        case 0..<60: try open()
        case 60..<300: try enqueue()
        case 300..<330: closeLocally()
        case 330..<520: try relayData()
        case 520..<640: try deliver()
        case 640..<700: try relayWindow()
        case 700..<720: try relayClose()
        case 720..<740: try ping()
        case 740..<997: try batch()
        case 997..<999: try hostile()
        default: try bye()
        }
        try checkAccounting()
    }

    mutating func open() throws {
        let live = mux.liveStreamCount
        do throws(MuxError) {
            let id = try mux.open()
            #expect(model[id] == nil)
            model[id] = StreamModel()
        } catch {
            #expect(error.scope == .refused)
            #expect(live == mux.configuration.maxLiveStreams)
        }
    }

    mutating func enqueue() throws {
        guard let id = liveIDs.randomElement(using: &random) else { return }
        let credit = mux.sendCredit(for: id)
        let offset = model[id]?.enqueued ?? 0
        if random.chance(5), offset % 251 + credit + 1 <= pattern.count {
            #expect(throws: MuxError(.refused, .sendCreditExceeded(id, requested: credit + 1, credit: credit))) {
                try mux.enqueue(pattern[(offset % 251)..<(offset % 251 + credit + 1)], on: id)
            }
            return
        }
        let wanted: Int
        switch random.below(10) {
        case 0: wanted = pattern.count - 251  // everything the credit allows
        case 1, 2: wanted = random.inRange(0...(1 << 20))
        default: wanted = random.inRange(0...300)
        }
        let count = min(credit, wanted)
        try mux.enqueue(pattern[(offset % 251)..<(offset % 251 + count)], on: id)
        model[id]?.enqueued += count
    }

    mutating func closeLocally() {
        guard let id = liveIDs.randomElement(using: &random) else { return }
        let closed = mux.close(id)
        #expect(closed)
        model[id]?.locallyClosed = true
        // Never announced: nothing will reach the relay.
        if model[id]?.openSent == false { model[id]?.closeSent = true }
    }

    mutating func relayData() throws {
        guard let id = relayKnownIDs.randomElement(using: &random), let stream = model[id],
            stream.relayCredit > 0
        else { return }
        let count = random.inRange(1...min(Int(stream.relayCredit), 300_000))
        let payload = pattern.prefix(count)
        let action = try mux.receive(.data(stream: id, payload: payload))
        model[id]?.relayCredit -= UInt64(count)
        if mux.isLive(id) {
            #expect(action == .deliver(id, payload))
            model[id]?.undelivered += count
        } else {
            #expect(action == nil)
            lateFramesIgnored += 1
        }
    }

    mutating func deliver() throws {
        guard let id = liveIDs.filter({ model[$0]?.undelivered ?? 0 > 0 }).randomElement(using: &random),
            let outstanding = model[id]?.undelivered
        else { return }
        let count = random.chance(50) ? outstanding : random.inRange(1...outstanding)
        try mux.delivered(count, on: id)
        model[id]?.undelivered -= count
    }

    mutating func relayWindow() throws {
        guard let id = relayKnownIDs.randomElement(using: &random) else { return }
        let delta = random.chance(2) ? UInt32.max : UInt32(random.inRange(1...(1 << 20)))
        let wasBlocked = mux.isLive(id) && mux.sendCredit(for: id) == 0
        let action = try mux.receive(.window(stream: id, delta: delta))
        #expect(action == (wasBlocked ? .sendCreditAvailable(id) : nil))
        if wasBlocked { creditResumptions += 1 }
        if let credit = model[id]?.sendCredit {
            model[id]?.sendCredit = min(credit + UInt64(delta), FlowWindow.maximumCredit)
        }
    }

    mutating func relayClose() throws {
        guard let id = relayKnownIDs.randomElement(using: &random) else { return }
        let wasLive = mux.isLive(id)
        let action = try mux.receive(.close(stream: id))
        #expect(action == (wasLive ? .closeLocal(id) : nil))
        model[id]?.relayClosed = true
        if wasLive { model[id]?.closeSent = true }  // the relay needs no CLOSE back
    }

    mutating func ping() throws {
        let token = pattern[random.below(200)...].prefix(random.inRange(0...64))
        #expect(try mux.receive(.ping(token: token)) == nil)
        expectedPongs.append(token)
    }

    mutating func bye() throws {
        #expect(try mux.receive(.bye(reason: pattern.prefix(random.below(20)))) != nil)
        #expect(mux.isFinished && !mux.hasPendingUplink)
        newSession()
    }

    /// A relay frame PROTOCOL.md forbids: each must end the session, never trap.
    mutating func hostile() throws {
        let next = StreamID(rawValue: mux.nextStreamID) ?? .max
        let frame: Frame
        switch random.below(6) {
        case 0: frame = .data(stream: next, payload: pattern.prefix(1))
        case 1: frame = .hello(version: 1)
        case 2: frame = .ping(token: pattern.prefix(65))
        case 3: frame = .window(stream: .session, delta: 1)
        default:
            guard let id = relayKnownIDs.filter({ mux.isLive($0) }).randomElement(using: &random),
                let credit = model[id]?.relayCredit
            else { return }
            frame = random.chance(50)
                ? .data(stream: id, payload: pattern.prefix(Int(credit) + 1)) : .window(stream: id, delta: 0)
        }
        var scope: MuxError.Scope?
        do throws(MuxError) { _ = try mux.receive(frame) } catch { scope = error.scope }
        #expect(scope == .session)
        #expect(mux.isFinished)
        newSession()
    }

    mutating func batch() throws {
        let maxBytes = random.chance(30) ? FrameLimits.defaultBatchBytes : random.inRange(1...200_000)
        let maxFrames = random.chance(30) ? FrameLimits.maxFramesPerBatch : random.inRange(1...20)
        let hadWork = mux.hasPendingUplink
        guard let encoded = mux.nextBatch(maxBytes: maxBytes, maxFrames: maxFrames) else {
            #expect(!hadWork)
            return
        }
        batches += 1
        #expect(encoded.count <= max(maxBytes, SessionMux.minimumBatchBytes))
        let frames = try #require(uplinkFrames(encoded))
        #expect(frames.count <= max(1, maxFrames))
        var sawData = false
        for frame in frames {
            switch frame {
            case .pong(let token):
                #expect(!sawData)
                #expect(token == expectedPongs.first)
                expectedPongs.removeFirst()
            case .open(let id):
                #expect(!sawData)
                #expect(model[id]?.openSent == false)
                model[id]?.openSent = true
            case .close(let id):
                #expect(!sawData)
                #expect(model[id]?.locallyClosed == true && model[id]?.openSent == true)
                #expect(model[id]?.closeSent == false)
                model[id]?.closeSent = true
            case .window(let id, let delta):
                #expect(!sawData)
                let credit = try #require(model[id]?.relayCredit)
                #expect(credit + UInt64(delta) <= FlowWindow.initialCredit)
                model[id]?.relayCredit = credit + UInt64(delta)
                windowsSent += 1
            case .data(let id, let payload):
                sawData = true
                let stream = try #require(model[id])
                #expect(stream.openSent && !stream.closeSent)
                #expect(payload.count <= FrameLimits.clientDataChunk)
                #expect(UInt64(payload.count) <= stream.sendCredit, "DATA beyond credit")
                #expect(payload.first == UInt8(stream.emitted % 251))
                #expect(payload.last == UInt8((stream.emitted + payload.count - 1) % 251))
                model[id]?.sendCredit -= UInt64(payload.count)
                model[id]?.emitted += payload.count
                dataBytesSent += payload.count
            default:
                Issue.record("unexpected uplink frame \(frame.type.name)")
            }
        }
    }

    /// What the mux reports must match the model after every event.
    func checkAccounting() throws {
        var queued = 0
        for (id, stream) in model where mux.isLive(id) {
            let pending = mux.queuedBytes(on: id)
            queued += pending
            #expect(pending == stream.enqueued - stream.emitted)
            #expect(UInt64(mux.sendCredit(for: id) + pending) == stream.sendCredit)
            #expect(mux.undeliveredBytes(on: id) == stream.undelivered)
        }
        #expect(mux.queuedBytes == queued)
        #expect(mux.liveStreamCount <= mux.configuration.maxLiveStreams)
    }
}
