#if canImport(Glibc)
import Glibc
#endif
import Testing
@testable import WebProxyDaemon

/// `sd_listen_fds_with_names` reads `LISTEN_*` from the process environment and expects the
/// sockets at descriptors 3, 4, …, which the test runner already uses. So the checks run in
/// a forked child (single-threaded, its own descriptor table and environment) that reports
/// back through a pipe; the runner's descriptors and environment are never touched.
@Suite(.serialized) struct SocketActivationTests {
    @Test func notActivatedMeansNoSockets() throws {
        #expect(try SocketActivation.listeningSockets(unsetEnvironment: false) == [:])
    }

    @Test func passedSocketsAreFoundByNameInAChild() throws {
        let home = try Self.listeningSocket(), work = try Self.listeningSocket()
        let datagram = socket(AF_INET, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        defer { close(home); close(work); close(datagram) }
        try #require(datagram >= 0)
        var ends: [Int32] = [0, 0]
        try #require(pipe(&ends) == 0)
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        let child = fork()
        if child == 0 {
            Self.runInChild(home: home, work: work, datagram: datagram, report: ends[1])
        }
        close(ends[1])
        defer { close(ends[0]) }
        try #require(child > 0)
        let report = Self.readReport(ends[0], child: child)
        var status: Int32 = 0
        waitpid(child, &status, 0)
        #expect(report == [
            "home=3 work=4",
            "environment unset: yes",
            "error: Socket 'udp' (fd 3) is not a listening stream socket; use ListenStream= in the socket unit",
            "error: Two sockets are named 'same'; use one socket unit per relay, each with its own FileDescriptorName=",
            "for another pid: none",
        ].joined(separator: "\n"))
        #expect(status == 0)
    }

    /// Runs the scenarios with the sockets moved to 3, 4 and writes one line per result.
    private static func runInChild(home: Int32, work: Int32, datagram: Int32, report: Int32) -> Never {
        let high = [home, work, datagram, report].map { fcntl($0, F_DUPFD_CLOEXEC, 100) }
        var lines: [String] = []
        func activate(_ fds: [Int32], names: String, pid: pid_t = getpid()) -> String {
            for (index, fd) in fds.enumerated() { dup2(fd, 3 + Int32(index)) }
            setenv("LISTEN_PID", "\(pid)", 1)
            setenv("LISTEN_FDS", "\(fds.count)", 1)
            setenv("LISTEN_FDNAMES", names, 1)
            do {
                let sockets = try SocketActivation.listeningSockets()
                if sockets.isEmpty { return "none" }
                return sockets.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
            } catch {
                return "error: \(error)"
            }
        }
        lines.append(activate([high[0], high[1]], names: "home:work"))
        lines.append("environment unset: \(getenv("LISTEN_FDS") == nil && getenv("LISTEN_PID") == nil ? "yes" : "no")")
        lines.append(activate([high[2]], names: "udp"))
        lines.append(activate([high[0], high[1]], names: "same:same"))
        lines.append("for another pid: " + activate([high[0]], names: "home", pid: getppid()))
        let bytes = Array(lines.joined(separator: "\n").utf8)
        _ = bytes.withUnsafeBytes { write(high[3], $0.baseAddress, $0.count) }
        _exit(0)
    }

    /// Everything the child writes, waiting at most 10 s in total.
    private static func readReport(_ fd: Int32, child: pid_t) -> String {
        var output: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        for _ in 0..<100 {
            var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&descriptor, 1, 100) >= 0 else { break }
            guard descriptor.revents != 0 else { continue }
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count <= 0 { return String(decoding: output, as: UTF8.self) }
            output += buffer[..<count]
        }
        kill(child, SIGKILL)
        return "timed out: " + String(decoding: output, as: UTF8.self)
    }

    /// A TCP socket listening on 127.0.0.1 on an ephemeral port.
    private static func listeningSocket() throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw ScratchError(errno: errno) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0, listen(fd, 4) == 0 else {
            let error = errno
            close(fd)
            throw ScratchError(errno: error)
        }
        return fd
    }
}
