/// A status code carried by a Close frame (RFC 6455 section 7.4).
public struct WebSocketCloseCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt16

    public init(rawValue: UInt16) { self.rawValue = rawValue }

    public static let normalClosure = WebSocketCloseCode(rawValue: 1000)
    public static let goingAway = WebSocketCloseCode(rawValue: 1001)
    public static let protocolError = WebSocketCloseCode(rawValue: 1002)
    public static let unsupportedData = WebSocketCloseCode(rawValue: 1003)
    public static let invalidPayloadData = WebSocketCloseCode(rawValue: 1007)
    public static let policyViolation = WebSocketCloseCode(rawValue: 1008)
    public static let messageTooBig = WebSocketCloseCode(rawValue: 1009)
    public static let internalError = WebSocketCloseCode(rawValue: 1011)

    /// Whether an endpoint may put this code in a Close frame: the defined codes except the
    /// reserved 1004/1005/1006/1015, and the 3000-4999 ranges for libraries and apps.
    public var isAllowedOnWire: Bool {
        switch rawValue {
        case 1000...1003, 1007...1014, 3000...4999: true
        default: false
        }
    }

    public var description: String { String(rawValue) }
}
