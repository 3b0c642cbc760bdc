import Synchronization
import Testing
@testable import WebProxyDaemon

/// Collects what a command writes.
final class Capture: Sendable {
    private let text = Mutex("")
    var value: String { text.withLock { $0 } }
    var sink: TextSink { TextSink { s in self.text.withLock { $0 += s } } }
}

@Suite struct CommandLineToolTests {
    @Test(arguments: [["help"], ["--help"], ["-h"]])
    func helpPrintsUsage(arguments: [String]) {
        let out = Capture(), err = Capture()
        #expect(CommandLineTool.run(arguments: arguments, output: out.sink, errors: err.sink) == 0)
        #expect(out.value.contains("USAGE: webproxyd"))
        #expect(err.value.isEmpty)
    }

    @Test(arguments: [["version"], ["--version"]])
    func versionPrintsTheVersion(arguments: [String]) {
        let out = Capture(), err = Capture()
        #expect(CommandLineTool.run(arguments: arguments, output: out.sink, errors: err.sink) == 0)
        #expect(out.value == "webproxyd \(WebProxyDaemon.version)\n")
    }

    @Test(arguments: [[], ["bogus"], ["version", "extra"]])
    func usageErrorsExit64(arguments: [String]) {
        let out = Capture(), err = Capture()
        #expect(CommandLineTool.run(arguments: arguments, output: out.sink, errors: err.sink) == 64)
        #expect(!err.value.isEmpty)
        #expect(out.value.isEmpty)
    }
}
