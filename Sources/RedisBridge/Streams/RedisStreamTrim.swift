/// How `XADD` trims the stream it appends to. Either way Redis removes whole nodes of entries
/// (`~`), so a few entries past the bound may stay a little longer, and none within it goes.
public enum RedisStreamTrim: Sendable, Hashable {
    /// `MAXLEN ~ n`: about the newest `n` entries are kept, however recent the others are.
    case approximateMaxLength(Int)
    /// `MINID ~ <milliseconds>-0`: entries added before this time (on the Redis server's clock,
    /// which entry ids are) are removed; every newer one is kept, however many there are.
    case approximateMinimumTime(milliseconds: Int64)
}
