import TuisongCore

/// The transport the engine sends through: each push goes to its channel's transport, each
/// transport seeing only its own pushes, and the reports come back
/// under the batch's own indices. A batch of one channel — nearly every batch, since a page is
/// grouped by route — is handed over as it is, with no copy.
public struct ChannelRouter: PushTransport {
    private let transports: [PushChannel: any PushTransport]

    public init(_ transports: [PushChannel: any PushTransport]) {
        self.transports = transports
    }

    /// The channels this router can reach.
    public var channels: Set<PushChannel> { Set(transports.keys) }

    public func send(_ batch: PushBatch, report: @escaping @Sendable ([SendReport]) -> Void) async {
        guard let first = batch.pushes.first?.channel else { return }
        if batch.pushes.allSatisfy({ $0.channel == first }) {
            await send(batch, on: first, report: report)
            return
        }
        var indicesByChannel: [PushChannel: [Int]] = [:]
        for (index, push) in batch.pushes.enumerated() {
            indicesByChannel[push.channel, default: []].append(index)
        }
        for (channel, indices) in indicesByChannel {
            let part = PushBatch(app: batch.app, pushes: indices.map { batch.pushes[$0] })
            await send(part, on: channel) { reports in
                report(reports.map { SendReport(index: indices[$0.index], outcome: $0.outcome) })
            }
        }
    }

    public func prepare(app: App, environment: PushEnvironment?) async {
        for transport in transports.values {
            await transport.prepare(app: app, environment: environment)
        }
    }

    /// Every transport's check: a message may reach devices of any channel.
    public func check(_ content: PushContent, options: PushOptions) throws {
        for transport in transports.values { try transport.check(content, options: options) }
    }

    private func send(
        _ batch: PushBatch, on channel: PushChannel, report: @escaping @Sendable ([SendReport]) -> Void
    ) async {
        guard let transport = transports[channel] else {
            report(batch.pushes.indices.map { SendReport(index: $0, outcome: .failed(.channelNotConfigured)) })
            return
        }
        await transport.send(batch, report: report)
    }
}
