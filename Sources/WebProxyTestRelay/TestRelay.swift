/// WebProxyTestRelay: a relay written from the wire contract, used by the tests, the demo
/// and the benchmarks.
public enum WebProxyTestRelay {}
