/// The fields of a query string or an `application/x-www-form-urlencoded` body, decoded once and
/// strictly: printable ASCII as sent, `+` is a space, every `%` starts two hex digits, the decoded bytes are UTF-8 without
/// control characters. A field named twice is kept with each value; ``single(_:)`` refuses it, so a
/// decision is never made on one copy of a parameter while another acts on the second.
public struct FormFields: Sendable, Equatable {
    /// The fields in their order, each name with its values.
    public private(set) var fields: [(name: String, value: String)] = []

    /// Why a text is not a form.
    public enum Failure: Error, Sendable, Equatable {
        /// A `%` not followed by two hex digits, bytes that are not UTF-8, or a control character.
        case badEncoding
        /// More fields or longer text than a form here may have.
        case tooLarge
        /// A field the caller reads once was given more than once.
        case repeated(String)
    }

    /// The most fields a form may have, and the longest it may be.
    public static let maximumFields = 64
    public static let maximumBytes = 16 * 1024

    public init() {}

    /// Parses `text` (without a leading `?`); empty pairs (`a=1&&b=2`) are skipped.
    public init(parsing text: some StringProtocol) throws(Failure) {
        guard text.utf8.count <= Self.maximumBytes else { throw .tooLarge }
        for pair in text.utf8.split(separator: UInt8(ascii: "&"), omittingEmptySubsequences: true) {
            guard fields.count < Self.maximumFields else { throw .tooLarge }
            let equals = pair.firstIndex(of: UInt8(ascii: "="))
            let name = try Self.decode(pair[pair.startIndex..<(equals ?? pair.endIndex)])
            var value = ""
            if let equals { value = try Self.decode(pair[pair.index(after: equals)...]) }
            fields.append((name, value))
        }
    }

    public static func == (lhs: FormFields, rhs: FormFields) -> Bool {
        lhs.fields.elementsEqual(rhs.fields) { $0.name == $1.name && $0.value == $1.value }
    }

    /// The value of a field given at most once; nil when absent.
    /// - Throws: ``Failure/repeated(_:)`` when it was given more than once.
    public func single(_ name: String) throws(Failure) -> String? {
        var found: String?
        for field in fields where field.name == name {
            guard found == nil else { throw .repeated(name) }
            found = field.value
        }
        return found
    }

    /// The value of a field given at most once, nil when absent or empty.
    public func nonEmpty(_ name: String) throws(Failure) -> String? {
        try single(name).flatMap { $0.isEmpty ? nil : $0 }
    }

    /// Percent-decoding with `+` as a space.
    static func decode(_ bytes: some Collection<UInt8>) throws(Failure) -> String {
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count)
        var index = bytes.startIndex
        while index != bytes.endIndex {
            let byte = bytes[index]
            index = bytes.index(after: index)
            switch byte {
            case UInt8(ascii: "+"):
                output.append(UInt8(ascii: " "))
            case UInt8(ascii: "%"):
                guard index != bytes.endIndex, let high = Base64URL.hexValue(bytes[index]) else { throw .badEncoding }
                index = bytes.index(after: index)
                guard index != bytes.endIndex, let low = Base64URL.hexValue(bytes[index]) else { throw .badEncoding }
                index = bytes.index(after: index)
                output.append(high << 4 | low)
            case 0x21...0x7E:
                output.append(byte)
            default:
                throw .badEncoding  // raw spaces, controls and non-ASCII bytes are encoded in a form
            }
        }
        guard let text = String(validating: output, as: UTF8.self),
            !text.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F || (0x80...0x9F).contains($0.value) })
        else { throw .badEncoding }
        return text
    }

    /// `application/x-www-form-urlencoded` text of `fields` (every byte but the unreserved ones
    /// percent-encoded, spaces as `%20`).
    public static func encoded(_ fields: [(String, String)]) -> String {
        fields.map { percentEncoded($0.0) + "=" + percentEncoded($0.1) }.joined(separator: "&")
    }

    /// Every byte but `A-Z a-z 0-9 - . _ ~` percent-encoded (upper-case hex).
    public static func percentEncoded(_ text: String) -> String {
        var output = ""
        output.reserveCapacity(text.utf8.count)
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                output.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                output += "%" + String(byte >> 4, radix: 16, uppercase: true) + String(byte & 0xF, radix: 16, uppercase: true)
            }
        }
        return output
    }
}
