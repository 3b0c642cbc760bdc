import Testing

@testable import WebProxyDaemon

@Suite struct StatusTableTests {
    static let document = StatusDocument(
        version: "1.2.3", pid: 4321, generatedAt: "2025-05-01T12:00:00Z",
        relays: [
            RelayStatusEntry(
                name: "home", listen: "127.0.0.1:8443", state: .up, carrier: "websocket-lanes", streams: 12,
                refusedConnections: 0, bytesUp: 1536, bytesDown: 3 << 20, sessionsEstablished: 2, reconnects: 1,
                lastError: RelayStatusEntry.LastError(
                    class: "carrier-lost", message: "the session WebSocket was lost", secondsAgo: 754,
                    at: "2025-05-01T11:47:26Z"),
                sideSessions: [
                    .init(role: "media", state: .up, streams: 3), .init(role: "transfer", state: .starting, streams: 1),
                ]),
            RelayStatusEntry(
                name: "work", listen: "[::1]:8444", state: .down, carrier: nil, streams: 0, refusedConnections: 3,
                bytesUp: 0, bytesDown: 0, sessionsEstablished: 0, reconnects: 4,
                lastError: RelayStatusEntry.LastError(
                    class: "unreachable", message: "no response from the relay", secondsAgo: 5,
                    at: "2025-05-01T11:59:55Z")),
        ])

    @Test func tableGolden() {
        #expect(
            StatusTable.render(Self.document) == """
                webproxyd 1.2.3, pid 4321, 2025-05-01T12:00:00Z
                RELAY  LISTEN          STATE  CARRIER          STREAMS  REFUSED       UP     DOWN  SESSIONS  RECONNECTS
                home   127.0.0.1:8443  up     websocket-lanes       12        0  1.5 KiB  3.0 MiB         2           1
                work   [::1]:8444      down   -                      0        3      0 B      0 B         0           4
                home: media session up (3 streams), transfer session starting (1 stream)
                home: last error carrier-lost, 12 min ago (2025-05-01T11:47:26Z): the session WebSocket was lost
                work: last error unreachable, 5 s ago (2025-05-01T11:59:55Z): no response from the relay

                """)
    }

    @Test func noRelays() {
        var document = Self.document
        document.relays = []
        #expect(StatusTable.render(document) == "webproxyd 1.2.3, pid 4321, 2025-05-01T12:00:00Z\nno relays\n")
    }

    @Test func jsonRoundTripsWithSnakeCaseKeys() throws {
        let bytes = Self.document.encoded()
        let text = String(decoding: bytes, as: UTF8.self)
        #expect(text.contains("\"refused_connections\" : 3"))
        #expect(text.contains("\"seconds_ago\" : 754"))
        #expect(text.contains("\"generated_at\" : \"2025-05-01T12:00:00Z\""))
        #expect(text.contains("\"side_sessions\" : ["))
        #expect(text.hasSuffix("}\n"))
        #expect(try StatusDocument(decoding: bytes) == Self.document)
    }

    /// The document's exact bytes, as Foundation's `JSONEncoder` wrote them before the daemon
    /// had a JSON writer of its own: scripts reading `status --json` see no change.
    @Test func jsonGolden() {
        #expect(String(decoding: Self.document.encoded(), as: UTF8.self) == """
                {
                  "generated_at" : "2025-05-01T12:00:00Z",
                  "pid" : 4321,
                  "relays" : [
                    {
                      "bytes_down" : 3145728,
                      "bytes_up" : 1536,
                      "carrier" : "websocket-lanes",
                      "last_error" : {
                        "at" : "2025-05-01T11:47:26Z",
                        "class" : "carrier-lost",
                        "message" : "the session WebSocket was lost",
                        "seconds_ago" : 754
                      },
                      "listen" : "127.0.0.1:8443",
                      "name" : "home",
                      "reconnects" : 1,
                      "refused_connections" : 0,
                      "sessions_established" : 2,
                      "side_sessions" : [
                        {
                          "role" : "media",
                          "state" : "up",
                          "streams" : 3
                        },
                        {
                          "role" : "transfer",
                          "state" : "starting",
                          "streams" : 1
                        }
                      ],
                      "state" : "up",
                      "streams" : 12
                    },
                    {
                      "bytes_down" : 0,
                      "bytes_up" : 0,
                      "last_error" : {
                        "at" : "2025-05-01T11:59:55Z",
                        "class" : "unreachable",
                        "message" : "no response from the relay",
                        "seconds_ago" : 5
                      },
                      "listen" : "[::1]:8444",
                      "name" : "work",
                      "reconnects" : 4,
                      "refused_connections" : 3,
                      "sessions_established" : 0,
                      "side_sessions" : [

                      ],
                      "state" : "down",
                      "streams" : 0
                    }
                  ],
                  "version" : "1.2.3"
                }

                """)
        var empty = Self.document
        empty.relays = []
        #expect(String(decoding: empty.encoded(), as: UTF8.self) == """
                {
                  "generated_at" : "2025-05-01T12:00:00Z",
                  "pid" : 4321,
                  "relays" : [

                  ],
                  "version" : "1.2.3"
                }

                """)
    }

    @Test func jsonEscapesWhatMustBeEscaped() throws {
        var document = Self.document
        document.relays[1].lastError?.message = "a \"q\" \\ / \n\t\r\u{8}\u{C}\u{1}\u{1F} \u{7F} é 😀 \u{2028}"
        let text = String(decoding: document.encoded(), as: UTF8.self)
        #expect(text.contains(#""message" : "a \"q\" \\ / \n\t\r\b\f\u0001\u001f \#u{7F} é 😀 \#u{2028}","#))
        #expect(try StatusDocument(decoding: Array(text.utf8)) == document)
    }

    @Test(arguments: [(0, "0 s ago"), (119, "119 s ago"), (120, "2 min ago"), (7199, "119 min ago"), (7200, "2 h ago"), (172_800, "2 d ago")])
    func ago(seconds: Int, text: String) {
        #expect(StatusTable.ago(seconds) == text)
    }

    @Test(arguments: [(Int64(0), "1970-01-01T00:00:00Z"), (1_746_100_800, "2025-05-01T12:00:00Z"), (951_782_400, "2000-02-29T00:00:00Z")])
    func rfc3339(seconds: Int64, text: String) {
        #expect(RFC3339Time.format(epochSeconds: seconds) == text)
    }
}
