import Foundation
import Synchronization
import TuisongCore
import TuisongDelivery

/// An OAuth 2.0 access token an Android service issued, and when it stops being accepted.
public struct AccessToken: Sendable, Hashable {
    public var value: String
    public var expires: Date

    public init(value: String, expires: Date) {
        self.value = value
        self.expires = expires
    }
}

/// Why no access token could be had.
public enum AccessTokenFailure: Error, Sendable, Hashable {
    /// The service refused the credential (wrong secret, unknown client, bad signature):
    /// sending cannot succeed until an operator fixes it.
    case refused(SendReason)
    /// The token endpoint could not be reached or failed: try again later.
    case unavailable(SendReason, retryAfter: Duration?)
}

/// Access tokens per credential, fetched once however many sends want one at the same time,
/// and refreshed before they expire: from 90 % of a token's lifetime (at most five minutes
/// before its end) sends keep using it while one refresh runs in the background, so a busy
/// transport never waits on the token endpoint after the first fetch.
public final class AccessTokenCache: Sendable {
    public typealias Fetch = @Sendable (ChannelCredential) async -> Result<AccessToken, AccessTokenFailure>

    private struct Key: Hashable {
        var credentialID: Int64
        var clientID: String
    }

    private struct Entry {
        var token: AccessToken?
        var refreshAt: Date = .distantPast
        var waiters: [CheckedContinuation<Result<AccessToken, AccessTokenFailure>, Never>] = []
        var fetching = false
    }

    private struct State {
        var entries: [Key: Entry] = [:]
        var fetches = 0
        var failures = 0
    }

    let clock: any Clock
    private let state = Mutex(State())

    public init(clock: any Clock) {
        self.clock = clock
    }

    /// Token requests made that succeeded (refreshes included), for metrics.
    public var fetchCount: Int { state.withLock { $0.fetches } }
    /// Token requests that failed.
    public var failureCount: Int { state.withLock { $0.failures } }

    /// A valid token of `credential`, from `fetch` if there is none (the transport's request
    /// to its service's token endpoint).
    public func token(for credential: ChannelCredential, fetch: @escaping Fetch) async -> Result<
        AccessToken, AccessTokenFailure
    > {
        let key = Key(credentialID: credential.id, clientID: credential.clientID)
        let now = clock.now
        enum Next {
            case use(AccessToken, refresh: Bool)
            case wait
            case fetch
        }
        let next = state.withLock { state -> Next in
            var entry = state.entries[key, default: Entry()]
            defer { state.entries[key] = entry }
            if let token = entry.token, token.expires > now {
                guard now >= entry.refreshAt, !entry.fetching else { return .use(token, refresh: false) }
                entry.fetching = true
                return .use(token, refresh: true)
            }
            if entry.fetching { return .wait }
            entry.fetching = true
            return .fetch
        }
        switch next {
        case .use(let token, let refresh):
            if refresh { Task { _ = await self.refresh(key, credential, fetch) } }
            return .success(token)
        case .fetch:
            return await refresh(key, credential, fetch)
        case .wait:
            return await withCheckedContinuation { continuation in
                let answered = state.withLock { state -> AccessToken? in
                    // The fetch may have finished between the two locks.
                    if let entry = state.entries[key], !entry.fetching, let token = entry.token {
                        return token
                    }
                    state.entries[key, default: Entry()].waiters.append(continuation)
                    return nil
                }
                if let answered { continuation.resume(returning: .success(answered)) }
            }
        }
    }

    /// The service refused `token` (401): forget it, so the next send fetches a new one. A
    /// token already replaced is left alone.
    public func invalidate(_ token: AccessToken, of credential: ChannelCredential) {
        let key = Key(credentialID: credential.id, clientID: credential.clientID)
        state.withLock { state in
            guard state.entries[key]?.token == token else { return }
            state.entries[key]?.token = nil
        }
    }

    private func refresh(_ key: Key, _ credential: ChannelCredential, _ fetch: Fetch) async -> Result<
        AccessToken, AccessTokenFailure
    > {
        let issuedAt = clock.now
        let result = await fetch(credential)
        let waiters = state.withLock { state -> [CheckedContinuation<Result<AccessToken, AccessTokenFailure>, Never>] in
            var entry = state.entries[key, default: Entry()]
            entry.fetching = false
            switch result {
            case .success(let token):
                state.fetches += 1
                let lifetime = token.expires.timeIntervalSince(issuedAt)
                entry.token = token
                entry.refreshAt = issuedAt.addingTimeInterval(max(lifetime * 0.9, lifetime - 300))
            case .failure:
                state.failures += 1
                // A token still valid keeps serving; the next send past refreshAt tries again.
                if let token = entry.token, token.expires <= clock.now { entry.token = nil }
            }
            let waiting = entry.waiters
            entry.waiters = []
            state.entries[key] = entry
            return waiting
        }
        for waiter in waiters { waiter.resume(returning: result) }
        return result
    }
}
