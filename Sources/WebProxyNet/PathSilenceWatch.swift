/// Notices a TCP path that moves nothing: samples a connection's `pathProgress` (TCP_INFO:
/// bytes the peer acknowledged plus bytes received) a few times per `bound`, and calls
/// `onSilent` once when it stayed unchanged for `bound`. A deadline alone cannot tell a slow
/// answer from a path that is gone; this can, long before the deadline. Loop-confined.
final class PathSilenceWatch {
    private let loop: EventLoop
    private let bound: Duration
    private let progress: () -> UInt64?
    private var onSilent: (() -> Void)?
    private var timer: TimerID?
    private var lastProgress: UInt64?
    private var movedAt: MonotonicTime

    /// Starts watching now; `progress` reads the path's count (nil while it cannot say).
    init(loop: EventLoop, bound: Duration, progress: @escaping () -> UInt64?, onSilent: @escaping () -> Void) {
        self.loop = loop
        self.bound = bound
        self.progress = progress
        self.onSilent = onSilent
        lastProgress = progress()
        movedAt = loop.now
        scheduleCheck()
    }

    /// Stops watching; `onSilent` will not run.
    func stop() {
        onSilent = nil
        if let timer { loop.cancelTimer(timer) }
        timer = nil
    }

    private func scheduleCheck() {
        timer = loop.scheduleTimer(after: max(bound / 4, .milliseconds(50))) { [self] in
            timer = nil
            check()
        }
    }

    private func check() {
        guard onSilent != nil else { return }
        let now = loop.now
        if let current = progress(), current != lastProgress {
            lastProgress = current
            movedAt = now
        }
        if now - movedAt >= bound {
            let onSilent = self.onSilent
            stop()
            onSilent?()
        } else {
            scheduleCheck()
        }
    }
}
