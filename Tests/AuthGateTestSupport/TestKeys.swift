import Crypto

/// Key material made fresh by tests.
public enum TestKeys {
    /// A new P-256 private key in PKCS#8 PEM form.
    public static func es256PEM() -> String {
        P256.Signing.PrivateKey().pemRepresentation
    }
}
