/// Why a demo carrier run failed, in words fit for the terminal (never payload bytes).
public struct DemoFailure: Error, Sendable, Equatable, CustomStringConvertible {
    public let description: String

    public init(_ description: String) { self.description = description }
}
