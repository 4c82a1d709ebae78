// SHA-256 (FIPS 180-4) and HMAC-SHA256 (RFC 2104) in plain Swift, so that this module depends on nothing
// and a receiver can copy it as it is. Internal: the public surface is `WebhookSignature`.

/// An incremental SHA-256 hash: ``update(_:)`` any number of times, then ``finalize()`` once.
struct SHA256: Sendable {
    /// The digest's length in bytes.
    static let digestByteCount = 32
    /// The block the compression function works on, in bytes.
    static let blockByteCount = 64

    /// The first 32 bits of the fractional parts of the square roots of the first eight primes.
    private var state: [UInt32] = [
        0x6a09_e667, 0xbb67_ae85, 0x3c6e_f372, 0xa54f_f53a, 0x510e_527f, 0x9b05_688c, 0x1f83_d9ab, 0x5be0_cd19,
    ]
    /// Bytes received that do not yet fill a block (fewer than 64).
    private var pending: [UInt8] = []
    /// Every byte received so far.
    private var byteCount: UInt64 = 0

    init() {
        pending.reserveCapacity(Self.blockByteCount)
    }

    /// The digest of `bytes`.
    static func hash(_ bytes: some Collection<UInt8>) -> [UInt8] {
        var hasher = SHA256()
        hasher.update(bytes)
        return hasher.finalize()
    }

    /// Adds `bytes` to the message. A collection without contiguous storage is copied once.
    mutating func update(_ bytes: some Collection<UInt8>) {
        let done: Void? = bytes.withContiguousStorageIfAvailable { update(UnsafeRawBufferPointer($0)) }
        if done == nil { Array(bytes).withUnsafeBytes { update($0) } }
    }

    /// Adds `bytes` to the message: whole blocks are compressed where they lie, only a remainder is kept.
    mutating func update(_ bytes: UnsafeRawBufferPointer) {
        byteCount &+= UInt64(bytes.count)
        var rest = bytes[...]
        if !pending.isEmpty {
            let taken = min(Self.blockByteCount - pending.count, rest.count)
            pending.append(contentsOf: rest.prefix(taken))
            rest = rest.dropFirst(taken)
            guard pending.count == Self.blockByteCount else { return }
            pending.withUnsafeBytes { compress($0.baseAddress!) }
            pending.removeAll(keepingCapacity: true)
        }
        while rest.count >= Self.blockByteCount {
            compress(UnsafeRawBufferPointer(rebasing: rest).baseAddress!)
            rest = rest.dropFirst(Self.blockByteCount)
        }
        pending.append(contentsOf: rest)
    }

    /// Pads the message (a 1 bit, zeros, its length in bits as a big-endian 64-bit number, to a whole
    /// number of blocks) and returns the 32-byte digest.
    consuming func finalize() -> [UInt8] {
        let bitCount = byteCount &* 8
        var padding: [UInt8] = [0x80]
        let used = (pending.count + 1) % Self.blockByteCount
        let zeros = used <= 56 ? 56 - used : 56 + Self.blockByteCount - used
        padding.append(contentsOf: repeatElement(0, count: zeros))
        for shift in stride(from: 56, through: 0, by: -8) { padding.append(UInt8(truncatingIfNeeded: bitCount >> UInt64(shift))) }
        padding.withUnsafeBytes { update($0) }
        precondition(pending.isEmpty, "SHA-256 padding must end on a block boundary")
        var digest: [UInt8] = []
        digest.reserveCapacity(Self.digestByteCount)
        for word in state {
            digest.append(contentsOf: [UInt8(word >> 24), UInt8(truncatingIfNeeded: word >> 16),
                                       UInt8(truncatingIfNeeded: word >> 8), UInt8(truncatingIfNeeded: word)])
        }
        return digest
    }

