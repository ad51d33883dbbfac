import Crypto

extension HashFunction {
    /// Hashes `text`'s UTF-8 bytes where the string keeps them (no copy into an array): token
    /// hashes, refresh-token seals and JWS signing inputs are hashed this way on every request.
    mutating func update(utf8 text: String) {
        var text = text
        text.withUTF8 { update(bufferPointer: UnsafeRawBufferPointer($0)) }
    }
}
