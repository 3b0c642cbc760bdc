/// "Did you mean …?" for misspelt keys and section kinds.
enum KeySuggestion {
    /// A candidate `word` abbreviates, else the candidate closest to `word` by edit
    /// distance (adjacent swaps count as one edit) if it is close enough to be a typo.
    static func closest(to word: String, among candidates: [String]) -> String? {
        if word.count >= 3, let extended = candidates.first(where: { $0.hasPrefix(word.lowercased()) }) {
            return extended
        }
        let limit = max(2, word.count / 3)
        let scored = candidates.map { (candidate: $0, distance: editDistance(word, $0)) }
        guard let best = scored.min(by: { $0.distance < $1.distance }), best.distance <= limit else {
            return nil
        }
        return best.candidate
    }

    /// Optimal string alignment distance, case-insensitive.
    static func editDistance(_ first: String, _ second: String) -> Int {
        let a = Array(first.lowercased().unicodeScalars), b = Array(second.lowercased().unicodeScalars)
        guard !a.isEmpty else { return b.count }
        guard !b.isEmpty else { return a.count }
        var table = [[Int]](repeating: [Int](repeating: 0, count: b.count + 1), count: a.count + 1)
        for i in 0...a.count { table[i][0] = i }
        for j in 0...b.count { table[0][j] = j }
        for i in 1...a.count {
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                var best = min(table[i - 1][j] + 1, table[i][j - 1] + 1, table[i - 1][j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                    best = min(best, table[i - 2][j - 2] + 1)
                }
                table[i][j] = best
            }
        }
        return table[a.count][b.count]
    }
}
