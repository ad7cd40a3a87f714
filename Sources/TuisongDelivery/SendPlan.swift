import TuisongCore

/// An audience entry's result decided without a transport's answer, or with one.
enum EntryResult: Sendable {
    case outcome(SendOutcome)
    case skipped(String)
}

/// How a page's devices go out: the devices to send to, in audience order, each with its own
/// content where a policy decided content other than the message's, and the entries decided
/// without sending (skipped by the audience or the policy), also in audience order. Sent in
/// audience order whatever their routes (the router and the transports split a batch by channel,
/// environment and credential), so what a halted run launched is always a prefix of its page and
/// its outcomes can be committed exactly. Size limits are each transport's to check, on its own
/// rendering.
struct SendPlan: Sendable {
    var entries: [AudienceEntry] = []
    /// Per entry, only when the page was decided by a policy: its own content when it differs
    /// from the message's, else nil.
    var contents: [SharedContent?] = []
    var hasOwnContents = false
    var unsent: [(entry: AudienceEntry, result: EntryResult)] = []

    /// Plans `entries`. `decisions` (nil: no policy, everyone gets `messageContent`) holds one
    /// decision per entry that is not already skipped, in order.
    static func make(
        entries: [AudienceEntry], decisions: [DeliveryDecision]?, messageContent: PushContent
    ) -> SendPlan {
        var plan = SendPlan()
        plan.entries.reserveCapacity(entries.count)
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
            plan.entries.append(entry)
            if decisions != nil {
                plan.contents.append(own)
                if own != nil { plan.hasOwnContents = true }
            }
        }
        return plan
    }

    /// How many unsent entries come before `position` (they are in audience order).
    func unsentCount(before position: Int64) -> Int {
        var low = 0
        var high = unsent.count
        while low < high {
            let middle = (low + high) / 2
            if unsent[middle].entry.position < position { low = middle + 1 } else { high = middle }
        }
        return low
    }
}
