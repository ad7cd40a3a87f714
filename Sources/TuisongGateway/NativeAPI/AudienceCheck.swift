import TuisongCore

/// What the native API's `audience_empty` warning and the console's "no device matched" say:
/// a push accepted that is known, at acceptance, to reach no device.
enum AudienceCheck {
    /// Whether the push is known, now, to reach no device: a tag no valid device carries
    /// (`VIP` for `vip`), an app without devices, a list none of whose entries can be sent. An
    /// explicit token of the channel a token names by its shape is sent registered or not, so a list holding one is never empty.
    /// One read with a small `LIMIT`: a query audience's first device of the push's environment,
    /// or a list's page as the run itself reads it first; lists longer than `maxCheckedList`
    /// are not checked (said empty only when known).
    static func isEmpty(_ job: PushJob, store: any MessageStore) async throws -> Bool {
        let limit: Int
        switch job.audience {
        case .tag, .all, .allAccounts, .accounts, .tagSelection:
            // Is one valid device of the push's environment there? (A page's first entry may be
            // one of the other environment, skipped, with many to send after it.)
            if case .accounts(let accounts) = job.audience, accounts.isEmpty { return true }
            return try await store.audienceCount(
                appID: job.appID, audience: job.audience, environment: job.options.environment, upTo: 1) == 0
        case .devices(let ids):
            guard ids.count <= maxCheckedList else { return false }
            limit = ids.count
        case .tokens(let tokens):
            guard tokens.count <= maxCheckedList, !tokens.contains(where: { DeviceToken($0) != nil }) else {
                return false
            }
            limit = tokens.count
        }
        let entries = try await store.audiencePage(
            appID: job.appID, audience: job.audience, environment: job.options.environment, after: 0, limit: limit)
        return entries.allSatisfy { $0.skipReason != nil }
    }

    static let maxCheckedList = 1000
}
