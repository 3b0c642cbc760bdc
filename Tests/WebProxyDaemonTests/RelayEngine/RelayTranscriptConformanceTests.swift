import Testing

/// Every recorded scenario of the reference relay, replayed through the engine
/// (see `TranscriptReplay` for what is compared and the one documented relaxation).
@Suite struct RelayTranscriptConformanceTests {
    @Test(arguments: [
        "01-bridge-page.json", "02-session-create.json", "03-https-carrier.json",
        "04-https-close.json",
        "05-https-flow-control.json", "06-https-lanes.json", "07-websocket.json",
        "08-websocket-lanes.json",
        "09-limits.json",
    ])
    func replayMatchesTheReferenceRelay(file: String) throws {
        let transcript = try RelayTranscript(file: file)
        var replay = try TranscriptReplay(transcript)
        replay.run()
        for mismatch in replay.mismatches {
            Issue.record(Comment(rawValue: "\(file): \(mismatch)"))
        }
        let exchanges = transcript.events.filter { if case .exchange = $0 { true } else { false } }
            .count
        #expect(exchanges > 0)
        #expect(replay.comparedExchanges == exchanges)
    }
}
