/// The structured fields of a log record, stored by journald as `WEBPROXY_*` fields.
///
/// Fields are typed or plain strings: there is no field for a secret, and callers must
/// never pass secret-bearing text (a `ProxySecret.hex`, a rendered link, a bridge URL);
/// use `ProxyLink.redacted` and `LogRedaction` instead. `Logger.redacting(_:)` scrubs
/// known secrets from every string as a last line of defence.
public struct LogFields: Sendable, Equatable {
    /// `WEBPROXY_RELAY`: the relay section name.
    public var relay: String?
    /// `WEBPROXY_EVENT`: what happened.
    public var event: LogEvent?
    /// `WEBPROXY_STAGE`: the step in progress, e.g. `bootstrap`, `hello`, `carrier`.
    public var stage: String?
    /// `WEBPROXY_CARRIER`: the carrier mode in use, e.g. `websocket`.
    public var carrier: String?
    /// `WEBPROXY_STREAMS`: how many streams are open.
    public var streams: Int?
    /// `WEBPROXY_ERROR`: a short error description.
    public var error: String?

    public init(relay: String? = nil, event: LogEvent? = nil, stage: String? = nil,
                carrier: String? = nil, streams: Int? = nil, error: String? = nil) {
        self.relay = relay
        self.event = event
        self.stage = stage
        self.carrier = carrier
        self.streams = streams
        self.error = error
    }

    /// The fields that are set, as (journal field name, value) pairs in a fixed order.
    public var journalFields: [(name: String, value: String)] {
        var pairs: [(name: String, value: String)] = []
        if let relay { pairs.append(("WEBPROXY_RELAY", relay)) }
        if let event { pairs.append(("WEBPROXY_EVENT", event.name)) }
        if let stage { pairs.append(("WEBPROXY_STAGE", stage)) }
        if let carrier { pairs.append(("WEBPROXY_CARRIER", carrier)) }
        if let streams { pairs.append(("WEBPROXY_STREAMS", String(streams))) }
        if let error { pairs.append(("WEBPROXY_ERROR", error)) }
        return pairs
    }

    /// These fields, with `other`'s set fields taking precedence.
    func merging(_ other: LogFields) -> LogFields {
        LogFields(relay: other.relay ?? relay, event: other.event ?? event,
                  stage: other.stage ?? stage, carrier: other.carrier ?? carrier,
                  streams: other.streams ?? streams, error: other.error ?? error)
    }

    /// Every string field passed through `transform`.
    func mapStrings(_ transform: (String) -> String) -> LogFields {
        LogFields(relay: relay.map(transform), event: event, stage: stage.map(transform),
                  carrier: carrier.map(transform), streams: streams, error: error.map(transform))
    }
}
