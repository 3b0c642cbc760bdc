/// WebProxyDaemon: carriers, bridge bootstrap, session supervision, the loopback
/// listener, configuration and logging.
public enum WebProxyDaemon {
    public static let version = "0.1.0"
}
