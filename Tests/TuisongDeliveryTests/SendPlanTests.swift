import Testing
import TuisongAPNs
import TuisongCore

@testable import TuisongDelivery

/// The plan of a page (order, content, unsent entries), without an engine.
@Suite struct SendPlanTests {
    static let message = PushContent(body: "hi")

    func entry(
        _ position: Int64, _ environment: PushEnvironment = .production, selector: String? = nil,
        skip: String? = nil
    ) -> AudienceEntry {
        AudienceEntry(
            position: position, deviceID: position, token: "t\(position)", environment: environment,
            skipReason: skip, credentialSelector: selector, channel: .apns)
    }

    /// Routes do not reorder a page: a run halted mid-page then launched exactly a prefix.
    @Test func withoutAPolicyEveryDeviceGoesInAudienceOrderWhateverItsRoute() {
        let entries = [
            entry(1), entry(2, .sandbox), entry(3, selector: "a"), entry(4, skip: "invalidated"), entry(5, .sandbox),
        ]
        let plan = SendPlan.make(entries: entries, decisions: nil, messageContent: Self.message)
        #expect(plan.entries.map(\.position) == [1, 2, 3, 5])
        #expect(plan.entries.map(\.environment) == [.production, .sandbox, .production, .sandbox])
        #expect(plan.entries.map(\.credentialSelector) == [nil, nil, "a", nil])
        #expect(plan.contents.isEmpty && !plan.hasOwnContents)
        #expect(plan.unsent.map(\.entry.position) == [4])
        guard case .skipped("invalidated") = plan.unsent[0].result else {
            Issue.record("the audience's skip is kept: \(plan.unsent[0].result)")
            return
        }
    }

    @Test func unsentEntriesAreCountedUpToAPosition() {
        let entries = [entry(1, skip: "x"), entry(2), entry(3, skip: "x"), entry(4, skip: "x"), entry(6)]
        let plan = SendPlan.make(entries: entries, decisions: nil, messageContent: Self.message)
        #expect(plan.unsentCount(before: 1) == 0)
        #expect(plan.unsentCount(before: 2) == 1)
        #expect(plan.unsentCount(before: 6) == 3)
        #expect(plan.unsentCount(before: 100) == 3)
        #expect(SendPlan.make(entries: [], decisions: nil, messageContent: Self.message).unsentCount(before: 5) == 0)
    }

    @Test func decisionsSkipOrSendOwnContentSharedWhileEqual() {
        // Entry 2 is skipped by the audience and so has no decision.
        let entries = [entry(1), entry(2, skip: "unknown_device"), entry(3), entry(4), entry(5), entry(6)]
        let own = PushContent(badge: 3)
        let decisions: [DeliveryDecision] = [
            .send, .skip(reason: "dnd"), .sendContent(own), .sendContent(Self.message), .sendContent(own),
        ]
        let plan = SendPlan.make(entries: entries, decisions: decisions, messageContent: Self.message)
        #expect(plan.entries.map(\.position) == [1, 4, 5, 6])
        // Content equal to the message's is not kept per device; equal own contents share one
        // instance (and so one rendering per transport).
        #expect(plan.contents.map { $0?.content } == [nil, own, nil, own])
        #expect(plan.contents[1] === plan.contents[3])
        #expect(plan.hasOwnContents)
        #expect(plan.unsent.map(\.entry.position) == [2, 3])
    }

    @Test func aPolicyThatSendsTheMessageAsItIsKeepsNoContent() {
        let entries = [entry(1), entry(2)]
        let plan = SendPlan.make(
            entries: entries, decisions: [.send, .sendContent(Self.message)], messageContent: Self.message)
        #expect(plan.contents.map { $0?.content } == [nil, nil])
        #expect(!plan.hasOwnContents)
    }
}

/// Stored reason strings and the typed ones, both ways.
@Suite struct SendReasonTests {
    @Test func everyReasonRoundTripsThroughItsString() {
        let reasons: [SendReason] =
            [
                .noCredential, .noCredentialForSelector, .credentialLookupFailed, .credentialUnusable,
                .credentialFailing, .payloadTooLarge, .messageGone, .transport("connect_failed"), .unsupportedContent,
                .service("SomethingNew"), .service("UNREGISTERED"), .service("80300007"),
            ] + APNsReasonSample.all
        for reason in reasons {
            #expect(SendReason(reason.description) == reason, "\(reason)")
        }
    }

    @Test func storedStringsKeepTheirMeaning() {
        #expect(SendReason("Unregistered") == .service("Unregistered"))
        // Older builds' CamelCase spellings of the gateway's own reasons read as today's.
        #expect(SendReason("NoCredential") == .noCredential)
        #expect(SendReason("NoCredential").description == "no_credential")
        #expect(SendReason("CredentialFailing").description == "credential_failing")
        #expect(SendReason("ChannelNotConfigured") == .channelNotConfigured)
        #expect(SendReason("TransportTimedOut") == .transport("timed_out"))
        #expect(SendReason("TransportTimedOut").description == "transport_timed_out")
        #expect(SendReason("Transport") == .service("Transport"))
        #expect(SendReason("NewAppleReason") == .service("NewAppleReason"))
    }

    @Test func theGatewaysOwnReasonsAreSnakeCaseAndTheServicesVerbatim() {
        #expect(SendReason.transport("ConnectFailed").description == "transport_connect_failed")
        #expect(SendReason.transport("TLS").description == "transport_tls")
        #expect(SendReason.payloadTooLarge.description == "payload_too_large")
        #expect(SendReason.service(APNsReason.badDeviceToken.description).description == "BadDeviceToken")
        #expect(SendReason.service("UNREGISTERED").description == "UNREGISTERED")
        #expect(SendReason.service("80300007").description == "80300007")
    }
}

enum APNsReasonSample {
    /// APNs's known reasons but the one the gateway also names (`PayloadTooLarge` parses as
    /// the gateway's own).
    static let all: [SendReason] = APNsReason.known.filter { $0 != .payloadTooLarge }.map { .service($0.description) }
}
