// Shared by the proxy handshake targets (compiled into those binaries only).
import WebProxyNet

/// Credentials whose text must never appear in an error message.
let fuzzCredentials = ProxyCredentials(username: "fuzz-user-7Qx", password: "fuzz-pass-9Zr")

/// Feeds a proxy handshake its input and checks the steps it takes.
struct HandshakeDriver {
    /// How many requests may follow the greeting (SOCKS5: auth and CONNECT; HTTP: none).
    let maxRequests: Int
    /// Most bytes the handshake may hold without deciding (its longest reply or head).
    let maxPendingBytes: Int
    var requests = 0
    var fed = 0
    var outcome: ProxyHandshakeStep?

    init(maxRequests: Int, maxPendingBytes: Int) {
        self.maxRequests = maxRequests
        self.maxPendingBytes = maxPendingBytes
    }

    mutating func run(
        _ handshake: inout some ProxyHandshake, _ chunks: [ArraySlice<UInt8>],
        input: ArraySlice<UInt8>
    ) {
        for chunk in chunks {
            let step = handshake.receive(chunk)
            fed += chunk.count
            if let outcome {
                guard case .failed = step else {
                    invariant(false, "handshake accepted bytes after \(outcome)")
                    return
                }
                continue
            }
            switch step {
            case .needMore:
                break
            case .send(let bytes):
                requests += 1
                invariant(
                    !bytes.isEmpty && requests <= maxRequests, "unexpected request #\(requests)")
            case .established(let leftover):
                // The leftover is what followed the reply: the tail of what was fed so far.
                let consumed = input.prefix(fed)
                invariant(
                    consumed.suffix(leftover.count).elementsEqual(leftover),
                    "leftover is not the input's tail")
                outcome = step
            case .failed(let error):
                var text = "\(error) \(String(reflecting: error))"
                dump(error, to: &text)
                dump(fuzzCredentials, to: &text)
                invariant(
                    !text.contains(fuzzCredentials.username)
                        && !text.contains(fuzzCredentials.password),
                    "an error or a dump shows the credentials")
                outcome = step
            }
        }
        if outcome == nil {
            invariant(fed <= maxPendingBytes, "undecided after \(fed) bytes")
        }
    }
}
