import WebProxyCore

/// Replaces every spelling of known secrets in text with `<redacted>`: lowercase and
/// uppercase hex, base64 and base64url (padded or not), and the base-path link form.
struct SecretRedactor: Sendable {
    let secrets: [ProxySecret]
    private let needles: [String]

    static let placeholder = "<redacted>"

    init(secrets: [ProxySecret]) {
        self.secrets = secrets
        var needles: Set<String> = []
        for secret in secrets {
            needles.insert(secret.hex)
            needles.insert(secret.hex.uppercased())
            needles.insert(secret.basePathLinkValue)
            let url = Base64URL.encode(secret.bytes)
            needles.insert(url)
            needles.insert(String(url.map { $0 == "-" ? "+" : $0 == "_" ? "/" : $0 }))
        }
        // Longest first, so a spelling that contains another is replaced whole.
        self.needles = needles.sorted { $0.count > $1.count }
    }

    func redacted(_ text: String) -> String {
        needles.reduce(text) { $0.replacing($1, with: Self.placeholder) }
    }
}

/// Log-safe spellings of values that contain secrets or tokens.
public enum LogRedaction {
    /// A URL with its password, every query value and the fragment replaced by
    /// `<redacted>`: bridge tokens and capabilities travel in query strings.
    public static func url(_ text: String) -> String {
        var output = text
        if let fragment = output.firstIndex(of: "#") {
            output = String(output[..<fragment]) + "#" + SecretRedactor.placeholder
        }
        if let schemeEnd = output.firstRange(of: "://") {
            let authorityEnd = output[schemeEnd.upperBound...].firstIndex { "/?#".contains($0) }
                ?? output.endIndex
            let authority = output[schemeEnd.upperBound..<authorityEnd]
            if let at = authority.lastIndex(of: "@"), let colon = authority[..<at].firstIndex(of: ":") {
                output.replaceSubrange(output.index(after: colon)..<at, with: SecretRedactor.placeholder)
            }
        }
        guard let question = output.firstIndex(of: "?") else { return output }
        let queryEnd = output[question...].firstIndex(of: "#") ?? output.endIndex
        let query = output[output.index(after: question)..<queryEnd]
            .split(separator: "&", omittingEmptySubsequences: false)
            .map { pair in
                guard let equals = pair.firstIndex(of: "=") else { return String(pair) }
                return pair[...equals] + SecretRedactor.placeholder
            }
            .joined(separator: "&")
        return output[...question] + query + output[queryEnd...]
    }
}

extension ProxyLink {
    /// The link with its secret replaced by `<redacted>`: safe to log and show.
    public var redacted: String {
        let link = rendered(.deepLink)
        guard let secret = link.firstRange(of: "&secret=") else { return SecretRedactor.placeholder }
        return link[..<secret.upperBound] + SecretRedactor.placeholder
    }
}
