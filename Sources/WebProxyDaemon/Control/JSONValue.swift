import WebProxyCore

/// The JSON of the control socket's status document, written and read here rather than with
/// Foundation's coders: they were the daemon's only use of Foundation, which made up a third
/// of its binary. Numbers are integers, as the document has no others.
enum JSONValue: Equatable, Sendable {
    case null
    case bool(Bool)
    case integer(Int)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    /// The text is not one JSON value of this kind (malformed, a fraction or exponent, an
    /// integer out of range, a repeated key, nested deeper than `maxDepth`), or a value is not
    /// of the shape its reader asked for.
    struct Invalid: Error, Equatable {}

    /// Deepest nesting read; the status document needs four.
    static let maxDepth = 16

    /// Reads exactly one value, with optional whitespace around it.
    init(parsing text: [UInt8]) throws(Invalid) {
        var reader = Reader(text: text)
        self = try reader.value(depth: 0)
        reader.skipWhitespace()
        guard reader.position == text.count else { throw Invalid() }
    }

    /// Two-space indents, sorted keys, `" : "` after a key and `/` unescaped: the layout
    /// `JSONEncoder` gave the status document (`.prettyPrinted, .sortedKeys,
    /// .withoutEscapingSlashes`), kept byte for byte, down to its blank line in an empty
    /// array or object.
    var prettyPrinted: String {
        var out = ""
        write(to: &out, indent: "")
        return out
    }

    private func write(to out: inout String, indent: String) {
        switch self {
        case .null: out += "null"
        case .bool(let value): out += value ? "true" : "false"
        case .integer(let value): out += String(value)
        case .string(let value): Self.writeQuoted(value, to: &out)
        case .array(let items):
            Self.writeContainer("[", "]", items, to: &out, indent: indent) { item, out, inner in
                item.write(to: &out, indent: inner)
            }
        case .object(let fields):
            let sorted = fields.sorted { $0.key < $1.key }
            Self.writeContainer("{", "}", sorted, to: &out, indent: indent) { field, out, inner in
                Self.writeQuoted(field.key, to: &out)
                out += " : "
                field.value.write(to: &out, indent: inner)
            }
        }
    }

    private static func writeContainer<Element>(
        _ open: String, _ close: String, _ elements: [Element], to out: inout String, indent: String,
        element: (Element, inout String, String) -> Void
    ) {
        let inner = indent + "  "
        out += open + "\n"
        if elements.isEmpty { out += "\n" }
        for (index, item) in elements.enumerated() {
            out += inner
            element(item, &out, inner)
            out += index == elements.count - 1 ? "\n" : ",\n"
        }
        out += indent + close
    }

    private static func writeQuoted(_ text: String, to out: inout String) {
        out += "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case "\u{8}": out += "\\b"
            case "\u{C}": out += "\\f"
            case "\u{0}"..."\u{1F}":
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        out += "\""
    }
}

/// A strict recursive-descent reader over UTF-8 bytes (RFC 8259, integers only).
private struct Reader {
    let text: [UInt8]
    var position = 0

    mutating func skipWhitespace() {
        while position < text.count {
            switch text[position] {
            case 0x20, 0x09, 0x0A, 0x0D: position += 1
            default: return
            }
        }
    }

    mutating func value(depth: Int) throws(JSONValue.Invalid) -> JSONValue {
        skipWhitespace()
        guard depth <= JSONValue.maxDepth, position < text.count else { throw JSONValue.Invalid() }
        switch text[position] {
        case UInt8(ascii: "{"): return try object(depth: depth)
        case UInt8(ascii: "["): return try array(depth: depth)
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"): try literal("true"); return .bool(true)
        case UInt8(ascii: "f"): try literal("false"); return .bool(false)
        case UInt8(ascii: "n"): try literal("null"); return .null
        default: return .integer(try integer())
        }
    }

    private mutating func object(depth: Int) throws(JSONValue.Invalid) -> JSONValue {
        position += 1
        var fields: [String: JSONValue] = [:]
        skipWhitespace()
        if consume("}") { return .object(fields) }
        repeat {
            skipWhitespace()
            let key = try string()
            skipWhitespace()
            guard consume(":") else { throw JSONValue.Invalid() }
            guard fields.updateValue(try value(depth: depth + 1), forKey: key) == nil else { throw JSONValue.Invalid() }
            skipWhitespace()
        } while consume(",")
        guard consume("}") else { throw JSONValue.Invalid() }
        return .object(fields)
    }

    private mutating func array(depth: Int) throws(JSONValue.Invalid) -> JSONValue {
        position += 1
        var items: [JSONValue] = []
        skipWhitespace()
        if consume("]") { return .array(items) }
        repeat {
            items.append(try value(depth: depth + 1))
            skipWhitespace()
        } while consume(",")
        guard consume("]") else { throw JSONValue.Invalid() }
        return .array(items)
    }

    private mutating func string() throws(JSONValue.Invalid) -> String {
        do {
            return try JSONStringLiteral.decode(text, at: &position, maxBytes: text.count)
        } catch {
            throw JSONValue.Invalid()
        }
    }

    /// An integer: `-`, then `0` or digits not starting with `0`; no fraction or exponent.
    private mutating func integer() throws(JSONValue.Invalid) -> Int {
        let negative = consume("-")
        let digits = position
        var magnitude = 0
        while position < text.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(text[position]) {
            let (times10, overflow) = magnitude.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = times10.addingReportingOverflow(Int(text[position] - UInt8(ascii: "0")))
            guard !overflow, !overflow2 else { throw JSONValue.Invalid() }
            magnitude = sum
            position += 1
        }
        let count = position - digits
        guard count > 0, count == 1 || text[digits] != UInt8(ascii: "0") else { throw JSONValue.Invalid() }
        if position < text.count, [UInt8(ascii: "."), UInt8(ascii: "e"), UInt8(ascii: "E")].contains(text[position]) {
            throw JSONValue.Invalid()
        }
        return negative ? -magnitude : magnitude
    }

    private mutating func literal(_ word: StaticString) throws(JSONValue.Invalid) {
        let bytes = UnsafeBufferPointer(start: word.utf8Start, count: word.utf8CodeUnitCount)
        guard position + bytes.count <= text.count, text[position..<position + bytes.count].elementsEqual(bytes)
        else { throw JSONValue.Invalid() }
        position += bytes.count
    }

    /// Moves past `character` if it is next.
    private mutating func consume(_ character: Unicode.Scalar) -> Bool {
        guard position < text.count, text[position] == UInt8(ascii: character) else { return false }
        position += 1
        return true
    }
}
