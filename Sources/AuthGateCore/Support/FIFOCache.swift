/// A dictionary bounded to `capacity` entries that forgets the oldest insertion first: a value
/// type, to be held under a lock by the caches built on it (``VerifiedTokenCache``,
/// ``StoredRecordCache``, AuthGateHTTP's `UserTextCache`).
///
/// Eviction goes through a ring of keys in insertion order, one entry per insertion. Evicting "an
/// arbitrary tenth" by removing the dictionary's first keys instead leaves Swift's open-addressing
/// table with long probe runs: lookups then cost tens of microseconds each, for as long as the
/// cache stays full.
package struct FIFOCache<Key: Hashable, Value> {
    private var entries: [Key: Value] = [:]
    /// Keys in insertion order, oldest at `oldest` once the ring has reached `capacity`. A key
    /// removed early stays here until its slot comes round; if it was kept again meanwhile, that
    /// later entry goes early then, which a cache can afford.
    private var ring: [Key] = []
    private var oldest = 0
    package let capacity: Int

    /// `capacity` 0 keeps nothing.
    package init(capacity: Int) {
        self.capacity = max(0, capacity)
    }

    package subscript(key: Key) -> Value? { entries[key] }

    package var count: Int { entries.count }

    /// Keeps `value` under `key`, forgetting the oldest insertion when full. A key already kept
    /// takes the new value and is not reordered.
    package mutating func insert(_ value: Value, for key: Key) {
        guard capacity > 0 else { return }
        if entries.updateValue(value, forKey: key) != nil { return }
        if ring.count < capacity {
            ring.append(key)
            return
        }
        let evicted = ring[oldest]
        ring[oldest] = key
        oldest = oldest + 1 == capacity ? 0 : oldest + 1
        if evicted != key { entries.removeValue(forKey: evicted) }
    }

    package mutating func removeValue(forKey key: Key) {
        entries.removeValue(forKey: key)
    }

    package mutating func removeAll() {
        entries.removeAll()
        ring.removeAll()
        oldest = 0
    }
}
