/// The HTTP/1.x versions the codecs accept (they only ever write HTTP/1.1), and HTTP/2 for
/// messages that came over an h2 stream.
public enum HTTPVersion: Hashable, Sendable {
    case http1_0
    case http1_1
    case http2

    var text: StaticString {
        switch self {
        case .http1_0: "HTTP/1.0"
        case .http1_1: "HTTP/1.1"
        case .http2: "HTTP/2"
        }
    }

    /// Parses exactly `HTTP/1.0` or `HTTP/1.1`; any other `HTTP/x.y` is unsupported.
    static func parse(_ bytes: ArraySlice<UInt8>) throws(HTTPError) -> HTTPVersion? {
        let prefix = Array("HTTP/1.".utf8)
        guard bytes.count == 8, bytes.starts(with: prefix), let minor = bytes.last else {
            return nil
        }
        switch minor {
        case UInt8(ascii: "1"): return .http1_1
        case UInt8(ascii: "0"): return .http1_0
        case UInt8(ascii: "2")...UInt8(ascii: "9"): throw .unsupportedVersion
        default: return nil
        }
    }
}
