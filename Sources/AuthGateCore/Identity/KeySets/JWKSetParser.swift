#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// Parses a provider's JWKS key by key, so one odd key never rejects the whole set.
///
/// (jwt-kit decodes a JWKS as a whole and fails on any key it does not understand, and lets the
/// first token pin the algorithm of an `alg`-less key.) Each key is checked here: usable keys are
/// bound to the algorithm from our configuration; the rest are skipped with a reason for the log.
enum JWKSetParser {
    /// A key that was left out, and why.
    struct SkippedKey: Sendable, Hashable {
        let kid: String?
        let reason: String
    }

    /// The usable keys by `kid`, and the skipped ones.
    struct Result: Sendable {
        let keys: [String: ProviderPublicKey]
        let skipped: [SkippedKey]
    }

    /// Parses a JWKS document (`{"keys":[…]}`) for keys usable with `algorithm`.
    /// - Throws: ``AuthGateError`` (``AuthGateError/Code/keysUnavailable``) when the document itself is not a JWKS.
    static func parse(_ bytes: [UInt8], algorithm: ProvidersConfiguration.VerificationAlgorithm) throws -> Result {
        guard let document = (try? JSONValue.parse(bytes))?.objectValue, case .array(let entries) = document["keys"]
        else {
            throw AuthGateError(.keysUnavailable, "the key set is not a JWKS document ({\"keys\": [...]})")
        }
        var keys: [String: ProviderPublicKey] = [:]
        var skipped: [SkippedKey] = []
        for entry in entries {
            switch key(from: entry, algorithm: algorithm) {
            case .success(let (kid, jwk)):
                if keys[kid] != nil {
                    skipped.append(SkippedKey(kid: kid, reason: "duplicate kid; the first key with it is kept"))
                } else {
                    keys[kid] = jwk
                }
            case .failure(let skip):
                skipped.append(skip)
            }
        }
        return Result(keys: keys, skipped: skipped)
    }

    private static func key(from entry: JSONValue, algorithm: ProvidersConfiguration.VerificationAlgorithm)
        -> Swift.Result<(String, ProviderPublicKey), SkippedKey>
    {
        guard let members = entry.objectValue else { return .failure(SkippedKey(kid: nil, reason: "not a JSON object")) }
        guard let kid = members["kid"]?.stringValue, !kid.isEmpty else { return .failure(SkippedKey(kid: nil, reason: "no kid")) }
        func skip(_ reason: String) -> Swift.Result<(String, ProviderPublicKey), SkippedKey> { .failure(SkippedKey(kid: kid, reason: reason)) }
        if let use = members["use"] {
            guard use.stringValue == "sig" else { return skip("use is \(use.stringValue ?? "not a string"), not sig") }
        }
        if case .array(let operations) = members["key_ops"], !operations.contains(.string("verify")) {
            return skip("key_ops does not include verify")
        }
        if let declared = members["alg"] {
            guard declared.stringValue == algorithm.rawValue else {
                return skip("alg \(declared.stringValue ?? "?") is not the configured \(algorithm.rawValue)")
            }
        }
        let keyType = members["kty"]?.stringValue ?? ""
        do {
            switch algorithm {
            case .rs256, .rs384, .rs512:
                guard keyType == "RSA" else { return skip("kty \(keyType.isEmpty ? "missing" : keyType) cannot verify \(algorithm.rawValue)") }
                guard let modulus = members["n"]?.stringValue.flatMap(Base64URL.decodeLenient),
                    let exponent = members["e"]?.stringValue.flatMap(Base64URL.decodeLenient)
                else { return skip("RSA key without a base64url n or e") }
                return .success((kid, try ProviderPublicKey(kid: kid, algorithm: algorithm, modulus: modulus, exponent: exponent)))
            case .es256, .es384:
                guard keyType == "EC" else { return skip("kty \(keyType.isEmpty ? "missing" : keyType) cannot verify \(algorithm.rawValue)") }
                let curve = members["crv"]?.stringValue ?? ""
                let expected = algorithm == .es256 ? "P-256" : "P-384"
                guard curve == expected else { return skip("crv \(curve.isEmpty ? "missing" : curve) does not fit \(algorithm.rawValue)") }
                guard let x = members["x"]?.stringValue.flatMap(Base64URL.decodeLenient),
                    let y = members["y"]?.stringValue.flatMap(Base64URL.decodeLenient)
                else { return skip("EC key without a base64url x or y") }
                return .success((kid, try ProviderPublicKey(kid: kid, algorithm: algorithm, x: x, y: y)))
            }
        } catch {
            return skip("unusable key material (\(type(of: error)); RSA keys need at least 2048 bits)")
        }
    }
}

extension JWKSetParser.SkippedKey: Error {}
