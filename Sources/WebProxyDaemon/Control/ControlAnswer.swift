/// Answers of the control socket other than a status document.
enum ControlAnswer {
    /// `{"error": "…"}` and a newline; `message` is fixed text of ours (no escaping needed
    /// beyond quotes).
    static func error(_ message: String) -> [UInt8] {
        Array("{\"error\": \"\(message.replacing("\"", with: "\\\""))\"}\n".utf8)
    }
}
