#if canImport(Glibc)
import Glibc
#endif
import WebProxyNet

// The demo watches no signals, so it keeps the default SIGINT/SIGTERM (Ctrl-C ends it).
do {
    try ProcessSignal.ignoreBrokenPipes()
} catch {
    let message = Array("webproxyd-demo: cannot ignore SIGPIPE: \(error)\n".utf8)
    _ = message.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
    exit(1)
}
exit(DemoCommand.run(arguments: Array(CommandLine.arguments.dropFirst())))
