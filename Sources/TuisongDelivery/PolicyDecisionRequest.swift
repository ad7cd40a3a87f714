import TuisongCore

/// A page waiting for its vendor's policy in `DeliveryEngine.policyDecisions`.
struct PolicyDecisionRequest: Sendable {
    var vendor: String
    var policy: any DeliveryPolicy
    var page: PolicyPage

    /// Each vendor's pages of the batch in one `decide(pages:)` call (the vendors side by side
    /// when there are several); the answers in the requests' order.
    static func decide(_ requests: [PolicyDecisionRequest]) async -> [Result<[DeliveryDecision], any Error>] {
        var byVendor: [String: [Int]] = [:]
        for (index, request) in requests.enumerated() { byVendor[request.vendor, default: []].append(index) }
        if byVendor.count == 1 { return await requests[0].policy.decide(pages: requests.map(\.page)) }
        // A task per vendor, awaited in turn (see `DeliveryPolicy.decide(pages:)`'s default on
        // task groups answering indexes).
        let groups = byVendor.values.map { indexes in
            let policy = requests[indexes[0]].policy
            let pages = indexes.map { requests[$0].page }
            return (indexes, Task { await policy.decide(pages: pages) })
        }
        var results = [Result<[DeliveryDecision], any Error>](
            repeating: .failure(CancellationError()), count: requests.count)
        for (indexes, task) in groups {
            let answers = await task.value
            guard answers.count == indexes.count else {
                let error = WrongNumberOfPageAnswers(vendor: requests[indexes[0]].vendor)
                for index in indexes { results[index] = .failure(error) }
                continue
            }
            for (index, answer) in zip(indexes, answers) { results[index] = answer }
        }
        return results
    }
}

/// A policy answered a batch of pages with more or fewer results than pages.
struct WrongNumberOfPageAnswers: Error, CustomStringConvertible {
    var vendor: String
    var description: String { "the \(vendor) policy answered the wrong number of pages" }
}
