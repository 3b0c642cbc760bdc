/// One HTTP response from the relay, as the HTTP client hands it to the carrier machines.
///
/// The description shows the status and sizes only: headers carry session tokens and the
/// body carries payload bytes.
public struct CarrierResponse: Sendable, CustomStringConvertible, CustomReflectable {
    public var status: Int
    /// Fields in wire order; lookups are ASCII case-insensitive.
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]

    public init(status: Int, headers: [(name: String, value: String)] = [], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// The value of the first header named `name`.
    public func header(_ name: String) -> String? {
        headers.first { HeaderName.equal($0.name, name) }?.value
    }

    /// Every value of the headers named `name`, in order.
    public func values(forHeader name: String) -> [String] {
        headers.filter { HeaderName.equal($0.name, name) }.map(\.value)
    }

    /// The value of a header that must occur at most once; nil when absent.
    func singleHeader(_ name: String) throws(CarrierError) -> String? {
        let values = values(forHeader: name)
        guard values.count <= 1 else {
            throw CarrierError.malformedResponse.detailed("the relay sent \(name) more than once")
        }
        return values.first
    }

    public var description: String {
        "HTTP \(status) (\(headers.count) headers, \(body.count) body bytes)"
    }

    public var customMirror: Mirror { Mirror(self, children: ["summary": description]) }
}
