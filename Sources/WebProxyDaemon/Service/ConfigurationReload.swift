import WebProxyNet

/// The configuration file read again for a reload, with a TLS context for each of its
/// relays. Built off the loop, because reading the file and the CA files blocks; the
/// daemon then applies it on the loop, starting only the relays that changed.
struct ConfigurationReload: Sendable {
    var loaded: LoadedConfiguration
    var contexts: [String: TLSContext]

    /// Reads `path`; a relay whose TLS settings cannot be built fails the whole reload, so
    /// the running configuration stays as it is.
    static func read(path: String, environment: [String: String]) -> Result<ConfigurationReload, ConfigurationError> {
        do throws(ConfigurationError) {
            let loaded = try DaemonConfiguration.load(path: path, environment: environment)
            var contexts: [String: TLSContext] = [:]
            for relay in loaded.configuration.relays {
                do {
                    contexts[relay.name] = try RelayService.makeTLSContext(for: relay)
                } catch {
                    throw ConfigurationError([
                        ConfigurationDiagnostic(
                            .error, file: path, line: nil, "relay '\(relay.name)': cannot set up TLS: \(error)")
                    ])
                }
            }
            return .success(ConfigurationReload(loaded: loaded, contexts: contexts))
        } catch {
            return .failure(error)
        }
    }
}
