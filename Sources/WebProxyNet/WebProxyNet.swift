/// WebProxyNet: the event loop, sockets, TLS on OpenSSL, and HTTP/1.1 and WebSocket
/// clients. It knows nothing of the relay protocol.
public enum WebProxyNet {}
