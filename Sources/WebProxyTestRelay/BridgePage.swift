import WebProxyCore

/// The bridge document for a fresh bootstrap (PROTOCOL.md §3.1): a tiny page whose script
/// declares exactly the two statements a native client parses, with the reference headers.
enum BridgePage {
    static func response(
        host: String, bootstrap: String, mode: CarrierMode, batchLimit: Int, nonce: String
    ) -> RelayResponse {
        let html = """
            <!doctype html>
            <html><head><meta charset="utf-8"><title>Connection</title></head>
            <body><script nonce="\(nonce)">
            const relayOrigin="https://\(host)",bootstrap="\(bootstrap)",carrierMode="\(mode.rawValue)";
            const laneQueueLimit=8388608,laneItemLimit=1024,batchLimit=\(batchLimit);
            </script></body></html>

            """
        let csp =
            "default-src 'none'; base-uri 'none'; child-src 'none'; connect-src 'self' wss://\(host); "
            + "font-src 'none'; form-action 'none'; frame-ancestors http://127.0.0.1:*; frame-src 'none'; "
            + "img-src 'none'; manifest-src 'none'; media-src 'none'; object-src 'none'; "
            + "script-src 'nonce-\(nonce)'; style-src 'none'; worker-src 'none'; "
            + "sandbox allow-same-origin allow-scripts"
        let permissions = [
            "accelerometer", "autoplay", "camera", "clipboard-read", "clipboard-write",
            "display-capture", "encrypted-media", "fullscreen", "geolocation", "gyroscope", "hid",
            "idle-detection", "magnetometer", "microphone", "midi", "payment", "picture-in-picture",
            "publickey-credentials-create", "publickey-credentials-get", "screen-wake-lock",
            "serial",
            "usb", "web-share", "xr-spatial-tracking",
        ].map { $0 + "=()" }.joined(separator: ", ")
        return RelayResponse(
            status: 200, reason: "OK",
            headers: [
                RelayResponse.noStore,
                (name: "Content-Security-Policy", value: csp),
                (name: "Content-Type", value: "text/html; charset=utf-8"),
                (name: "Permissions-Policy", value: permissions),
                (name: "Referrer-Policy", value: "no-referrer"),
                (name: "X-Content-Type-Options", value: "nosniff"),
                (name: "X-Dns-Prefetch-Control", value: "off"),
            ],
            body: Array(html.utf8))
    }
}
