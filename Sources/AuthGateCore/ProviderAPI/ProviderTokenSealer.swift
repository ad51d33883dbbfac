public import Crypto

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// Seals the provider refresh tokens AuthGate keeps (Apple's, for revocation) with AES-256-GCM
/// under `providers.token_encryption_key_file`, so the store never holds one in the clear.
///
/// A sealed token is `v1.` and the base64url of nonce, ciphertext and tag. The provider and the
/// identity's subject are authenticated with it: a sealed token copied onto another identity does
/// not open.
public struct ProviderTokenSealer: Sendable {
    private let key: SymmetricKey

    /// The format's prefix; a later format gets a new one.
    static let prefix = "v1."

    public init(key: SymmetricKey) {
        self.key = key
    }

    /// Reads a key written as the base64 (or base64url) of 32 bytes, as `openssl rand -base64 32`
    /// prints it; nil for anything else.
    public static func key(fromText text: String) -> SymmetricKey? {
        let trimmed = text.trimmed
        let bytes: [UInt8]?
        if let standard = Data(base64Encoded: trimmed) {
            bytes = Array(standard)
        } else {
            bytes = Base64URL.decode(trimmed)
        }
        guard let bytes, bytes.count == 32 else { return nil }
        return SymmetricKey(data: bytes)
    }

    /// `token` sealed for the identity (`provider`, `subject`).
    public func seal(_ token: String, provider: String, subject: String) throws -> String {
        do {
            let box = try AES.GCM.seal(Array(token.utf8), using: key, authenticating: Self.context(provider, subject))
            guard let combined = box.combined else { throw AuthGateError(.keyInvalid, "AES-GCM gave no combined form") }
            return Self.prefix + Base64URL.encode(combined)
        } catch let error as AuthGateError {
            throw error
        } catch {
            throw AuthGateError(.keyInvalid, "a provider token could not be sealed")
        }
    }

    /// The token `sealed` holds for (`provider`, `subject`).
    /// - Throws: ``AuthGateError/Code/storeCorrupt`` when it is not one of ours, was sealed for
    ///   another identity or under another key.
    public func open(_ sealed: String, provider: String, subject: String) throws -> String {
        guard sealed.hasPrefix(Self.prefix), let combined = Base64URL.decode(sealed.dropFirst(Self.prefix.count)),
            let box = try? AES.GCM.SealedBox(combined: combined),
            let plain = try? AES.GCM.open(box, using: key, authenticating: Self.context(provider, subject)),
            let token = String(validating: plain, as: UTF8.self)
        else {
            throw AuthGateError(.storeCorrupt, "a sealed \(provider) token does not open with providers.token_encryption_key_file")
        }
        return token
    }

    private static func context(_ provider: String, _ subject: String) -> [UInt8] {
        Array("authgate provider token\u{0}\(provider)\u{0}\(subject)".utf8)
    }
}
