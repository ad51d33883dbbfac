/// One entry of the `redirect_to` allow list: a glob with GoTrue's syntax (gobwas/glob with `.`
/// and `/` as separators): `*` is any run of characters without `.` or `/`, `**` any run, `?` one
/// character that is not a separator, `[abc]`, `[a-z]` and `[!a-c]` one character of (or not of) a
/// set, `{a,b}` either alternative, `\` takes the next character literally. An entry without any
/// of these matches only itself, byte for byte.
///
/// Matching runs over the bytes once per alternative (no backtracking: a set of positions
/// reached), so no entry and no URL can make it slow.
public struct RedirectGlob: Sendable, Hashable {
    /// What one part of a pattern matches.
    enum Token: Sendable, Hashable {
        case byte(UInt8)
        /// `?`: one byte that is not a separator.
        case one
        /// `*` (`crossesSeparators` false) or `**`.
        case run(crossesSeparators: Bool)
        /// `[...]`: one byte in (or, `negated`, not in) the ranges.
        case set(ranges: [ClosedRange<UInt8>], negated: Bool)
    }

    /// Why an entry is not a glob.
    public enum Failure: Error, Sendable, Equatable {
        case unclosedSet, unclosedAlternatives, danglingEscape, tooComplex
    }

    /// The entry as written.
    public let pattern: String
    /// The pattern with its `{…}` alternatives spelled out: each a sequence of tokens.
    let alternatives: [[Token]]

    /// The longest entry, and the most alternatives its braces may spell out.
    public static let maximumPatternBytes = 1024
    public static let maximumAlternatives = 64

    public init(_ pattern: String) throws(Failure) {
        let bytes = Array(pattern.utf8)
        guard bytes.count <= Self.maximumPatternBytes else { throw .tooComplex }
        var alternatives: [[Token]] = []
        for spelled in try Self.expandBraces(bytes[...]) {
            alternatives.append(try Self.tokens(spelled))
        }
        self.pattern = pattern
        self.alternatives = alternatives
    }

    /// Whether `text` matches the whole pattern.
    public func matches(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        return alternatives.contains { Self.matches(bytes, $0) }
    }

    static func isSeparator(_ byte: UInt8) -> Bool { byte == UInt8(ascii: ".") || byte == UInt8(ascii: "/") }

    /// The positions reachable after each token, as a set of flags over the text.
    static func matches(_ text: [UInt8], _ tokens: [Token]) -> Bool {
        var reached = [Bool](repeating: false, count: text.count + 1)
        reached[0] = true
        for token in tokens {
            var next = [Bool](repeating: false, count: text.count + 1)
            var any = false
            switch token {
            case .run(let crossesSeparators):
                var open = false
                for position in 0...text.count {
                    if reached[position] { open = true }
                    if open {
                        next[position] = true
                        any = true
                    }
                    if position < text.count, !crossesSeparators, isSeparator(text[position]) { open = false }
                }
            default:
                for position in 0..<text.count where reached[position] && accepts(token, text[position]) {
                    next[position + 1] = true
                    any = true
                }
            }
            guard any else { return false }
            reached = next
        }
        return reached[text.count]
    }

    private static func accepts(_ token: Token, _ byte: UInt8) -> Bool {
        switch token {
        case .byte(let expected): return byte == expected
        case .one: return !isSeparator(byte)
        case .set(let ranges, let negated): return ranges.contains { $0.contains(byte) } != negated
        case .run: return false
        }
    }

