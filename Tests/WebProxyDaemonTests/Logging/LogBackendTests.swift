#if canImport(Glibc)
import Glibc
#endif
import Testing
@testable import WebProxyDaemon

@Suite struct LogBackendTests {
    static let record = LogRecord(
        level: .warning, message: "session lost\nreconnecting",
        fields: LogFields(relay: "home", event: .sessionLost, stage: "carrier", carrier: "websocket",
                          streams: 3, error: "reset by \"peer\""),
        file: "WebProxyDaemon/Session.swift", line: 42, function: "fail(_:)")

    @Test func journalFieldsAreExact() {
        #expect(JournalLogBackend.fields(for: Self.record, identifier: "webproxyd") == [
            "MESSAGE=session lost\nreconnecting",
            "PRIORITY=4",
            "SYSLOG_IDENTIFIER=webproxyd",
            "MESSAGE_ID=693e825d20474ada96029e0c53af0e85",
            "CODE_FILE=WebProxyDaemon/Session.swift",
            "CODE_LINE=42",
            "CODE_FUNC=fail(_:)",
            "WEBPROXY_RELAY=home",
            "WEBPROXY_EVENT=session-lost",
            "WEBPROXY_STAGE=carrier",
            "WEBPROXY_CARRIER=websocket",
            "WEBPROXY_STREAMS=3",
            "WEBPROXY_ERROR=reset by \"peer\"",
        ])
        let plain = LogRecord(level: .debug, message: "", file: "F", line: 1, function: "f()")
        #expect(JournalLogBackend.fields(for: plain, identifier: "x") == [
            "MESSAGE=", "PRIORITY=7", "SYSLOG_IDENTIFIER=x", "CODE_FILE=F", "CODE_LINE=1", "CODE_FUNC=f()",
        ])
    }

    @Test func realJournalCallDoesNotCrash() {
        // With or without a journald here, sd_journal_sendv returns 0 or a negative errno.
        let result = JournalLogBackend.send(JournalLogBackend.fields(for: Self.record, identifier: "webproxyd-test"))
        #expect(result <= 0)
        JournalLogBackend(identifier: "webproxyd-test").write(
            LogRecord(level: .debug, message: "test", file: #fileID, line: #line, function: #function))
    }

    @Test func journalStreamIsDetectedByDeviceAndInode() throws {
        let scratch = try OperationsScratchDirectory()
        let path = try scratch.write("stream", "")
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        try #require(fd >= 0)
        defer { close(fd) }
        var status = stat()
        try #require(fstat(fd, &status) == 0)
        let matching = "\(status.st_dev):\(status.st_ino)"
        #expect(JournalLogBackend.isJournalStream(fd: fd, environment: ["JOURNAL_STREAM": matching]))
        #expect(!JournalLogBackend.isJournalStream(fd: fd, environment: ["JOURNAL_STREAM": "\(status.st_dev):\(status.st_ino + 1)"]))
        #expect(!JournalLogBackend.isJournalStream(fd: fd, environment: [:]))
        #expect(!JournalLogBackend.isJournalStream(fd: fd, environment: ["JOURNAL_STREAM": matching + ":1"]))
        #expect(!JournalLogBackend.isJournalStream(fd: fd, environment: ["JOURNAL_STREAM": "x:y"]))
        #expect(Logger.automaticBackend(environment: [:]) is StandardErrorLogBackend)
    }

    @Test func standardErrorLinesAreReadable() {
        #expect(StandardErrorLogBackend.line(for: Self.record)
            == "warning relay=home event=session-lost stage=carrier carrier=websocket streams=3 error=\"reset by \\\"peer\\\"\" session lost\\nreconnecting\n")
        let bare = LogRecord(level: .info, message: "listening on 127.0.0.1:8443", fields: LogFields(relay: "home"),
                             file: "F", line: 1, function: "f()")
        #expect(StandardErrorLogBackend.line(for: bare) == "info relay=home listening on 127.0.0.1:8443\n")
        let odd = LogRecord(level: .error, message: "bell\u{7}", fields: LogFields(stage: "", error: "a=b\\c"),
                            file: "F", line: 1, function: "f()")
        #expect(StandardErrorLogBackend.line(for: odd) == "error stage=\"\" error=\"a=b\\\\c\" bell\\x07\n")
    }

    @Test func standardErrorBackendWritesWholeLines() throws {
        var ends: [Int32] = [0, 0]
        try #require(pipe(&ends) == 0)
        defer { close(ends[0]) }
        let backend = StandardErrorLogBackend(fd: ends[1])
        backend.write(Self.record)
        backend.write(LogRecord(level: .notice, message: "done", file: "F", line: 1, function: "f()"))
        close(ends[1])
        var output: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 1024)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(ends[0], $0.baseAddress, $0.count) }
            if count <= 0 { break }
            output += buffer[..<count]
        }
        #expect(String(decoding: output, as: UTF8.self)
            == StandardErrorLogBackend.line(for: Self.record) + "notice done\n")
    }
}
