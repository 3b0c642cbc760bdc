import WebProxyCore
import WebProxyNet

@testable import WebProxyDaemon

/// The server side of obfuscated2, as `Tests/MTProxyClient/mtproxy_backend.py` plays it:
/// decrypt the whole 64-byte init with the client→server cipher, read the tag and DC, then
/// answer with the server→client cipher (keys from init[8..<56] reversed). Test-only.
final class MTProxyServerSide {
    let decryptor: AESCounterCipher
    let encryptor: AESCounterCipher
    /// The protocol tag (bytes 56..<60 of the decrypted init).
    let tag: [UInt8]
    /// The DC id (bytes 60..<62, little-endian, signed).
    let dc: Int16

    init?(wireInit: [UInt8], secret: ProxySecret) {
        guard wireInit.count == 64 else { return nil }
        let key = Array(secret.bytes.suffix(16))
        let material = Array(wireInit[8..<56])
        let up = ObfuscatedInit.directionKeys(material, secretKey: key)
        let down = ObfuscatedInit.directionKeys(material.reversed(), secretKey: key)
        guard let decryptor = AESCounterCipher(key: up.key, iv: up.iv),
            let encryptor = AESCounterCipher(key: down.key, iv: down.iv)
        else { return nil }
        let plain = decryptor.apply(wireInit)
        self.decryptor = decryptor
        self.encryptor = encryptor
        tag = Array(plain[56..<60])
        dc = Int16(bitPattern: UInt16(plain[60]) | UInt16(plain[61]) << 8)
    }

    /// An unencrypted `resPQ` for `nonce` with a 8-byte pq and one key fingerprint.
    static func resPQ(nonce: [UInt8]) -> [UInt8] {
        var data = MTProxyProbe.littleEndian(MTProxyProbe.resPQConstructor) + nonce
        data += [UInt8](repeating: 0x5A, count: 16)  // server_nonce
        data += [8, 0x17, 0xED, 0x48, 0x94, 0x1A, 0x08, 0xF9, 0x81, 0, 0, 0]  // pq as TL bytes, padded
        data += MTProxyProbe.littleEndian(MTProxyProbe.vectorConstructor) + MTProxyProbe.littleEndian(UInt32(1))
        data += MTProxyProbe.littleEndian(UInt64(0xC3B4_2B02_6CE8_6B21))
        return [UInt8](repeating: 0, count: 8) + MTProxyProbe.littleEndian(UInt64(0x6500_0000_0000_0001))
            + MTProxyProbe.littleEndian(UInt32(data.count)) + data
    }

    /// `payload` in intermediate framing, encrypted for the client.
    func packet(_ payload: [UInt8]) -> [UInt8] {
        encryptor.apply(MTProxyProbe.littleEndian(UInt32(payload.count)) + payload)
    }
}

/// A fake Telegram DC behind an MTProxy on an event loop: it decrypts the init, reads one
/// `req_pq_multi` and answers a `resPQ` with the same nonce. Use it on its loop only.
final class FakeDCBackend {
    let localAddress: SocketAddress
    private var listener: TCPListener?
    private var handlers: [ObjectIdentifier: Handler] = [:]

    private init(localAddress: SocketAddress) { self.localAddress = localAddress }

    static func start(on loop: EventLoop, secret: ProxySecret) throws(NetError) -> FakeDCBackend {
        final class Box { var backend: FakeDCBackend? }
        let box = Box()
        let listener = try TCPListener.listen(on: .loopbackIPv4(port: 0), loop: loop) { connection in
            guard let backend = box.backend else { return connection.abort() }
            let handler = Handler(secret: secret)
            backend.handlers[ObjectIdentifier(connection)] = handler
            connection.delegate = handler
        }
        let backend = FakeDCBackend(localAddress: listener.localAddress)
        backend.listener = listener
        box.backend = backend
        return backend
    }

    func stop() {
        listener?.close()
        listener = nil
        handlers = [:]
    }

    private final class Handler: ByteStreamDelegate {
        let secret: ProxySecret
        var received: [UInt8] = []
        var server: MTProxyServerSide?

        init(secret: ProxySecret) { self.secret = secret }

        func stream(_ connection: any ByteStream, didRead bytes: UnsafeRawBufferPointer) {
            received += Array(bytes)
            if server == nil {
                guard received.count >= 64 else { return }
                server = MTProxyServerSide(wireInit: Array(received.prefix(64)), secret: secret)
                let expectedTag: UInt8 = secret.isPadded ? 0xDD : 0xEE
                guard let server, server.tag == [UInt8](repeating: expectedTag, count: 4) else {
                    return connection.abort()  // as an MTProxy does for a wrong secret
                }
                received = server.decryptor.apply(Array(received.dropFirst(64)))
            } else {
                received = Array(received.dropLast(bytes.count)) + (server?.decryptor.apply(Array(bytes)) ?? [])
            }
            guard let server, received.count >= 4 else { return }
            let length = Int(MTProxyProbe.readUInt32(received[0..<4]))
            guard received.count >= 4 + length, length >= 40 else { return }
            let message = Array(received[4..<4 + length])
            guard MTProxyProbe.readUInt32(message[20..<24]) == MTProxyProbe.reqPQMultiConstructor else {
                return connection.abort()
            }
            try? connection.write(server.packet(MTProxyServerSide.resPQ(nonce: Array(message[24..<40]))))
        }

        func streamDidReachEnd(_ connection: any ByteStream, clean: Bool) {}

        func stream(_ connection: any ByteStream, didCloseWith error: TransportError?) {}
    }
}
