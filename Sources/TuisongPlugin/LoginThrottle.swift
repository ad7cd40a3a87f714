import Foundation
import Synchronization
import TuisongCore

/// What is known of whoever tries a password: served in this order when checks queue.
public enum LoginStanding: Int, Sendable {
    /// Logged in successfully before (since the server started).
    case trusted = 0
    /// Nothing on record.
    case unknown = 1
    /// A failed login on record.
    case suspect = 2
}

/// Growing delays after failed logins, per key (the console: a client address; an IM vendor's
/// password grant: an app's user): the first `freeFailures` cost nothing, then each further
/// failure locks the key out for twice as long as the last (1 s, 2 s, 4 s, … up to
/// `maxDelay`). A success clears the key's record; records of keys quiet for an hour are
/// forgotten.
///
/// Behind a reverse proxy every client shares the proxy's address, so delays by address then
/// apply to all of them together: slower for the operator during an attack, never faster for
/// the attacker.
public final class LoginThrottle: Sendable {
    struct Record {
        var failures: Int
        var lockedUntil: Date
        var lastFailure: Date
    }

    public let freeFailures: Int
    public let maxDelay: TimeInterval
    private let clock: any Clock
    private let records = Mutex<[String: Record]>([:])
    /// Addresses that logged in successfully since start (taken after `records`, never before).
    private let succeeded = Mutex<Set<String>>([])
    static let maxRecords = 10_000

    public init(clock: any Clock, freeFailures: Int = 3, maxDelay: TimeInterval = 300) {
        self.clock = clock
        self.freeFailures = freeFailures
        self.maxDelay = maxDelay
    }

    /// Seconds the address must still wait (rounded up), or nil when it may try now.
    public func waitTime(for address: String) -> Int? {
        let now = clock.now
        return records.withLock { records in
            guard let record = records[address], record.lockedUntil > now else { return nil }
            return Int(record.lockedUntil.timeIntervalSince(now).rounded(.up))
        }
    }

    /// Records a failure; returns the delay now imposed (0 while failures are still free).
    @discardableResult
    public func recordFailure(for address: String) -> TimeInterval {
        let now = clock.now
        return records.withLock { records in
            if records.count >= Self.maxRecords {
                records = records.filter { now.timeIntervalSince($0.value.lastFailure) < 3600 }
                if records.count >= Self.maxRecords { records.removeAll() }
            }
            var record = records[address] ?? Record(failures: 0, lockedUntil: now, lastFailure: now)
            if now.timeIntervalSince(record.lastFailure) > 3600 { record.failures = 0 }
            record.failures += 1
            record.lastFailure = now
            let beyond = record.failures - freeFailures
            let delay = beyond > 0 ? min(maxDelay, pow(2, Double(beyond - 1))) : 0
            record.lockedUntil = now.addingTimeInterval(delay)
            records[address] = record
            return delay
        }
    }

    /// How the address's next password check queues (the console's `PasswordVerifier`): a
    /// failure on record makes it wait behind everyone, a successful login since start puts it
    /// first.
    public func standing(of address: String) -> LoginStanding {
        records.withLock { records in
            if records[address] != nil { return .suspect }
            return succeeded.withLock { $0.contains(address) } ? .trusted : .unknown
        }
    }

    public func recordSuccess(for address: String) {
        records.withLock { records in
            records.removeValue(forKey: address)
            succeeded.withLock { succeeded in
                if succeeded.count >= Self.maxRecords { succeeded.removeAll() }
                succeeded.insert(address)
            }
        }
    }
}
