/// The context of handling one event: the time, the actions produced so far, the id
/// source, the randomness for jitter and the frames carried. Threaded through the
/// supervisor and its driver.
struct SessionStep {
    let now: MonotonicInstant
    var actions: [SessionAction] = []
    /// Frames sent and received while handling the event.
    var frames = FrameCounts()
    var ids: IdentifierSource
    var random: RandomSource

    mutating func emit(_ action: SessionAction) { actions.append(action) }
}

/// An injected generator behind a concrete type, so it can be passed where a generic
/// `inout some RandomNumberGenerator` is expected.
struct RandomSource: RandomNumberGenerator, Sendable {
    var base: any RandomNumberGenerator & Sendable

    mutating func next() -> UInt64 { base.next() }
}