    /// The pattern's `{a,b}` groups spelled out (nested groups too), escapes kept for ``tokens(_:)``.
    static func expandBraces(_ bytes: ArraySlice<UInt8>) throws(Failure) -> [[UInt8]] {
        let structural = structuralIndices(bytes)
        guard let open = structural.first(where: { bytes[$0] == UInt8(ascii: "{") }) else { return [Array(bytes)] }
        // The matching close, and the commas of this group's own level.
        var depth = 0
        var commas: [Int] = []
        var close: Int?
        for index in structural where index >= open {
            switch bytes[index] {
            case UInt8(ascii: "{"): depth += 1
            case UInt8(ascii: ","): if depth == 1 { commas.append(index) }
            case UInt8(ascii: "}"): depth -= 1
            default: break
            }
            if depth == 0 {
                close = index
                break
            }
        }
        guard let close else { throw .unclosedAlternatives }
        let prefix = Array(bytes[bytes.startIndex..<open])
        let bounds = [open] + commas + [close]
        let rests = try expandBraces(bytes[(close + 1)...])
        var results: [[UInt8]] = []
        for part in 0..<(bounds.count - 1) {
            for middle in try expandBraces(bytes[(bounds[part] + 1)..<bounds[part + 1]]) {
                for rest in rests {
                    results.append(prefix + middle + rest)
                    guard results.count <= maximumAlternatives else { throw .tooComplex }
                }
            }
        }
        return results
    }

    /// Where `{`, `,` and `}` may mean something: every index but those of escaped bytes (and
    /// their backslash) and of bytes inside a `[…]` set.
    static func structuralIndices(_ bytes: ArraySlice<UInt8>) -> [Int] {
        var indices: [Int] = []
        var index = bytes.startIndex
        var inSet = false
        while index < bytes.endIndex {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\\") {
                index += 2
                continue
            }
            if inSet {
                if byte == UInt8(ascii: "]") { inSet = false }
            } else if byte == UInt8(ascii: "[") {
                inSet = true
                // A `]` first in a set (after `!`) is one of its members, as ``tokens(_:)`` reads it.
                if index + 1 < bytes.endIndex, bytes[index + 1] == UInt8(ascii: "!") { index += 1 }
                if index + 1 < bytes.endIndex, bytes[index + 1] == UInt8(ascii: "]") { index += 1 }
            } else {
                indices.append(index)
            }
            index += 1
        }
        return indices
    }

    /// One brace-free spelling as tokens.
    static func tokens(_ bytes: [UInt8]) throws(Failure) -> [Token] {
        var tokens: [Token] = []
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "\\"):
                guard index + 1 < bytes.count else { throw .danglingEscape }
                tokens.append(.byte(bytes[index + 1]))
                index += 2
            case UInt8(ascii: "*"):
                let double = index + 1 < bytes.count && bytes[index + 1] == UInt8(ascii: "*")
                // `***` and more are `**`; a run after a run adds nothing.
                if case .run(let crosses) = tokens.last {
                    tokens[tokens.count - 1] = .run(crossesSeparators: crosses || double)
                } else {
                    tokens.append(.run(crossesSeparators: double))
                }
                index += double ? 2 : 1
            case UInt8(ascii: "?"):
                tokens.append(.one)
                index += 1
            case UInt8(ascii: "["):
                var cursor = index + 1
                let negated = cursor < bytes.count && bytes[cursor] == UInt8(ascii: "!")
                if negated { cursor += 1 }
                var ranges: [ClosedRange<UInt8>] = []
                var closed = false
                while cursor < bytes.count {
                    var low = bytes[cursor]
                    if low == UInt8(ascii: "]"), !ranges.isEmpty || cursor > index + (negated ? 2 : 1) {
                        closed = true
                        break
                    }
                    if low == UInt8(ascii: "\\") {
                        guard cursor + 1 < bytes.count else { throw .danglingEscape }
                        cursor += 1
                        low = bytes[cursor]
                    }
                    if cursor + 2 < bytes.count, bytes[cursor + 1] == UInt8(ascii: "-"), bytes[cursor + 2] != UInt8(ascii: "]") {
                        let high = bytes[cursor + 2]
                        guard low <= high else { throw .unclosedSet }
                        ranges.append(low...high)
                        cursor += 3
                    } else {
                        ranges.append(low...low)
                        cursor += 1
                    }
                }
                guard closed, !ranges.isEmpty else { throw .unclosedSet }
                tokens.append(.set(ranges: ranges, negated: negated))
                index = cursor + 1
            default:
                tokens.append(.byte(byte))
                index += 1
            }
        }
        return tokens
    }
}
