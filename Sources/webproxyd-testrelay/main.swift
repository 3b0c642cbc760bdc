// webproxyd-testrelay: the test relay (WebProxyTestRelay) as a standalone process, so that
// clients outside Swift (Telethon through webproxyd) can run against it over real TLS.
import Foundation
import Synchronization
import WebProxyCore
import WebProxyNet
import WebProxyTestSupport
import WebProxyTestRelay

/// Writes `text` straight to a descriptor: no stdio buffer, so a pipe sees it at once.
func emit(_ text: String, to fd: Int32) {
    let bytes = Array(text.utf8)
    var offset = 0
    while offset < bytes.count {
        let count = bytes[offset...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        if count < 0, errno == EINTR { continue }
        guard count > 0 else { return }
        offset += count
    }
}

/// Reports a fatal error on standard error and exits.
func fail(_ message: String, code: Int32 = 1) -> Never {
    emit("webproxyd-testrelay: \(message)\n", to: 2)
    exit(code)
}

// Before any thread starts: SIGPIPE ignored, SIGTERM/SIGINT blocked so the loop's signalfd
// takes them.
do {
    try ProcessSignal.prepareProcess(blocking: [.terminate, .interrupt])
} catch {
    fail("cannot prepare signal handling: \(error)")
}

let arguments = Array(CommandLine.arguments.dropFirst())
if arguments.contains("--help") || arguments.contains("-h") {
    emit(TestRelayOptions.usage + "\n", to: 1)
    exit(0)
}
let options: TestRelayOptions
do {
    options = try TestRelayOptions(arguments: arguments)
} catch {
    fail("\(error)\n\n\(TestRelayOptions.usage)", code: 64)
}

let serverContext: TLSContext
do {
    let authority = try TestCertificateAuthority()
    let leaf = try authority.issueLeaf(dnsNames: [options.host.name])
    serverContext = try TLSContext(server: leaf.serverConfiguration)
    try FileManager.default.createDirectory(
        atPath: options.stateDirectory, withIntermediateDirectories: true)
    let caPath = options.stateDirectory + "/ca.pem"
    try authority.certificatePEM.write(toFile: caPath, atomically: true, encoding: .utf8)
} catch {
    fail("cannot set up the test CA: \(error)")
}

let configuration = TestRelayConfiguration(
    host: options.host,
    profiles: [RelayProfile(secret: options.secret, carrierMode: options.carrier)])
let loop: EventLoop
do {
    loop = try EventLoop(name: "testrelay")
} catch {
    fail("cannot start the event loop: \(error)")
}

/// Set by the loop when start-up fails, read after the loop has ended.
let startFailure = Mutex<String?>(nil)
loop.execute { [options] in
    do {
        let server = try TestRelayServer.start(
            on: loop, listen: options.listen, configuration: configuration,
            backends: [options.backend], tls: serverContext)
        try loop.watchSignals([.terminate, .interrupt]) { signal in
            emit("webproxyd-testrelay: \(signal), stopping\n", to: 2)
            server.stop()
            loop.stop()
        }
        emit("PORT \(server.port)\n", to: 1)
        emit(
            "webproxyd-testrelay: listening on \(server.localAddress), carrier \(options.carrier), "
                + "backend \(options.backend)\n", to: 2)
    } catch {
        startFailure.withLock { $0 = "cannot start the relay: \(error)" }
        loop.stop()
    }
}
loop.waitUntilStopped()
if let message = startFailure.withLock({ $0 }) { fail(message) }
exit(0)