    /// The compression function over the 64-byte block at `block` (FIPS 180-4, 6.2.2).
    private mutating func compress(_ block: UnsafeRawPointer) {
        withUnsafeTemporaryAllocation(of: UInt32.self, capacity: 64) { w in
            for t in 0..<16 {
                w[t] = UInt32(bigEndian: block.loadUnaligned(fromByteOffset: t * 4, as: UInt32.self))
            }
            for t in 16..<64 {
                let s0 = w[t - 15].rotatedRight(7) ^ w[t - 15].rotatedRight(18) ^ (w[t - 15] >> 3)
                let s1 = w[t - 2].rotatedRight(17) ^ w[t - 2].rotatedRight(19) ^ (w[t - 2] >> 10)
                w[t] = w[t - 16] &+ s0 &+ w[t - 7] &+ s1
            }
            var a = state[0], b = state[1], c = state[2], d = state[3]
            var e = state[4], f = state[5], g = state[6], h = state[7]
            Self.roundConstants.withUnsafeBufferPointer { k in
                for t in 0..<64 {
                    let s1 = e.rotatedRight(6) ^ e.rotatedRight(11) ^ e.rotatedRight(25)
                    let choice = (e & f) ^ (~e & g)
                    let t1 = h &+ s1 &+ choice &+ k[t] &+ w[t]
                    let s0 = a.rotatedRight(2) ^ a.rotatedRight(13) ^ a.rotatedRight(22)
                    let majority = (a & b) ^ (a & c) ^ (b & c)
                    let t2 = s0 &+ majority
                    h = g; g = f; f = e; e = d &+ t1
                    d = c; c = b; b = a; a = t1 &+ t2
                }
            }
            state[0] &+= a; state[1] &+= b; state[2] &+= c; state[3] &+= d
            state[4] &+= e; state[5] &+= f; state[6] &+= g; state[7] &+= h
        }
    }

    /// The first 32 bits of the fractional parts of the cube roots of the first sixty-four primes.
    private static let roundConstants: [UInt32] = [
        0x428a_2f98, 0x7137_4491, 0xb5c0_fbcf, 0xe9b5_dba5, 0x3956_c25b, 0x59f1_11f1, 0x923f_82a4, 0xab1c_5ed5,
        0xd807_aa98, 0x1283_5b01, 0x2431_85be, 0x550c_7dc3, 0x72be_5d74, 0x80de_b1fe, 0x9bdc_06a7, 0xc19b_f174,
        0xe49b_69c1, 0xefbe_4786, 0x0fc1_9dc6, 0x240c_a1cc, 0x2de9_2c6f, 0x4a74_84aa, 0x5cb0_a9dc, 0x76f9_88da,
        0x983e_5152, 0xa831_c66d, 0xb003_27c8, 0xbf59_7fc7, 0xc6e0_0bf3, 0xd5a7_9147, 0x06ca_6351, 0x1429_2967,
        0x27b7_0a85, 0x2e1b_2138, 0x4d2c_6dfc, 0x5338_0d13, 0x650a_7354, 0x766a_0abb, 0x81c2_c92e, 0x9272_2c85,
        0xa2bf_e8a1, 0xa81a_664b, 0xc24b_8b70, 0xc76c_51a3, 0xd192_e819, 0xd699_0624, 0xf40e_3585, 0x106a_a070,
        0x19a4_c116, 0x1e37_6c08, 0x2748_774c, 0x34b0_bcb5, 0x391c_0cb3, 0x4ed8_aa4a, 0x5b9c_ca4f, 0x682e_6ff3,
        0x748f_82ee, 0x78a5_636f, 0x84c8_7814, 0x8cc7_0208, 0x90be_fffa, 0xa450_6ceb, 0xbef9_a3f7, 0xc671_78f2,
    ]
}

/// An incremental HMAC-SHA256 (RFC 2104): H((K ⊕ opad) ‖ H((K ⊕ ipad) ‖ message)), where K is the key
/// zero-padded to 64 bytes, or its SHA-256 digest zero-padded when the key is longer than 64 bytes.
struct HMACSHA256: Sendable {
    private var inner = SHA256()
    private let outerKey: [UInt8]

    init(key: some Collection<UInt8>) {
        var block = key.count > SHA256.blockByteCount ? SHA256.hash(key) : Array(key)
        block.append(contentsOf: repeatElement(0, count: SHA256.blockByteCount - block.count))
        inner.update(block.map { $0 ^ 0x36 })
        outerKey = block.map { $0 ^ 0x5c }
    }

    /// Adds `bytes` to the message.
    mutating func update(_ bytes: some Collection<UInt8>) {
        inner.update(bytes)
    }

    /// The 32-byte authentication code of everything added.
    consuming func finalize() -> [UInt8] {
        var outer = SHA256()
        outer.update(outerKey)
        outer.update(inner.finalize())
        return outer.finalize()
    }

    /// The authentication code of `message` under `key`.
    static func authenticationCode(key: some Collection<UInt8>, message: some Collection<UInt8>) -> [UInt8] {
        var mac = HMACSHA256(key: key)
        mac.update(message)
        return mac.finalize()
    }
}

extension UInt32 {
    /// The bits rotated `count` places to the right (0 < count < 32).
    @inline(__always)
    fileprivate func rotatedRight(_ count: UInt32) -> UInt32 {
        (self >> count) | (self << (32 - count))
    }
}
