// swift-format-ignore-file
import Foundation
import TuisongCore

// TRANSITIONAL, while the PostgreSQL store is being written in parallel: every requirement of
// `GatewayStore` not implemented yet, each failing `unavailable`. Whoever implements a group
// deletes its lines here (and only those). This file must be empty and gone before #21 closes.

private func pending(_ what: String = #function) -> StoreError {
    StoreError(.unavailable, "PostgreSQL store: \(what) is not implemented yet")
}

extension PostgresStore: GatewayStore {
    // MARK: group D — apps, devices, tags, settings, APNs and channel credentials, templates

    // MARK: group A — accounts, badges, console queries, audience pages, delivery listings




    // MARK: group P — the database as plugins see it


}
