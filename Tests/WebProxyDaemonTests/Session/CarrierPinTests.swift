import Testing
import WebProxyCore

@testable import WebProxyDaemon
@testable import WebProxySession

@Suite("SessionSupervisor: a pinned carrier")
struct CarrierPinTests {
    typealias H = SessionHarness

    static func pinned(_ mode: CarrierMode) -> SessionSettings {
        var settings = H.settings
        settings.requiredCarrier = mode
        return settings
    }

    @Test("the relay selects another carrier than the pin: no session, an error naming both, a rebuild")
    func otherCarrierFailsTheSession() {
        var h = SessionHarness(settings: Self.pinned(.websocket))
        _ = h.on(.start)
        let actions = h.on(.httpResponse(RequestID(1), H.page(.https), wallClockSeconds: 0))
        #expect(
            actions == [
                .sessionDown(
                    SessionFailure(
                        .carrierModeMismatch, "the relay selects carrier https but this relay is pinned to websocket")),
                .schedule(.rebuild, at: h.at(.seconds(1))),
            ])
        // The page is never turned into a session: the rebuild fetches a fresh page.
        h.advance(.seconds(1))
        #expect(h.on(.timerFired(.rebuild)) == [.sendHTTP(RequestID(2), .bridgePage, H.bridgeRequest, deadline: h.at(.seconds(20)), silence: .seconds(5))])
    }

    @Test("the relay selects the pinned carrier: the session comes up as without a pin")
    func sameCarrierComesUp() {
        var h = SessionHarness(settings: Self.pinned(.https))
        #expect(h.establish(.https) == [.sessionUp(.https), .sendHTTP(RequestID(3), .down(lane: nil), H.down(0), deadline: h.at(.seconds(35)), silence: nil)])
    }
}
