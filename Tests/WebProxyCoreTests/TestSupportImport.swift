// Re-exported so every file of this target sees the shared helpers (BlockingClient,
// SplitMix64, onThreads, …) without importing them one by one.
@_exported import WebProxyTestSupport
