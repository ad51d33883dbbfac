#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Base64url (RFC 4648 §5) without padding, as JWS and JWK use it.
public enum Base64URL {
    /// Encodes without `=` padding.
    public static func encode(_ bytes: [UInt8]) -> String {
        String(Data(bytes).base64EncodedString().compactMap { character -> Character? in
            switch character {
            case "+": return "-"
            case "/": return "_"
            case "=": return nil
            default: return character
            }
        })
    }

    /// Decodes, with or without padding; nil for anything else.
    public static func decode(_ text: some StringProtocol) -> [UInt8]? {
        CompactJWT.base64URLDecode(text)
    }
}
