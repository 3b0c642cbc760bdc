import Glibc

/// Reads what the kernel knows about this process (or another one): memory from
/// `/proc/<pid>/status`, open descriptors from `/proc/<pid>/fd`, and a thread's CPU time.
enum ProcessProbe {
    /// `VmRSS` (current resident set) in bytes.
    static func residentBytes(pid: String = "self") -> Int { statusField("VmRSS", pid: pid) }
    /// `VmHWM` (peak resident set) in bytes.
    static func peakResidentBytes(pid: String = "self") -> Int { statusField("VmHWM", pid: pid) }

    /// Number of entries in `/proc/<pid>/fd`.
    static func openDescriptorCount(pid: String = "self") -> Int {
        guard let directory = opendir("/proc/\(pid)/fd") else { return -1 }
        defer { closedir(directory) }
        var count = 0
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if name != "." && name != ".." { count += 1 }
        }
        return count - 1  // the descriptor opendir itself holds
    }

    /// The kernel thread id of this process's thread whose name (`comm`) is `name`.
    static func threadID(named name: String) -> pid_t? {
        guard let directory = opendir("/proc/self/task") else { return nil }
        defer { closedir(directory) }
        while let entry = readdir(directory) {
            let tid = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            guard let id = pid_t(tid) else { continue }
            let comm = readFile("/proc/self/task/\(tid)/comm").trimmingSuffix()
            if comm == name { return id }
        }
        return nil
    }

    /// CPU time (user + system) consumed so far by thread `tid` of this process, in seconds.
    /// Uses the thread's CPU-time clock, the clock id `pthread_getcpuclockid` returns
    /// (`CLOCK_THREAD_CPUTIME_ID` as seen from another thread): `(~tid << 3) | 6`.
    static func threadCPUSeconds(_ tid: pid_t) -> Double {
        let clock = clockid_t((~Int32(tid)) << 3 | 6)
        var time = timespec()
        guard clock_gettime(clock, &time) == 0 else { return .nan }
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }

    /// CPU time of the whole process, in seconds.
    static func processCPUSeconds() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }

    /// A monotonic clock reading in seconds.
    static func now() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }

    private static func statusField(_ field: String, pid: String) -> Int {
        for line in readFile("/proc/\(pid)/status").split(separator: "\n") where line.hasPrefix(field + ":") {
            let digits = line.split(separator: " ").compactMap { Int($0) }
            if let kilobytes = digits.first { return kilobytes * 1024 }
        }
        return -1
    }

    static func readFile(_ path: String) -> String {
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { return "" }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            guard count > 0 else { break }
            bytes += chunk[..<count]
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}

extension String {
    func trimmingSuffix() -> String {
        var text = self
        while let last = text.last, last.isWhitespace { text.removeLast() }
        return text
    }
}
