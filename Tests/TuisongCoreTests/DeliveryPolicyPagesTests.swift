import Foundation
import Testing
import TuisongCore

/// `DeliveryPolicy.decide(pages:)`'s default: each page decided by `decide(_:message:)`, side
/// by side, its answer (or error) in the page's place.
@Suite struct DeliveryPolicyPagesTests {
    struct EchoPolicy: DeliveryPolicy {
        func decide(_ recipients: [Recipient], message: MessageRecord) async throws -> [DeliveryDecision] {
            if message.id == 2 { throw StoreError(.unavailable, "page two fails") }
            // Later pages answer sooner: the answers still come back in the pages' order.
            try await Task.sleep(for: .milliseconds(10 * (5 - message.id)))
            return recipients.map { .sendContent(PushContent(body: "\(message.id):\($0.token)")) }
        }
    }

    func message(_ id: Int64) -> MessageRecord {
        MessageRecord(
            id: id, appID: 1, vendor: "test", vendorMessageID: nil, audience: .tokens(["t"]), content: PushContent(),
            options: PushOptions(), state: .sending, sendAt: nil, labels: [:], createdAt: Date(), startedAt: nil,
            completedAt: nil, total: nil, cursor: 0, counts: DeliveryCounts(), failures: [:])
    }

    func recipient(_ token: String) -> Recipient {
        Recipient(deviceID: nil, token: token, environment: .production, channel: PushChannel("apns"))
    }

    @Test func eachPageIsDecidedAloneAndAnsweredInItsPlace() async throws {
        let pages = (1...4).map { n in
            PolicyPage(recipients: [recipient("a\(n)"), recipient("b\(n)")], message: message(Int64(n)))
        }
        let answers = await EchoPolicy().decide(pages: pages)
        #expect(answers.count == 4)
        for (n, answer) in answers.enumerated() where n != 1 {
            #expect(
                try answer.get() == [
                    .sendContent(PushContent(body: "\(n + 1):a\(n + 1)")),
                    .sendContent(PushContent(body: "\(n + 1):b\(n + 1)")),
                ])
        }
        #expect(throws: StoreError.self) { try answers[1].get() }
        let one = await EchoPolicy().decide(pages: [pages[0]])
        #expect(try one[0].get().count == 2)
    }
}
