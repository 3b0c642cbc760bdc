#if canImport(Glibc)
import Glibc
#endif
import WebProxyDaemon
import WebProxyNet

let arguments = Array(CommandLine.arguments.dropFirst())
do {
    // Before any thread starts: SIGTERM/SIGINT/SIGHUP blocked so that every thread inherits
    // the mask and the signals wait for the event loop's signalfd.
    try ProcessSignal.prepareProcess()
} catch {
    let message = Array("webproxyd: cannot prepare signal handling: \(error)\n".utf8)
    _ = message.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
    exit(1)
}
exit(CommandLineTool.run(arguments: arguments))
