#if canImport(Glibc)
    import Glibc
#endif

/// Writes secrets to new files that are private from their first byte: created with
/// `O_CREAT | O_EXCL` and mode 0600 in one system call (no window in which the file exists with
/// the default mode, and never over an existing file or through a symbolic link), then synced.
enum PrivateFile {
    /// Creates `path` (which must not exist) holding `contents`; false when that fails (and the
    /// partly written file is removed).
    static func create(_ path: String, contents: [UInt8]) -> Bool {
        #if canImport(Glibc)
            let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode_t(0o600))
            guard descriptor >= 0 else { return false }
            var written = 0
            while written < contents.count {
                let result = contents[written...].withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
                if result < 0, errno == EINTR { continue }
                guard result > 0 else {
                    close(descriptor)
                    unlink(path)
                    return false
                }
                written += result
            }
            let synced = fsync(descriptor) == 0
            close(descriptor)
            if !synced { unlink(path) }
            return synced
        #else
            return false
        #endif
    }
}
