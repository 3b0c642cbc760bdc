/// One HTTP request as the shell parsed it: the raw target and the header fields in wire
/// order (names as sent; values with surrounding whitespace removed).
public struct RelayRequest: Sendable {
    /// The method token, e.g. `GET`.
    public var method: String
    /// The raw request target, e.g. `/api/v1/up` or `/?bridge=…` (never decoded).
    public var rawTarget: String
    /// Header fields in wire order, duplicates kept.
    public var headers: [(name: String, value: String)]
    /// The complete body.
    public var body: [UInt8]

    public init(
        method: String, rawTarget: String, headers: [(name: String, value: String)],
        body: [UInt8] = []
    ) {
        self.method = method
        self.rawTarget = rawTarget
        self.headers = headers
        self.body = body
    }

    /// Every value of the header `name` (case-insensitive), in order.
    func values(of name: String) -> [String] {
        headers.compactMap { $0.name.lowercased() == name ? $0.value : nil }
    }

    /// The value of a header that must appear at most once: `.absent`, `.one(v)` or `.many`.
    func single(_ name: String) -> SingleHeader {
        let found = values(of: name)
        switch found.count {
        case 0: return .absent
        case 1: return .one(found[0])
        default: return .many
        }
    }

    enum SingleHeader: Equatable {
        case absent
        case one(String)
        case many
    }
}
