#if canImport(Glibc)
import Glibc
#endif

/// Writes one readable line per record to a file descriptor (standard error by default):
/// `warning relay=home event=session-lost error="reset by peer" session lost`.
public struct StandardErrorLogBackend: LogBackend {
    public let fd: Int32

    public init(fd: Int32 = 2) {
        self.fd = fd
    }

    public func write(_ record: LogRecord) {
        var bytes = Array(Self.line(for: record).utf8)[...]
        while !bytes.isEmpty {
            let count = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                return
            }
            bytes = bytes.dropFirst(count)
        }
    }

    /// The line for a record, newline included: level, set fields as `key=value` (quoted
    /// when needed), then the message. Control characters are escaped, so one record is
    /// always one line.
    public static func line(for record: LogRecord) -> String {
        var line = record.level.rawValue
        for (name, value) in record.fields.journalFields {
            let key = name.dropFirst("WEBPROXY_".count).lowercased()
            line += " " + key + "=" + quotedIfNeeded(value)
        }
        line += " " + escaped(record.message) + "\n"
        return line
    }

    private static func quotedIfNeeded(_ value: String) -> String {
        let plain = !value.isEmpty && value.unicodeScalars.allSatisfy {
            $0.value > 0x20 && $0.value != 0x7F && $0 != "\"" && $0 != "=" && $0 != "\\"
        }
        return plain ? value : "\"" + escaped(value).replacing("\"", with: "\\\"") + "\""
    }

    /// Backslash escapes for backslash and control characters.
    private static func escaped(_ text: String) -> String {
        var output = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\\": output += "\\\\"
            case "\n": output += "\\n"
            case "\r": output += "\\r"
            case "\t": output += "\\t"
            case _ where scalar.value < 0x20 || scalar.value == 0x7F:
                output += "\\x" + (scalar.value < 0x10 ? "0" : "") + String(scalar.value, radix: 16)
            default: output.unicodeScalars.append(scalar)
            }
        }
        return output
    }
}
