/// One HTTP request to the relay, as a pure value for the HTTP client to send.
///
/// `headers` are the exact fields in wire order, `Host` first, `Content-Length` included
/// where a browser puts it (the HTTP client checks it against the body and adds one only
/// if it is missing). On upgrades the WebSocket client adds `Sec-WebSocket-Key`.
///
/// The description shows only the method and the path without its query: header values
/// carry bearer tokens and the bridge query carries the capability.
public struct CarrierRequest: Equatable, Sendable, CustomStringConvertible, CustomReflectable {
    public var method: String
    /// Request target: a path, plus `?bridge=` on the bridge request.
    public var path: String
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]

    public init(method: String, path: String, headers: [(name: String, value: String)], body: [UInt8] = []) {
        self.method = method
        self.path = path
        self.headers = headers
        self.body = body
    }

    /// The value of the first header named `name` (ASCII case-insensitive).
    public func header(_ name: String) -> String? {
        headers.first { HeaderName.equal($0.name, name) }?.value
    }

    public static func == (a: CarrierRequest, b: CarrierRequest) -> Bool {
        a.method == b.method && a.path == b.path && a.body == b.body
            && a.headers.elementsEqual(b.headers) { $0.name == $1.name && $0.value == $1.value }
    }

    public var description: String {
        let shownPath = path.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)[0]
        let query = shownPath.count < path.count ? "?…" : ""
        return "\(method) \(shownPath)\(query) (\(headers.count) headers, \(body.count) body bytes)"
    }

    public var customMirror: Mirror { Mirror(self, children: ["summary": description]) }
}

/// ASCII case-insensitive comparison of header names.
enum HeaderName {
    static func equal(_ a: String, _ b: String) -> Bool {
        a.utf8.count == b.utf8.count && zip(a.utf8, b.utf8).allSatisfy { lower($0) == lower($1) }
    }

    private static func lower(_ byte: UInt8) -> UInt8 {
        byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte | 0x20 : byte
    }
}
