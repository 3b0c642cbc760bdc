/// One header field exactly as sent or received.
public struct HTTPField: Hashable, Sendable {
    public var name: String
    public var value: String

    public init(name: String, value: String) {
        self.name = name
        self.value = value
    }
}

/// Header fields in wire order, duplicates preserved, names compared case-insensitively.
public struct HTTPHeaders: Hashable, Sendable, RandomAccessCollection, ExpressibleByArrayLiteral {
    public private(set) var fields: [HTTPField]

    public init(_ fields: [HTTPField] = []) { self.fields = fields }

    /// Builds headers from `(name, value)` pairs, in order.
    public init(_ pairs: [(String, String)]) {
        self.fields = pairs.map { HTTPField(name: $0.0, value: $0.1) }
    }

    public init(arrayLiteral elements: (String, String)...) { self.init(elements) }

    public var startIndex: Int { fields.startIndex }
    public var endIndex: Int { fields.endIndex }
    public subscript(position: Int) -> HTTPField { fields[position] }

    /// Appends a field after the existing ones.
    public mutating func append(name: String, value: String) {
        fields.append(HTTPField(name: name, value: value))
    }

    /// Every value of `name`, in order.
    public func values(_ name: String) -> [String] {
        fields.filter { Self.namesMatch($0.name, name) }.map(\.value)
    }

    /// The first value of `name`, if any.
    public func first(_ name: String) -> String? {
        fields.first { Self.namesMatch($0.name, name) }?.value
    }

    /// Whether any field is named `name`.
    public func contains(_ name: String) -> Bool {
        fields.contains { Self.namesMatch($0.name, name) }
    }

    /// Whether some `name` field's comma-separated list holds `token` (case-insensitive).
    public func contains(_ name: String, token: String) -> Bool {
        let token = token.lowercased()
        return values(name).contains { HTTPSyntax.list($0, containsToken: token) }
    }

    static func namesMatch(_ a: String, _ b: String) -> Bool {
        a.utf8.count == b.utf8.count && a.lowercased() == b.lowercased()
    }

    /// Refuses names that are not tokens and values with control characters (CR, LF, NUL...).
    func validateForSerialization() throws(HTTPError) {
        for field in fields {
            guard HTTPSyntax.isToken(field.name.utf8) else { throw .invalidHeaderName }
            guard HTTPSyntax.isSerializableValue(field.value) else { throw .invalidHeaderValue }
        }
    }

    /// Appends `name: value\r\n` for every field; the caller validated them.
    func write(into buffer: inout [UInt8]) {
        for field in fields {
            buffer.append(contentsOf: field.name.utf8)
            buffer.append(HTTPSyntax.colon)
            buffer.append(HTTPSyntax.space)
            buffer.append(contentsOf: field.value.utf8)
            buffer.append(HTTPSyntax.cr)
            buffer.append(HTTPSyntax.lf)
        }
    }
}
