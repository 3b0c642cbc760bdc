/// How a carrier machine judges one relay response.
public enum ResponseVerdict<Accepted> {
    /// The response is what the protocol expects here.
    case accepted(Accepted)
    /// `503`: nothing was applied; send the identical request again after the
    /// `Retry-After` (nil when absent or unreadable), as `RequestRetry` decides.
    case retryLater(RetryAfter?)
    /// Anything else: the session (or the bootstrap) is over.
    case fatal(CarrierError)
}

extension ResponseVerdict: Sendable where Accepted: Sendable {}
extension ResponseVerdict: Equatable where Accepted: Equatable {}

extension ResponseVerdict {
    /// The verdict on a status other than the one expected for `operation`: 503 may be
    /// retried, anything else ends the session (every 404 included: PROTOCOL.md §3.5).
    static func unexpected(_ response: CarrierResponse, operation: String) -> ResponseVerdict {
        switch response.status {
        case 503:
            return .retryLater(response.header("Retry-After").flatMap(RetryAfter.init(headerValue:)))
        case 404:
            return .fatal(
                CarrierError.unexpectedStatus.detailed(
                    "the relay answered \(operation) with 404: the session or bootstrap is gone or the request was refused"
                ))
        default:
            return .fatal(
                CarrierError.unexpectedStatus.detailed("the relay answered \(operation) with HTTP \(response.status)"))
        }
    }
}
