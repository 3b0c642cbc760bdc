// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "webproxyd",
    products: [
        .executable(name: "webproxyd", targets: ["webproxyd"]),
        .executable(name: "webproxyd-demo", targets: ["webproxyd-demo"]),
        .library(name: "WebProxyCore", targets: ["WebProxyCore"]),
    ],
    targets: [
        // C libraries, imported through system-library targets (Debian -dev packages).
        .systemLibrary(
            name: "CWebProxyOpenSSL", pkgConfig: "openssl",
            providers: [.apt(["libssl-dev"])]),
        .systemLibrary(
            name: "CWebProxySystemd", pkgConfig: "libsystemd",
            providers: [.apt(["libsystemd-dev"])]),
        .systemLibrary(
            name: "CWebProxyIDN2", pkgConfig: "libidn2",
            providers: [.apt(["libidn2-dev"])]),
        .systemLibrary(
            name: "CWebProxyNGHTTP2", pkgConfig: "libnghttp2",
            providers: [.apt(["libnghttp2-dev"])]),
        .systemLibrary(
            name: "CWebProxyQRencode", pkgConfig: "libqrencode",
            providers: [.apt(["libqrencode-dev"])]),
        // Linux calls Glibc does not export to Swift (epoll, eventfd, timerfd, signalfd, accept4, fork).
        .target(name: "CWebProxyLinux", cSettings: [.define("_GNU_SOURCE")]),

        // Pure protocol core: no sockets, no clocks, no globals.
        .target(name: "WebProxyCore", dependencies: ["CWebProxyOpenSSL", "CWebProxyIDN2"]),
        // Event loop, sockets, TLS, HTTP/1.1, HTTP/2 and WebSocket. Knows nothing of the relay protocol.
        .target(name: "WebProxyNet", dependencies: ["CWebProxyOpenSSL", "CWebProxyNGHTTP2", "CWebProxyLinux"]),
        // What the daemon decides for a session, as a sans-I/O machine: events in, actions out.
        // It may import WebProxyCore only, so the compiler keeps it free of sockets and clocks.
        .target(name: "WebProxySession", dependencies: ["WebProxyCore"]),
        // The I/O shell: carriers, bootstrap, listener, configuration, logging, command line.
        .target(
            name: "WebProxyDaemon",
            dependencies: [
                "WebProxySession", "WebProxyCore", "WebProxyNet", "CWebProxySystemd", "CWebProxyOpenSSL",
                "CWebProxyQRencode", "CWebProxyLinux",
            ]),
        // A relay written from the contract, for tests, the demo and benchmarks.
        .target(name: "WebProxyTestRelay", dependencies: ["WebProxyCore", "WebProxyNet", "WebProxyTestSupport"]),
        // Helpers the tests, the benchmarks and the demo share (the test certificate authority,
        // blocking client, seeded generator, loop calls); not a product.
        .target(name: "WebProxyTestSupport", dependencies: ["WebProxyNet", "CWebProxyOpenSSL"]),
        // The installed daemon: no test code.
        .executableTarget(name: "webproxyd", dependencies: ["WebProxyDaemon", "WebProxyNet"]),
        // The demo: the daemon in front of the test relay in one process; never installed.
        .executableTarget(
            name: "webproxyd-demo",
            dependencies: ["WebProxyDaemon", "WebProxyTestRelay", "WebProxyTestSupport", "WebProxyNet", "WebProxyCore"]),
        // The test relay as a process, for end-to-end runs with outside clients (Telethon).
        .executableTarget(
            name: "webproxyd-testrelay",
            dependencies: ["WebProxyTestRelay", "WebProxyTestSupport", "WebProxyNet", "WebProxyCore"]),
        // Benchmarks and the soak run (scripts/bench, scripts/soak); never part of the tests.
        .executableTarget(
            name: "webproxyd-bench",
            dependencies: ["WebProxyDaemon", "WebProxyTestRelay", "WebProxyNet", "WebProxyCore", "WebProxyTestSupport"],
            path: "Benchmarks"),

        .testTarget(name: "WebProxyCoreTests", dependencies: ["WebProxyCore", "WebProxyTestSupport"]),
        .testTarget(name: "WebProxyNetTests", dependencies: ["WebProxyNet", "CWebProxyOpenSSL", "WebProxyTestSupport"]),
        .testTarget(
            name: "WebProxyDaemonTests",
            dependencies: [
                "WebProxyDaemon", "WebProxySession", "WebProxyTestRelay", "WebProxyNet", "WebProxyCore",
                "WebProxyTestSupport",
            ]),
    ],
    swiftLanguageModes: [.v6]
)
