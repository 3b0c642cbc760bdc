/// One HTTP response for the shell to write. `Content-Length` (or its absence on 101/204)
/// is the shell's job; every other header is listed here.
public struct RelayResponse: Sendable, Equatable, CustomStringConvertible {
    /// Status code, e.g. 200, 204, 404.
    public var status: Int
    /// Reason phrase, e.g. `Not Found`.
    public var reason: String
    /// Header fields in the order to write them.
    public var headers: [(name: String, value: String)]
    /// The body (empty for 101, 204 and HEAD answers).
    public var body: [UInt8]

    public init(
        status: Int, reason: String, headers: [(name: String, value: String)], body: [UInt8] = []
    ) {
        self.status = status
        self.reason = reason
        self.headers = headers
        self.body = body
    }

    /// The first value of header `name` (case-insensitive).
    public func value(of name: String) -> String? {
        let wanted = name.lowercased()
        return headers.first { $0.name.lowercased() == wanted }?.value
    }

    public static func == (a: RelayResponse, b: RelayResponse) -> Bool {
        a.status == b.status && a.reason == b.reason && a.body == b.body
            && a.headers.elementsEqual(b.headers) { $0.name == $1.name && $0.value == $1.value }
    }

    /// Status and header names only: values may carry tokens.
    public var description: String {
        "\(status) \(reason) [\(headers.map(\.name).joined(separator: ", "))] \(body.count) bytes"
    }

    static let noStore = (name: "Cache-Control", value: "no-store")

    /// The relay's own 404 for authentic but wrong requests.
    static let localNotFound = RelayResponse(
        status: 404, reason: "Not Found",
        headers: [
            noStore, (name: "Content-Type", value: "text/plain; charset=utf-8"),
            (name: "X-Content-Type-Options", value: "nosniff"),
        ],
        body: Array("404 page not found\n".utf8))

    /// Capacity or injected unavailability: retry the identical request after a second.
    static let unavailable = RelayResponse(
        status: 503, reason: "Service Unavailable",
        headers: [noStore, (name: "Retry-After", value: "1")])

    static func noContent(_ extra: [(name: String, value: String)] = []) -> RelayResponse {
        RelayResponse(status: 204, reason: "No Content", headers: [noStore] + extra)
    }

    static func frames(_ body: [UInt8], _ extra: [(name: String, value: String)]) -> RelayResponse {
        RelayResponse(
            status: 200, reason: "OK",
            headers: [noStore, (name: "Content-Type", value: "application/octet-stream")] + extra,
            body: body)
    }
}
