import CWebProxyQRencode

/// A QR code of a text, encoded by libqrencode, drawn with Unicode half blocks so that
/// two rows of modules fit one line of a terminal.
struct TerminalQRCode {
    /// Modules per side, without the quiet zone.
    let size: Int
    /// Row by row; true is a dark module.
    let modules: [Bool]

    /// Light modules around the code. The standard asks for 4; phone scanners read 2.
    static let quietZone = 2

    /// Nil if libqrencode cannot encode the text (too long, or out of memory).
    init?(_ text: String) {
        // Error correction M, as Telegram's own proxy QR codes; 8-bit mode keeps the case.
        guard let code = QRcode_encodeString(text, 0, QR_ECLEVEL_M, QR_MODE_8, 1) else { return nil }
        defer { QRcode_free(code) }
        let width = Int(code.pointee.width)
        size = width
        // Bit 0 of each byte is the module's colour; the other bits describe its role.
        modules = (0..<width * width).map { code.pointee.data[$0] & 1 == 1 }
    }

    func isDark(row: Int, column: Int) -> Bool {
        guard (0..<size).contains(row), (0..<size).contains(column) else { return false }
        return modules[row * size + column]
    }

    /// The code as lines of text. With `colours`, each line sets black on white, so the code
    /// reads the right way round on a dark terminal too; without, dark modules are the
    /// printed blocks.
    func lines(colours: Bool) -> [String] {
        let span = -Self.quietZone..<(size + Self.quietZone)
        return stride(from: span.lowerBound, to: span.upperBound, by: 2).map { row in
            let cells = span.map { column -> Character in
                switch (isDark(row: row, column: column), isDark(row: row + 1, column: column)) {
                case (true, true): "█"
                case (true, false): "▀"
                case (false, true): "▄"
                case (false, false): " "
                }
            }
            return colours ? "\u{1B}[38;5;16;48;5;231m" + String(cells) + "\u{1B}[0m" : String(cells)
        }
    }
}
