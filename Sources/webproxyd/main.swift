#if canImport(Glibc)
import Glibc
#endif
import WebProxyDaemon
import WebProxyNet

// Before any thread starts: SIGPIPE ignored, and SIGTERM/SIGINT/SIGHUP blocked so that every
// thread inherits the mask and the signals wait for the event loop's signalfd.
do {
    try ProcessSignal.ignoreBrokenPipes()
    try ProcessSignal.prepareProcess()
} catch {
    let message = Array("webproxyd: cannot prepare signal handling: \(error)\n".utf8)
    _ = message.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
    exit(1)
}
exit(CommandLineTool.run(arguments: Array(CommandLine.arguments.dropFirst())))
