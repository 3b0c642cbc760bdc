/// The operator's public website that requests without an authentic secret fall through to:
/// the index page at `/`, and (like the reference site, which has no `404.html`) the same
/// page with status 404 everywhere else.
enum PublicSite {
    static func response(for request: RelayRequest, index: [UInt8]) -> RelayResponse {
        let path =
            request.rawTarget.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
            .first.map(String.init) ?? ""
        let isRead = request.method == "GET" || request.method == "HEAD"
        let found = isRead && (path == "/" || path == "/index.html")
        return RelayResponse(
            status: found ? 200 : 404, reason: found ? "OK" : "Not Found",
            headers: [(name: "Content-Type", value: "text/html; charset=utf-8")],
            body: request.method == "HEAD" ? [] : index)
    }
}
