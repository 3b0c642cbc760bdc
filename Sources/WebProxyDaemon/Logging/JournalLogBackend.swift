#if canImport(Glibc)
import Glibc
#endif
internal import CWebProxySystemd

/// Writes records to journald natively with `sd_journal_sendv`, keeping the structured
/// fields (`journalctl -u webproxyd WEBPROXY_EVENT=session-lost`).
public struct JournalLogBackend: LogBackend {
    /// `SYSLOG_IDENTIFIER=`, what `journalctl -t` filters on.
    public let identifier: String

    public init(identifier: String = "webproxyd") {
        self.identifier = identifier
    }

    public func write(_ record: LogRecord) {
        let entries = Self.fields(for: record, identifier: identifier)
        let result = Self.send(entries)
        if result < 0 {
            // journald is gone (e.g. during shutdown): keep the message on stderr.
            StandardErrorLogBackend().write(record)
        }
    }

    /// The exact `FIELD=value` entries sent for a record, in order.
    public static func fields(for record: LogRecord, identifier: String) -> [String] {
        var entries = [
            "MESSAGE=" + record.message,
            "PRIORITY=\(record.level.syslogPriority)",
            "SYSLOG_IDENTIFIER=" + identifier,
        ]
        if let messageID = record.fields.event?.messageID {
            entries.append("MESSAGE_ID=" + messageID)
        }
        entries += [
            "CODE_FILE=" + record.file,
            "CODE_LINE=\(record.line)",
            "CODE_FUNC=" + record.function,
        ]
        entries += record.fields.journalFields.map { $0.name + "=" + $0.value }
        return entries
    }

    /// Sends entries as one journal record; returns sd_journal_sendv's result (0 or -errno).
    static func send(_ entries: [String]) -> Int32 {
        var storage: [UInt8] = []
        var ranges: [Range<Int>] = []
        for entry in entries {
            let start = storage.count
            storage += entry.utf8
            ranges.append(start..<storage.count)
        }
        return storage.withUnsafeMutableBytes { buffer in
            guard let base = buffer.baseAddress else { return -EINVAL }
            let vectors = ranges.map { iovec(iov_base: base + $0.lowerBound, iov_len: $0.count) }
            return vectors.withUnsafeBufferPointer {
                sd_journal_sendv($0.baseAddress, Int32($0.count))
            }
        }
    }

    /// True when file descriptor `fd` is the journal stream systemd connected
    /// (`JOURNAL_STREAM=<st_dev>:<st_ino>` matches the descriptor).
    public static func isJournalStream(fd: Int32 = 2, environment: [String: String]) -> Bool {
        guard let value = environment["JOURNAL_STREAM"] else { return false }
        let parts = value.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, let device = UInt64(parts[0]), let inode = UInt64(parts[1]) else {
            return false
        }
        var status = stat()
        guard fstat(fd, &status) == 0 else { return false }
        return UInt64(status.st_dev) == device && UInt64(status.st_ino) == inode
    }
}

extension Logger {
    /// The backend for this process: journald when standard error is the journal stream
    /// systemd connected, readable lines on standard error otherwise.
    public static func automaticBackend(environment: [String: String]) -> any LogBackend {
        JournalLogBackend.isJournalStream(fd: 2, environment: environment)
            ? JournalLogBackend() : StandardErrorLogBackend()
    }
}
