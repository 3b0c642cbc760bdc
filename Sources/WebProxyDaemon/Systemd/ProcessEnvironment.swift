#if canImport(Glibc)
import Glibc
#endif

/// The process environment as a dictionary, read once at start-up and passed to the
/// configuration loader, the notifier and the log backend choice, so that none of them
/// reads globals and tests can pass their own.
public enum ProcessEnvironment {
    /// A snapshot of `environ`; for a name given twice the first wins, as with getenv(3).
    public static func current() -> [String: String] {
        var result: [String: String] = [:]
        // Never null here: only clearenv(3) sets it so, and the daemon does not call it.
        var entry = environ
        while let pointer = entry.pointee {
            let text = String(cString: pointer)
            if let equals = text.firstIndex(of: "="), result[String(text[..<equals])] == nil {
                result[String(text[..<equals])] = String(text[text.index(after: equals)...])
            }
            entry += 1
        }
        return result
    }
}
