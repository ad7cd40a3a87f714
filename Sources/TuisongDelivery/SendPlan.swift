import TuisongCore

/// An audience entry's result decided without a transport's answer, or with one.
enum EntryResult: Sendable {
    case outcome(SendOutcome)
    case skipped(String)
}

/// How a page's devices go out: grouped by route (channel, environment and credential selector, in
/// order of first appearance), each with its own content where a policy decided content other
/// than the message's, and the entries decided without sending (skipped by the audience or the
/// policy). Size limits are each transport's to check, on its own rendering.
struct SendPlan: Sendable {
    /// Devices of one route reach their service through one credential.
    struct Route: Hashable, Sendable {
        var environment: PushEnvironment
        var selector: String?
        var channel: PushChannel
    }

    struct Group: Sendable {
        var route: Route
        var entries: [AudienceEntry] = []
        /// Per entry, only when the page was decided by a policy: its own content when it
        /// differs from the message's, else nil.
        var contents: [SharedContent?] = []
        var hasOwnContents = false
    }

    var groups: [Group] = []
    var unsent: [(entry: AudienceEntry, result: EntryResult)] = []

    /// Plans `entries`. `decisions` (nil: no policy, everyone gets `messageContent`) holds one
    /// decision per entry that is not already skipped, in order.
    static func make(
        entries: [AudienceEntry], decisions: [DeliveryDecision]?, messageContent: PushContent
    ) -> SendPlan {
        var plan = SendPlan()
        // Usually one group (one environment, no selector): found by comparing with the
        // previous entry's, not by hashing every entry.
        var slot = -1
        var decisionIndex = 0
        var lastOwn: SharedContent?
        for entry in entries {
            if let reason = entry.skipReason {
                plan.unsent.append((entry, .skipped(reason)))
                continue
            }
            var own: SharedContent?
            if let decisions {
                let decision = decisions[decisionIndex]
                decisionIndex += 1
                switch decision {
                case .send:
                    break
                case .skip(let reason):
                    plan.unsent.append((entry, .skipped(reason)))
                    continue
                case .sendContent(let content):
                    // Kept only when it differs: the message's own content needs no copy per row.
                    // Consecutive equal contents share one (and so one rendering).
                    if content != messageContent {
                        own = lastOwn?.content == content ? lastOwn : SharedContent(content)
                        lastOwn = own
                    }
                }
            }
            let route = Route(
                environment: entry.environment, selector: entry.credentialSelector, channel: entry.channel)
            if slot < 0 || plan.groups[slot].route != route {
                if let found = plan.groups.firstIndex(where: { $0.route == route }) {
                    slot = found
                } else {
                    plan.groups.append(Group(route: route))
                    slot = plan.groups.count - 1
                }
            }
            plan.groups[slot].entries.append(entry)
            if decisions != nil {
                plan.groups[slot].contents.append(own)
                if own != nil { plan.groups[slot].hasOwnContents = true }
            }
        }
        return plan
    }
}
