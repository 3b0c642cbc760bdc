#if canImport(Glibc)
import Glibc
#endif

/// `webproxyd status`'s side of the control socket: send `status`, read one document.
enum ControlClient {
    /// The most bytes of answer read (a document is a few hundred bytes per relay).
    static let maxAnswerBytes = 1 << 20

    /// Why the daemon could not be asked.
    enum Failure: Error, Equatable {
        /// No socket, or nobody listening on it: the daemon is not running.
        case notRunning(path: String)
        /// The socket exists but this user may not connect to it.
        case permissionDenied(path: String)
        /// Connected, but the answer was missing, too long or not a status document.
        case badAnswer(path: String, reason: String)
    }

    /// Asks the daemon at `path` for its status, waiting at most `timeoutSeconds` per step.
    static func status(path: String, timeoutSeconds: Int = 5) -> Result<StatusDocument, Failure> {
        guard let address = UnixSocketAddress(path: path) else {
            return .failure(.badAnswer(path: path, reason: "the path is too long for a unix socket"))
        }
        guard let fd = address.connect(timeoutSeconds: timeoutSeconds) else {
            switch errno {
            case EACCES, EPERM: return .failure(.permissionDenied(path: path))
            default: return .failure(.notRunning(path: path))
            }
        }
        defer { close(fd) }
        let request = Array("status\n".utf8)
        guard request.withUnsafeBytes({ send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == request.count else {
            return .failure(.badAnswer(path: path, reason: "the request could not be sent: \(describeErrno())"))
        }
        var answer: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16 << 10)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count == 0 { break }
            if count < 0 {
                if errno == EINTR { continue }
                return .failure(.badAnswer(path: path, reason: "no complete answer: \(describeErrno())"))
            }
            answer += buffer[..<count]
            guard answer.count <= maxAnswerBytes else {
                return .failure(.badAnswer(path: path, reason: "the answer is over \(maxAnswerBytes) bytes"))
            }
        }
        do {
            return .success(try StatusDocument(decoding: answer))
        } catch {
            return .failure(.badAnswer(path: path, reason: "the answer is not a status document"))
        }
    }
}
